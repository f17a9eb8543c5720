"""A Kokkos installed with a GPU backend (``Kokkos_ROOT``): candidates are compiled with its
``nvcc_wrapper`` and run with the GPU visible in the sandbox, and where there is no GPU they
are reported as compiled, not run (the way CUDA candidates are)."""

from __future__ import annotations

from pathlib import Path

import pytest

from targets.base import TARGETS
from tests.kt_hand_kernels import daxpy
from validation import toolchains
from validation.builds import configure_args
from validation.runners import candidate_job


def fake_install(root: Path, backends: tuple[str, ...]) -> Path:
    """A Kokkos install as far as the tool looks at one: its configuration header, its core
    library and (for CUDA) its compiler wrapper."""
    (root / "include").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "bin").mkdir()
    (root / "include" / "KokkosCore_config.h").write_text(
        "".join(f"#define KOKKOS_ENABLE_{b}\n" for b in backends) + "#define KOKKOS_VERSION 40601\n")
    (root / "lib" / "libkokkoscore.so").write_bytes(b"")
    if "CUDA" in backends:
        (root / "bin" / "nvcc_wrapper").write_text("#!/bin/sh\n")
    return root


def test_a_cuda_install_brings_its_compiler_and_the_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("Kokkos_ROOT", str(fake_install(tmp_path / "cuda", ("SERIAL", "CUDA"))))
    info = toolchains.find_kokkos()
    assert info is not None and info.version == "4.6.1" and info.backends == ("Serial", "Cuda")
    assert info.device and info.cxx_compiler() == str(tmp_path / "cuda" / "bin" / "nvcc_wrapper")
    args = configure_args(TARGETS["kokkos"])
    assert f"-DKokkos_ROOT={tmp_path / 'cuda'}" in args
    assert f"-DCMAKE_CXX_COMPILER={tmp_path / 'cuda' / 'bin' / 'nvcc_wrapper'}" in args
    assert candidate_job("kokkos", tmp_path / "lib.so", daxpy(), gpu=True)["gpu"] is True


def test_a_host_install_keeps_the_system_compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("Kokkos_ROOT", str(fake_install(tmp_path / "omp", ("SERIAL", "OPENMP"))))
    info = toolchains.find_kokkos()
    assert info is not None and not info.device and info.cxx_compiler() is None
    assert not any(a.startswith("-DCMAKE_CXX_COMPILER") for a in configure_args(TARGETS["kokkos"]))
    assert candidate_job("kokkos", tmp_path / "lib.so", daxpy(), gpu=True)["gpu"] is False
