"""CMake projects for the generated Kokkos and CUDA code of one workflow."""

from __future__ import annotations

from collections.abc import Iterable


def _target(workflow: str, suffix: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in workflow)
    return f"{safe}_{suffix}"


def kokkos_cmake(workflow: str, sources: Iterable[str]) -> str:
    """A shared library ``<workflow>_kokkos`` from every generated .cpp;
    works with any backend the installed Kokkos was built with."""
    name = _target(workflow, "kokkos")
    files = "\n".join(f"    {s}" for s in sorted(sources))
    return f"""cmake_minimum_required(VERSION 3.16)
project({name} LANGUAGES CXX)

set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)

find_package(Kokkos REQUIRED)

add_library({name} SHARED
{files}
)
target_link_libraries({name} PRIVATE Kokkos::kokkos)
"""


def cuda_cmake(workflow: str, sources: Iterable[str], arch: str = "90") -> str:
    """A shared library ``<workflow>_cuda`` from every generated .cu."""
    name = _target(workflow, "cuda")
    files = "\n".join(f"    {s}" for s in sorted(sources))
    return f"""cmake_minimum_required(VERSION 3.18)
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES {arch})
endif()
project({name} LANGUAGES CXX CUDA)

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
