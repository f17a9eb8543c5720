"""linrec's generated CUDA scan (``cub::DeviceScan::InclusiveScan`` over ``KtAffine<double>``) built
in variants of its source and timed side by side, each call between CUDA events, 15 rounds taking
turns, the median of the last 13. Run from the repository root after ``scripts/run-examples``:
``python benchmarks/probes/cub_affine_scan.py [N]``. GB/s counts A and B read and X written once."""

import ctypes
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from validation.builds import nvcc_command  # noqa: E402

SOURCE = Path("examples/fortran_numerics/out/numerics_recurrences/cuda/linrec_cuda.cu")
ENTRY = ('\nextern "C" int probe_linrec(int n, const double* a, const double* b, double* x) '
         "{ return (int)linrec_cuda(n, a, b, x, 0); }\n")


def variants(src: str) -> dict[str, str]:
    return {"as generated": src,
            "pair aligned to 16 bytes": src.replace("struct KtAffine {", "struct alignas(2 * sizeof(T)) KtAffine {")}


def build(name: str, text: str, folder: Path) -> ctypes._CFuncPtr:
    src = folder / f"{len(list(folder.glob('*.cu')))}.cu"
    src.write_text(text + ENTRY)
    cmd = [c.replace("{out}", str(src.with_suffix(".so"))) for c in nvcc_command(src, folder)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        sys.exit(f"{name}: build failed\n{res.stderr[-2000:]}")
    f = ctypes.CDLL(str(src.with_suffix(".so"))).probe_linrec
    f.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 3
    return f


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 92_000_000
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.rand(n, device="cuda", dtype=torch.float64, generator=g) * 1.8 - 0.9
    b = torch.randn(n, device="cuda", dtype=torch.float64, generator=g)
    with tempfile.TemporaryDirectory() as tmp:
        funcs = {k: build(k, v, Path(tmp)) for k, v in variants(SOURCE.read_text()).items()}
        times: dict[str, list[float]] = {k: [] for k in funcs}
        outs: dict[str, torch.Tensor] = {}
        for _ in range(15):
            for name, f in funcs.items():
                x = torch.zeros(n, device="cuda", dtype=torch.float64)
                x[0] = b[0]
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize()
                start.record()
                f(n, a.data_ptr(), b.data_ptr(), x.data_ptr())
                end.record()
                torch.cuda.synchronize()
                times[name].append(start.elapsed_time(end))
                outs[name] = x
    first = next(iter(outs.values()))
    for name, ts in times.items():
        med = statistics.median(ts[2:])
        diff = (outs[name] - first).abs().max().item()
        print(f"{name:26s} median {med:.3f} ms  {3 * 8 * n / med / 1e6:.0f} GB/s  max diff vs the first {diff:.1e}")


if __name__ == "__main__":
    main()
