"""targets.splits (CUDA and Triton): a short parallel loop around a serial loop that
accumulates into one element per thread (DGEMV 'N' after the interchange) splits the
serial loop over blocks, each chunk's sum added atomically; anything else keeps the
plain kernel."""

from __future__ import annotations

import ctypes
import shutil
from pathlib import Path

import numpy as np
import pytest

from targets.base import get_renderer
from tests import kt_hand_kernels as hk
from tests.gpu import cuda_library, has_gpu
from tests.kt_hand_kernels import GEMV_N
from translate import ir
from translate.analysis import analyze
from translate.schedule import Schedule

# already a parallel loop around the serial one; {body} is the serial loop's body
ROWS = """
subroutine rowacc(m, n, a, y)
  integer, intent(in) :: m, n
  double precision, intent(in) :: a(m, n)
  double precision, intent(inout) :: y(m)
  integer :: i, j
  do i = 1, m
    do j = 1, n
      {body}
    end do
  end do
end subroutine
"""


def kernel(src: str) -> ir.Kernel:
    """Through the Fortran frontend and the analysis (the GPU machine has no fparser: the
    numeric tests below use the hand-built ``hk.gemv_rows``, the same loops after the interchange)."""
    pytest.importorskip("fparser")
    from parsers.fortran import parse_source

    (k,) = parse_source(src, "g.f90", fixed_form=False).kernels
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    return analyze(k)


def cuda(k: ir.Kernel, sch: Schedule | None = None) -> str:
    sch = sch or Schedule()
    return get_renderer("cuda", sch).render(k, sch).source


def test_gemv_n_splits_the_column_loop() -> None:
    src = cuda(kernel(GEMV_N))
    assert "the serial j loop split when i is short" in src
    assert "part += temp * a[i + a_n0 * j];" in src and "atomicAdd(&y[i], part);" in src
    assert "for (int j = first; j < last; ++j)" in src
    plain = cuda(kernel(GEMV_N), Schedule(split_serial=False))
    assert "atomicAdd" not in plain and "y[i] = y[i] + temp * a[i + a_n0 * j];" in plain


@pytest.mark.parametrize(("why", "body"), [
    ("a product, not a sum", "y(i) = y(i)*a(i, j)"),
    ("the element read is not the one written", "y(i) = y(m + 1 - i) + a(i, j)"),
])
def test_not_split(why: str, body: str) -> None:
    src = cuda(kernel(ROWS.format(body=body)))
    assert "atomicAdd" not in src, why


def test_split_sum_of_a_row() -> None:
    src = cuda(kernel(ROWS.format(body="y(i) = y(i) + a(i, j)")))
    assert "part += a[i + a_n0 * j];" in src


@pytest.mark.slow
@pytest.mark.gpu
def test_split_numbers_on_gpu(tmp_path: Path) -> None:
    """Short and long row counts (many chunks, one chunk) against numpy."""
    if shutil.which("nvcc") is None or not has_gpu():
        pytest.skip("needs nvcc and a CUDA GPU")
    rendered = get_renderer("cuda").render(hk.gemv_rows())
    assert "atomicAdd(&y[i], part);" in rendered.source
    lib = cuda_library(rendered, tmp_path)
    f = ctypes.CDLL(str(lib)).kt_gemvn
    i, d, p = ctypes.c_int, ctypes.c_double, ctypes.c_void_p
    f.argtypes = [i, i, d, p, p, p]
    rng = np.random.default_rng(3)
    for m, n in ((40, 3000), (5000, 7), (1, 100)):
        a = np.asfortranarray(rng.normal(size=(m, n)))
        x, y = rng.normal(size=n), rng.normal(size=m)
        want = y + 0.5 * a @ x
        f(m, n, 0.5, a.ctypes.data, x.ctypes.data, y.ctypes.data)
        np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("m", "n"), [(40, 3000), (300, 7), (1, 100), (5, 0)])
def test_triton_split_numbers(m: int, n: int, tmp_path: Path) -> None:
    """The Triton form (chunks along grid axis 1, tl.atomic_add) against numpy; in the
    interpreter on a machine without a GPU."""
    import importlib.util

    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    rendered = get_renderer("triton").render(hk.gemv_rows())
    assert "tl.atomic_add(y + i, part, mask=mask)" in rendered.source and "CHUNK=chunk" in rendered.source
    assert "BLOCK=block, num_warps=8)" in rendered.source  # split loops: 8 warps (targets.triton.default_warps)
    path = tmp_path / "gemvn_triton.py"
    path.write_text(rendered.source)
    spec = importlib.util.spec_from_file_location(f"kt_split_{m}_{n}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    rng = np.random.default_rng(4)
    a = np.asfortranarray(rng.normal(size=(m, n)))
    x, y = rng.normal(size=max(n, 1)), rng.normal(size=m)
    want = y + 0.5 * (a @ x[:n])
    y_t = torch.from_numpy(y.copy()).to(dev)
    mod.gemvn(m, n, 0.5, torch.from_numpy(a.ravel(order="F").copy()).to(dev), torch.from_numpy(x).to(dev), y_t)
    np.testing.assert_allclose(y_t.cpu().numpy(), want, rtol=1e-12, atol=1e-12)
