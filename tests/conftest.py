"""Triton picks interpreter or compiled mode when it is first imported: on a machine
without an NVIDIA GPU every test runs it in the interpreter, whichever test module
imports it first. ``TRITON_INTERPRET`` given by the caller wins (``scripts/gpu-check``).

``cache`` and ``ref``: a module's build cache and the reference build of
``tests/validation_data/kernels.f`` (the validation tests' routines)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.validation_kernels import ALL, FORTRAN
from validation import runners

if "TRITON_INTERPRET" not in os.environ and not Path("/dev/nvidiactl").exists():
    os.environ["TRITON_INTERPRET"] = "1"



@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kt-cache")


@pytest.fixture(scope="module")
def ref(cache: Path) -> runners.ReferenceBuild:
    build = runners.build_reference([FORTRAN], ALL, cache / "work", cache_dir=cache)
    assert build.ok, build.reason + build.log
    return build
