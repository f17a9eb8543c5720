"""What the Python probes share (the CUDA probes' twin is ``probe_timing.cuh``): loading a generated file as a
module, field_summary_like's six arrays and ivamax's data at the region table's size, and timing several calls in
turns."""

import importlib.util
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from validation.timing import time_gpu  # noqa: E402


def load(path: str | Path, name: str) -> ModuleType:
    """The Python file at ``path`` as a module named ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def field_summary_arrays(nx: int = 8132, ny: int = 6776) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """field_summary_like's four cell arrays ((nx + 4) x (ny + 4)) and two node arrays ((nx + 5) x (ny + 5)),
    random, on the GPU (seed 0)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    cells = [torch.rand((nx + 4) * (ny + 4), dtype=torch.float64, device="cuda", generator=g) for _ in range(4)]
    vels = [torch.rand((nx + 5) * (ny + 5), dtype=torch.float64, device="cuda", generator=g) for _ in range(2)]
    return cells, vels


def first_max_data(n: int = 280259693) -> tuple[int, torch.Tensor, int]:
    """ivamax's data at the region table's size: ``n``, ``n`` random doubles on the GPU (seed 0) and the
    Fortran index of the first largest ``|x|`` (the draws make ties unlikely)."""
    x = torch.randn(n, dtype=torch.float64, device="cuda", generator=torch.Generator(device="cuda").manual_seed(0))
    return n, x, int(torch.argmax(x.abs()).item()) + 1


def in_turns(calls: dict[str, Callable[[], object]], rounds: int = 3, reps: int = 30) -> dict[str, list[float]]:
    """Each call's median time (CUDA events, L2 flushed) in each of ``rounds`` rounds, the calls taken in
    turns so that a drift of the machine shows in all of them."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, fn in calls.items():
            times[name].append(time_gpu(fn, reps=reps).median_s)
    return times


def rounds_text(ts: list[float]) -> str:
    """``median ms`` and the rounds, as the probes print them."""
    return f"{statistics.median(ts) * 1e3:.3f} ms rounds " + " / ".join(f"{t * 1e3:.3f}" for t in ts)
