"""Where the call-to-call spread of the Triton reductions comes from: the generated field_summary_like
launcher (its kernel, then the partials summed and brought to the host: a sync) timed as the region
table times it (CUDA events around each call, L2 flushed between calls), its kernel alone with the
same events, and the host's wall time per call, with the six arrays placed as allocated and then
shifted against each other by several strides. Run it in several processes:
``for i in 1 2 3; do python benchmarks/probes/reduction_launch.py [N]; done`` from the repository root
after ``scripts/run-examples``."""

import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from validation.timing import time_gpu  # noqa: E402

SRC = Path("examples/fortran_numerics/out/numerics_stencils/triton/field_summary_like_triton.py")


def placed(n: int, pad: int, g: torch.Generator) -> torch.Tensor:
    """``n`` random doubles starting ``pad`` doubles into a fresh allocation."""
    return torch.rand(n + pad, dtype=torch.float64, device="cuda", generator=g)[pad:]


def time_placement(mod: ModuleType, nx: int, stride: int, g: torch.Generator) -> str:
    """The launcher and its kernel over nx x nx cells, array r starting r * stride bytes past its allocation."""
    ny, lanes, rows = nx, 512, 16  # the launcher's walk: strips of 512 lanes walking runs of 16 rows
    grid = (triton.cdiv(nx, lanes) * triton.cdiv(ny, rows),)
    partials = torch.empty((5, grid[0]), dtype=torch.float64, device="cuda")
    pads = [r * stride // 8 for r in range(6)]
    cells = [placed((nx + 4) * (ny + 4), pads[r], g) for r in range(4)]
    vels = [placed((nx + 5) * (ny + 5), pads[4 + r], g) for r in range(2)]
    args = (1, nx, 1, ny, *cells, *vels, 0.0, 0.0, 0.0, 0.0, 0.0)

    def launcher() -> object:
        return mod.field_summary_like(*args)

    def kernel() -> None:
        mod.field_summary_like_loop1[grid](*cells, *vels, 1, nx, 1, ny, ny, nx, partials, BLOCK=lanes, PLANES=rows)

    want = launcher()
    kernel()
    got = dict(zip(("ie", "ke", "mass", "press", "vol"), partials.sum(dim=1).tolist(), strict=True))
    if any(abs(got[n] - want[n]) > 1e-12 * abs(want[n]) for n in got):
        raise SystemExit(f"the kernel alone differs from the launcher: {got} against {want}")
    walls = []
    for _ in range(30):
        t0 = time.perf_counter()
        launcher()
        walls.append(time.perf_counter() - t0)
    t_l = time_gpu(launcher, reps=30).median_s
    t_k = time_gpu(kernel, reps=30).median_s
    gb = (4 * (nx + 4) * (ny + 4) + 2 * (nx + 5) * (ny + 5)) * 8 / 1e9
    return (f"{torch.cuda.get_device_name()} {nx}^2, arrays shifted by {stride} bytes each: launcher "
            f"{t_l * 1e3:.3f} ms ({gb / t_l:.0f} GB/s), kernel alone {t_k * 1e3:.3f} ms ({gb / t_k:.0f} GB/s), "
            f"host wall per call {statistics.median(walls) * 1e3:.3f} ms")


def main() -> None:
    spec = importlib.util.spec_from_file_location("fs", SRC)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    nx = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    g = torch.Generator(device="cuda").manual_seed(0)
    for stride in (0, 1024, 65536, 2 ** 21 + 8192):
        print(time_placement(mod, nx, stride, g), flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
