"""A branch on an array value inside a host loop (reference BLAS's
``IF (X(JX).NE.ZERO)`` around the column update) becomes a guard inside the
nest the host loop launches: rendered for Kokkos (built, called through its
``kt_`` shim), CUDA (text) and Triton (interpreter), checked against numpy.
Columns whose x entry is zero hold NaN, so an unguarded update would show."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

from targets.base import get_renderer  # noqa: E402
from targets.triton_rows import row_nest  # noqa: E402
from tests import kt_hand_kernels as hk  # noqa: E402
from tests.kt_apart import call_apart  # noqa: E402
from tests.kt_builds import kokkos_library  # noqa: E402
from tests.kt_modules import triton_module  # noqa: E402
from translate.partition import DeviceNest, partition, walk_segments  # noqa: E402

HAVE_KOKKOS = Path("/usr/include/trilinos/Kokkos_Core.hpp").exists() and shutil.which("g++") is not None
M, N, LDA = 37, 29, 41
CASES = [(1, 0.7), (-2, 0.7), (3, -1.25)]


def problem(incx: int, alpha: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(a, x, y, the expected y): every third column's x entry is zero and that column NaN."""
    rng = np.random.default_rng(seed)
    a = np.asfortranarray(rng.normal(size=(LDA, N)))
    x = rng.normal(size=1 + (N - 1) * abs(incx))
    kx = 0 if incx > 0 else -(N - 1) * incx
    cols = kx + np.arange(N) * incx  # the x entry each column j uses
    zero = np.arange(N) % 3 == 1
    x[cols[zero]] = 0.0
    a[:, zero] = np.nan
    y = rng.normal(size=M)
    want = y + a[:M, ~zero] @ (alpha * x[cols[~zero]])
    return a, x, y, want


def test_renders_the_guard_in_every_target() -> None:
    k = hk.gemvn()
    kk = get_renderer("kokkos").render(k).source
    assert "RangePolicy<>(0, 1)" not in kk and "for (int j = 0; j < n; ++j) {" in kk
    assert "if (x(jx + j * incx - 1) != 0.0) {" in kk
    cu = get_renderer("cuda").render(k).source
    assert "<<<1, 1" not in cu and "if (x[jx + j * incx - 1] != 0.0) {" in cu
    tr = get_renderer("triton").render(k).source
    assert "for j in range(0, n):" in tr and "mask2 = mask & cond1" in tr
    (nest,) = [s for s in walk_segments(partition(k)) if isinstance(s, DeviceNest)]
    assert not row_nest(nest, k)  # the guarded body keeps the general tile path


@pytest.mark.slow
def test_kokkos_guarded_column_loop(tmp_path: Path) -> None:
    if not HAVE_KOKKOS:
        pytest.skip("Kokkos headers or g++ not found")
    lib = kokkos_library(get_renderer("kokkos").render(hk.gemvn()), tmp_path)
    for seed, (incx, alpha) in enumerate(CASES):
        a, x, y, want = problem(incx, alpha, seed)
        call_apart(lib, "kt_gemvn", M, N, alpha, a, LDA, x, incx, y)
        assert not np.isnan(y).any()
        np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)


def _triton_module(tmp_path: Path) -> ModuleType:
    return triton_module(get_renderer("triton").render(hk.gemvn()), tmp_path, f"kt_gemvn_{abs(hash(tmp_path))}")


def test_triton_guarded_column_loop(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    dev = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
    mod = _triton_module(tmp_path)
    for seed, (incx, alpha) in enumerate(CASES):
        a, x, y, want = problem(incx, alpha, seed)
        ty = torch.from_numpy(y.copy()).to(dev)
        mod.gemvn(M, N, alpha, torch.from_numpy(a.ravel(order="F").copy()).to(dev), LDA,
                  torch.from_numpy(x.copy()).to(dev), incx, ty, block=16)
        got = ty.cpu().numpy()
        assert not np.isnan(got).any()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
