"""A validation that checks nothing is an error, not "validated": sizes at which every loop
runs zero times, and declared shapes smaller than what the routine accesses (the reference
runs with guard zones after its arrays: a write there, or a result that changes with what
lies there, names the array)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from tests.validation_kernels import DAXPY, DDOT, FORTRAN, SCALE, v
from validation import toolchains
from validation.region import ReferenceSpec, ValidationPlan, validate_region

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (toolchains.gfortran().available and toolchains.f2py().available),
                       reason="needs gfortran and numpy.f2py (meson, ninja)"),
]


def _validate(kernel, ref, cache, tmp_path, sizes, values=None):  # noqa: ANN001, ANN202
    (tmp_path / "kokkos").mkdir(exist_ok=True)
    plan = ValidationPlan(sizes, values, trials=1, reference=ReferenceSpec([FORTRAN], ref))
    return validate_region(kernel, {"kokkos": tmp_path / "kokkos"}, plan, cache_dir=cache, workdir=cache / "work")


@pytest.mark.parametrize("n", [0, -5])
def test_sizes_at_which_nothing_runs_are_an_error(ref, cache, tmp_path: Path, n: int) -> None:  # noqa: ANN001
    for kernel in (SCALE, DDOT):
        res = _validate(kernel, ref, cache, tmp_path, {"n": n}, {"incx": 1, "incy": 1, "alpha": 2.0})
        tv = res.targets["kokkos"]
        assert tv.status == "failed" and tv.reason.startswith("nothing to validate: every loop of"), tv.reason
        assert f"n={n}" in tv.reason


def _shrunk(array: str):  # noqa: ANN202
    """DAXPY with ``array`` declared n long: too short for a stride of 2."""
    return dataclasses.replace(DAXPY, params=tuple(
        dataclasses.replace(p, shape=(v("n"),)) if p.name == array else p for p in DAXPY.params))


def test_a_write_past_a_declared_shape_is_an_error(ref, cache, tmp_path: Path) -> None:  # noqa: ANN001
    res = _validate(_shrunk("dy"), ref, cache, tmp_path, {"n": 40}, {"incx": 1, "incy": 2})
    tv = res.targets["kokkos"]
    assert tv.status == "failed" and not res.reference_ok
    assert "past the end of dy" in tv.reason or "dy changes with what lies past the end" in tv.reason, tv.reason


def test_a_read_past_a_declared_shape_is_an_error(ref, cache, tmp_path: Path) -> None:  # noqa: ANN001
    res = _validate(_shrunk("dx"), ref, cache, tmp_path, {"n": 40}, {"incx": 2, "incy": 1})
    tv = res.targets["kokkos"]
    assert tv.status == "failed" and not res.reference_ok
    assert "changes with what lies past the end of its arrays" in tv.reason, tv.reason


def test_right_shapes_still_run(ref, cache, tmp_path: Path) -> None:  # noqa: ANN001
    shutil.copytree(Path(__file__).parent / "validation_data" / "cand" / "good" / "kokkos", tmp_path / "kokkos")
    res = _validate(DAXPY, ref, cache, tmp_path, {"n": 40}, {"incx": 2, "incy": -1})
    assert res.reference_ok and res.targets["kokkos"].status in ("validated", "unsupported"), res.targets
