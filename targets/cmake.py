"""CMake projects for the generated Kokkos and CUDA code of one workflow.

These files are the build recipe of record: users build the generated code with them and
validation builds every candidate with them too (``validation.builds``)."""

from __future__ import annotations

from collections.abc import Iterable

RELEASE_BY_DEFAULT = """if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release)
endif()"""


def library_name(workflow: str, target: str) -> str:
    """The CMake target (and ``lib<name>.so``) a project builds."""
    safe = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in workflow)
    return f"{safe}_{target}"


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

add_library({name} SHARED
{files}
)
if(Kokkos_INCLUDE_DIRS AND Kokkos_LIBRARIES)
  # Kokkos packaged with Trilinos (TriBITS): its package variables
  target_include_directories({name} PRIVATE ${{Kokkos_INCLUDE_DIRS}})
  target_link_libraries({name} PRIVATE ${{Kokkos_LIBRARIES}})
  if("OPENMP" IN_LIST Kokkos_DEVICES)
    find_package(OpenMP REQUIRED)
    target_link_libraries({name} PRIVATE OpenMP::OpenMP_CXX)
  endif()
else()
  target_link_libraries({name} PRIVATE Kokkos::kokkos)
endif()
"""


def cuda_cmake(workflow: str, sources: Iterable[str], arch: str = "90") -> str:
    """A shared library ``<workflow>_cuda`` from every generated .cu (``arch``: the
    default of ``CMAKE_CUDA_ARCHITECTURES``, real and virtual: SASS and PTX)."""
    name = library_name(workflow, "cuda")
    files = "\n".join(f"    {s}" for s in sorted(sources))
    return f"""cmake_minimum_required(VERSION 3.18)
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES {arch})
endif()
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
