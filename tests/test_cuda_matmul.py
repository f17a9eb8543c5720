"""The generated CUDA matrix product (``targets.cuda_matmul``) built as a shared library with
nvcc and, on a GPU, checked against torch over operand layouts that take each of its copy paths:
row-major A and B (computed as C^T = B^T A^T), B read along k with 16-byte copies (even leading
dimension) and without (odd), A read along m or k, batches, and sizes that cut every tile short."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from targets.cuda_matmul import cuda_matmul_source
from tests.gpu import has_gpu

HEAD = r"""#include <cstdio>
#include <type_traits>
#include <cuda_runtime.h>
#define KT_CUDA_CHECK(call) do { const cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); return e_; } } while (0)
"""
ENTRY = r"""
extern "C" int kt_test_matmul_f64(const double* a, const double* b, double* c, int m, int n, int k, int batch,
                                  const long long* st) {
    const KtMatmulStrides s{st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7], st[8]};
    const cudaError_t e = kt_matmul<double, double>(a, b, c, m, n, k, batch, s, 0);
    return static_cast<int>(e == cudaSuccess ? cudaDeviceSynchronize() : e);
}
"""


def test_the_copy_paths_are_in_the_source() -> None:
    src = cuda_matmul_source()
    assert "C^T = B^T A^T" in src and "kt_cp_async16(bs + j * LDB + kk" in src
    assert "const bool b_pairs = b_unit && s.bn % 2 == 0" in src


@pytest.fixture(scope="module")
def matmul_lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found")
    folder = tmp_path_factory.mktemp("matmul")
    cu, so = folder / "kt_matmul_test.cu", folder / "kt_matmul_test.so"
    cu.write_text(HEAD + cuda_matmul_source() + ENTRY)
    r = subprocess.run(["nvcc", "-std=c++17", "-O2", "-arch=sm_90", "-Xcompiler", "-fPIC", "-shared", str(cu),
                        "-o", str(so)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return so


@pytest.mark.slow
def test_matmul_builds_for_sm90(matmul_lib: Path) -> None:
    assert matmul_lib.stat().st_size > 0


def _stored(x: Any, kind: str) -> Any:
    """A view of x [z, r, c] stored row-major ('row', 'rpad': an even row length past c), or column-major
    ('col', 'cpad': an odd column length past r)."""
    torch = pytest.importorskip("torch")
    z, r, c = x.shape
    if kind == "row":
        return x.contiguous()
    if kind == "rpad":
        big = torch.zeros(z, r, c + (1 if c % 2 else 2), dtype=x.dtype, device=x.device)
        big[:, :, :c] = x
        return big[:, :, :c]
    if kind == "col":
        return x.transpose(1, 2).contiguous().transpose(1, 2)
    big = torch.zeros(z, c, r + (2 if r % 2 else 3), dtype=x.dtype, device=x.device)
    big[:, :, :r] = x.transpose(1, 2)
    return big.transpose(1, 2)[:, :r, :]


@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.parametrize("la,lb", [("row", "row"), ("rpad", "rpad"), ("col", "col"), ("cpad", "cpad"),
                                   ("row", "col"), ("col", "row"), ("rpad", "cpad")])
def test_fp64_matmul_layouts_on_gpu(matmul_lib: Path, la: str, lb: str) -> None:
    if not has_gpu():
        pytest.skip("no CUDA GPU")
    torch = pytest.importorskip("torch")
    lib = ctypes.CDLL(str(matmul_lib))
    g = torch.Generator(device="cuda").manual_seed(3)
    for z, m, n, k in ((1, 257, 131, 77), (2, 130, 70, 50), (3, 64, 200, 96), (1, 1, 5, 1)):
        a = _stored(torch.randn(z, m, k, dtype=torch.float64, device="cuda", generator=g), la)
        b = _stored(torch.randn(z, k, n, dtype=torch.float64, device="cuda", generator=g), lb)
        for lc in ("row", "col"):
            c = _stored(torch.full((z, m, n), float("nan"), dtype=torch.float64, device="cuda"), lc)
            strides = [s for t in (a, b, c) for s in (t.stride(0) if z > 1 else 0, t.stride(1), t.stride(2))]
            rc = lib.kt_test_matmul_f64(ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr()),
                                        ctypes.c_void_p(c.data_ptr()), m, n, k, z,
                                        (ctypes.c_longlong * 9)(*strides))
            assert rc == 0
            want = torch.matmul(a, b)
            err = ((c - want).abs().max() / want.abs().max()).item()
            assert err < 1e-13, f"{la}/{lb}/{lc} z{z} m{m} n{n} k{k}: relative error {err}"
