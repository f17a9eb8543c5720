"""CMake projects for the generated Kokkos and CUDA code of one workflow.

These files are the build recipe of record: users build the generated code with them and
validation builds every candidate with them too (``validation.builds``)."""

from __future__ import annotations

from collections.abc import Iterable

RELEASE_BY_DEFAULT = """if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release)
endif()"""



def cuda_architectures(arch: str = "90", indent: str = "") -> str:
    """``CMAKE_CUDA_ARCHITECTURES`` unless the user gave it (real and virtual: SASS and PTX)."""
    return "\n".join(f"{indent}{line}" for line in (
        "if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)", f"  set(CMAKE_CUDA_ARCHITECTURES {arch})", "endif()"))


def cmake_name(workflow: str) -> str:
    """``workflow`` as a CMake target name."""
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in workflow)


def library_name(workflow: str, target: str) -> str:
    """The CMake target (and ``lib<name>.so``) a project builds."""
    return f"{cmake_name(workflow)}_{target}"


def kokkos_link(name: str, indent: str = "") -> str:
    """``name`` (a CMake target, or a variable holding one) linked with Kokkos: through the
    package variables of a Kokkos packaged with Trilinos (TriBITS, Debian's
    libtrilinos-kokkos-dev, whose ``Kokkos::kokkos`` can name an include folder that does not
    exist), else through ``Kokkos::kokkos``."""
    lines = [
        "if(Kokkos_INCLUDE_DIRS AND Kokkos_LIBRARIES)",
        "  # Kokkos packaged with Trilinos (TriBITS): its package variables",
        f"  target_include_directories({name} PRIVATE ${{Kokkos_INCLUDE_DIRS}})",
        f"  target_link_libraries({name} PRIVATE ${{Kokkos_LIBRARIES}})",
        '  if("OPENMP" IN_LIST Kokkos_DEVICES)',
        "    find_package(OpenMP REQUIRED)",
        f"    target_link_libraries({name} PRIVATE OpenMP::OpenMP_CXX)",
        "  endif()",
        "else()",
        f"  target_link_libraries({name} PRIVATE Kokkos::kokkos)",
        "endif()",
    ]
    return "\n".join(f"{indent}{line}" for line in lines)


def kokkos_cmake(workflow: str, sources: Iterable[str]) -> str:
    """A shared library ``<workflow>_kokkos`` from every generated .cpp; works with any
    backend the installed Kokkos was built with (``-DKokkos_ROOT=...`` picks the install).
    A Kokkos installed as part of Trilinos (TriBITS packaging, Debian's
    libtrilinos-kokkos-dev) is used through its package variables: its ``Kokkos::kokkos``
    target can name an include folder that does not exist."""
    name = library_name(workflow, "kokkos")
    files = "\n".join(f"    {s}" for s in sorted(sources))
    return f"""cmake_minimum_required(VERSION 3.16)
project({name} LANGUAGES CXX)
{RELEASE_BY_DEFAULT}

set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)

find_package(Kokkos REQUIRED)

# a shared library by default; -DBUILD_SHARED_LIBS=OFF makes a static one, for a Kokkos built
# as static libraries without position-independent code (Kokkos' own default)
if(NOT DEFINED BUILD_SHARED_LIBS)
  set(BUILD_SHARED_LIBS ON)
endif()
add_library({name}
{files}
)
{kokkos_link(name)}
"""


def cuda_cmake(workflow: str, sources: Iterable[str], arch: str = "90") -> str:
    """A shared library ``<workflow>_cuda`` from every generated .cu (``arch``: the
    default of ``CMAKE_CUDA_ARCHITECTURES``, real and virtual: SASS and PTX)."""
    name = library_name(workflow, "cuda")
    files = "\n".join(f"    {s}" for s in sorted(sources))
    return f"""cmake_minimum_required(VERSION 3.18)
{cuda_architectures(arch)}
project({name} LANGUAGES CXX CUDA)
{RELEASE_BY_DEFAULT}

set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)

find_package(CUDAToolkit REQUIRED)

add_library({name} SHARED
{files}
)
target_link_libraries({name} PRIVATE CUDA::cudart)
"""


def program_cmake(program: str, original: Iterable[str], migrated: dict[str, dict[str, str]],
                  translations: dict[str, Iterable[str]], fflags: Iterable[str] = (), cflags: Iterable[str] = (),
                  include: Iterable[str] = (), defines: dict[str, str] | None = None,
                  libraries: Iterable[str] = ()) -> str:
    """A project building the original program (``<program>_original``) and, per target, the
    migrated one (``<program>_<target>``): the original's sources with each file in
    ``migrated[target]`` (original path -> replacement path) swapped in, plus the target's
    translations (``translations[target]``: generated sources and Fortran interfaces).
    ``KT_KOKKOS`` (on by default) and ``KT_CUDA`` (off) choose the targets built."""
    files = sorted(original)
    defs = " ".join(f"{k}={v}" for k, v in sorted((defines or {}).items()))
    common = []
    if include:
        common.append(f"  target_include_directories(${{exe}} PRIVATE {' '.join(include)})")
    if defs:
        common.append(f"  target_compile_definitions(${{exe}} PRIVATE {defs})")
    if fflags:
        common.append(f"  target_compile_options(${{exe}} PRIVATE $<$<COMPILE_LANGUAGE:Fortran>:{';'.join(fflags)}>)")
    if cflags:
        common.append(f"  target_compile_options(${{exe}} PRIVATE $<$<COMPILE_LANGUAGE:C>:{';'.join(cflags)}>)")
    if libraries:
        common.append(f"  target_link_libraries(${{exe}} PRIVATE {' '.join(libraries)})")
    common.append("  set_target_properties(${exe} PROPERTIES Fortran_MODULE_DIRECTORY "
                  "${CMAKE_CURRENT_BINARY_DIR}/modules/${exe})")
    parts = [f"""cmake_minimum_required(VERSION 3.18)
project({program}_program LANGUAGES Fortran C CXX)
{RELEASE_BY_DEFAULT}

option(KT_KOKKOS "build the program with its Kokkos translations" ON)
option(KT_CUDA "build the program with its CUDA translations" OFF)
set(CMAKE_CXX_STANDARD 17)

# the original program's sources
set(ORIGINAL
{chr(10).join(f"    {f}" for f in files)}
)

# what every build of the program shares: its include folders, defines, flags and libraries
function(kt_program_settings exe)
{chr(10).join(common)}
endfunction()

add_executable({program}_original ${{ORIGINAL}})
kt_program_settings({program}_original)
"""]
    for target, option in (("kokkos", "KT_KOKKOS"), ("cuda", "KT_CUDA")):
        if target not in migrated:
            continue
        swap = migrated[target]
        sources = [swap.get(f, f) for f in files] + sorted(translations.get(target, ()))
        exe = f"{program}_{target}"
        listed = "\n".join(f"    {s}" for s in sources)
        if target == "kokkos":
            link = f"  find_package(Kokkos REQUIRED)\n  add_executable({exe}\n{listed}\n  )\n{kokkos_link(exe, '  ')}"
        else:
            link = (f"{cuda_architectures(indent='  ')}\n"
                    f"  enable_language(CUDA)\n  find_package(CUDAToolkit REQUIRED)\n"
                    f"  add_executable({exe}\n{listed}\n  )\n"
                    f"  # the static runtime: the executable runs where only the driver is installed\n"
                    f"  target_link_libraries({exe} PRIVATE CUDA::cudart_static)")
        parts.append(f"""
# the program with its {target} translations in place of the routines they replace
if({option})
{link}
  kt_program_settings({exe})
endif()
""")
    return "".join(parts)
