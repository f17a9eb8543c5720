"""Probe: the generated fp64 matrix product (``targets.cuda_matmul``) against cuBLAS through torch at 4096^3
and 8192^3 in three layouts (row-major; the Fortran dot form, A read along k; the accumulate form, A read along
m; B read along k in both Fortran forms), and two ablations that show where its time goes: ``no_mma``
(copies and shared-memory reads, no ``mma.sync``) and ``no_copy`` (shared-memory reads and ``mma.sync``, no
copies after the prologue). The ablations compute wrong numbers on purpose; only the default is checked.

``python benchmarks/probes/fp64_matmul.py build DIR`` compiles the libraries with nvcc (here);
``python benchmarks/probes/fp64_matmul.py run DIR`` times them on the GPU (no nvcc needed there)."""

import ctypes
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from targets.cuda_matmul import cuda_matmul_source  # noqa: E402

HEAD = r"""#include <cstdio>
#include <type_traits>
#include <cuda_runtime.h>
#define KT_CUDA_CHECK(call) do { const cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); return e_; } } while (0)
"""
ENTRY = r"""
extern "C" int probe_matmul_f64(const double* a, const double* b, double* c, int m, int n, int k, const long long* st) {
    const KtMatmulStrides s{st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7], st[8]};
    return static_cast<int>(kt_matmul<double, double>(a, b, c, m, n, k, 1, s, 0));
}
"""
MMA = "for (int j = 0; j < FN; ++j) kt_dmma<MR, KS>(acc[i][j], fa[i], fb[j]);"
SINK = ("for (int j = 0; j < FN; ++j) { asm volatile(\"\" :: \"d\"(fa[i][0]), \"d\"(fa[i][1]), \"d\"(fa[i][2]), "
        "\"d\"(fa[i][3]), \"d\"(fa[i][4]), \"d\"(fa[i][5]), \"d\"(fa[i][6]), \"d\"(fa[i][7]), \"d\"(fb[j][0]), "
        "\"d\"(fb[j][1]), \"d\"(fb[j][2]), \"d\"(fb[j][3])); acc[i][j][0] += 1.0; }")
COPY = "if (next < slabs) load_slab(next % STAGES, next * BK);"
ABLATIONS = {"default": [], "no_mma": [(MMA, SINK)],
             "no_copy": [(COPY, "if (next < slabs && k < 0) load_slab(next % STAGES, next * BK);")]}


def build(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, subs in ABLATIONS.items():
        text = cuda_matmul_source()
        for old, new in subs:
            if old not in text:
                raise SystemExit(f"{name}: the kernel text changed; '{old}' not found")
            text = text.replace(old, new)
        cu = folder / f"{name}.cu"
        cu.write_text(HEAD + text + ENTRY)
        subprocess.run(["nvcc", "-std=c++17", "-O2", "-arch=sm_90", "-Xcompiler", "-fPIC", "-shared", str(cu), "-o",
                        str(cu.with_suffix(".so"))], check=True)
        print(f"built {cu.with_suffix('.so')}", flush=True)


def _bench(fn: Callable[[], object]) -> float:
    """Median of 7 timed calls (CUDA events), L2 flushed before each."""
    import torch

    flush = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    fn()
    times = []
    for _ in range(7):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    return statistics.median(times)


def _layout_row(libs: dict[str, ctypes.CDLL], a: Any, b: Any, c: Any, c_row: bool) -> str:
    """cuBLAS and every library on c = a @ b (square), as fractions of cuBLAS."""
    import torch

    size = a.shape[0]
    st = (ctypes.c_longlong * 9)(0, a.stride(0), a.stride(1), 0, b.stride(0), b.stride(1), 0, c.stride(0), c.stride(1))
    if c_row:
        t_ref = _bench(lambda: torch.matmul(a, b, out=c))
    else:
        t_ref = _bench(lambda: torch.matmul(b.t(), a.t(), out=c.t()))
    want = c.clone()
    row = f"cuBLAS {2 * size**3 / t_ref / 1e12:5.1f} TFLOP/s"
    for name, lib in libs.items():
        def call(lib: ctypes.CDLL = lib) -> None:
            if lib.probe_matmul_f64(ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr()),
                                    ctypes.c_void_p(c.data_ptr()), size, size, size, st):
                raise SystemExit("kt_matmul failed")
        t = _bench(call)
        err = ((c - want).abs().max() / want.abs().max()).item()
        row += f" | {name} {t_ref / t:.2f}x" + (" WRONG" if name == "default" and err > 1e-12 else "")
    return row


def run(folder: Path) -> None:
    import torch

    def stored(x: torch.Tensor, row: bool) -> torch.Tensor:
        return x.contiguous() if row else x.t().contiguous().t()

    libs = {name: ctypes.CDLL(str(folder / f"{name}.so")) for name in ABLATIONS}
    print(torch.cuda.get_device_name(), flush=True)
    layouts = {"row-major": (True, True, True), "dot form": (True, False, False),
               "accumulate form": (False, False, False)}
    for size in (4096, 8192):
        g = torch.Generator(device="cuda").manual_seed(0)
        a0 = torch.randn(size, size, dtype=torch.float64, device="cuda", generator=g)
        b0 = torch.randn(size, size, dtype=torch.float64, device="cuda", generator=g)
        for layout, (a_row, b_row, c_row) in layouts.items():
            c = stored(torch.empty_like(a0), c_row)
            print(f"{size}^3 {layout:15s} " + _layout_row(libs, stored(a0, a_row), stored(b0, b_row), c, c_row),
                  flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run"):
        raise SystemExit(__doc__)
    (build if sys.argv[1] == "build" else run)(Path(sys.argv[2]))
