"""Probe: the host's part of the generated Triton ivamax launcher, step by step, and the launcher's tail
arranged four ways, at the region table's size (280M doubles).

First the host's cost of each step, averaged over many calls: a Triton launch of the serial kernel and of the
pair kernel (on a small trip, so that the GPU keeps up), ``torch.empty``, the ``argmax`` join queued, a
``.item()`` and a ``.tolist()`` on an idle GPU, ``torch.cuda.synchronize()``.

Then, timed in turns as the region table times a launcher (CUDA events, L2 flushed): the generated launcher;
``one fetch`` (the pairs joined on the GPU and brought back with the start value in one copy, nothing read
before); ``pair kernel first`` (the same, the serial kernel launched after the pair kernel, which does not read
its result); ``torch start`` (the start value as a torch expression instead of a serial kernel); and the pair
kernel alone. Every form's index is checked against ``torch.argmax`` of ``|x|``.

``python benchmarks/probes/launch_steps.py FILE`` from the repository root (FILE: a generated ivamax_triton.py)."""

import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_common import first_max_data, in_turns, load, rounds_text  # noqa: E402

BLOCK, TILES, WARPS = 256, 32, 8  # the launcher's shape


def host_us(fn: Callable[[], object], calls: int = 300) -> float:
    """The host's wall time per call of ``fn`` in microseconds, the GPU synchronised before and after."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def main() -> None:
    mod = load(sys.argv[1], "ivamax_steps")
    n, x, want = first_max_data()
    trip = n - 1
    programs = triton.cdiv(trip, BLOCK * TILES)

    start = torch.empty(1, dtype=torch.float64, device="cuda")
    part = torch.empty((2, programs), dtype=torch.float64, device="cuda")
    small = torch.empty((2, 1), dtype=torch.float64, device="cuda")
    steps = {
        "serial kernel launch": lambda: mod.ivamax_serial1[(1,)](x, 0.0, start),
        "pair kernel launch (small)": lambda: mod.ivamax_loop1[(1,)](
            x, 4097, 1, 2, 4096, small, BLOCK=BLOCK, TILES=TILES, num_warps=WARPS),
        "torch.empty": lambda: torch.empty((2, programs), dtype=torch.float64, device="cuda"),
        "argmax join queued": lambda: part[:, part[0].argmax().view(1)],
        "torch start queued": lambda: x[0:1].abs(),
        ".item() idle": lambda: start.item(),
        ".tolist() idle (3)": lambda: torch.cat((start, part[:, 0])).tolist(),
        "synchronize idle": torch.cuda.synchronize,
    }
    for name, fn in steps.items():
        fn()
        print(f"{name:28s} {host_us(fn):7.1f} us per call on the host", flush=True)

    def kernel() -> torch.Tensor:
        p = torch.empty((2, programs), dtype=torch.float64, device="cuda")
        mod.ivamax_loop1[(programs,)](x, n, 1, 2, trip, p, BLOCK=BLOCK, TILES=TILES, num_warps=WARPS)
        return p

    def finish(p: torch.Tensor, dmax_out: torch.Tensor) -> int:
        dmax, top, first = torch.cat((dmax_out, p[:, p[0].argmax().view(1)].view(2))).tolist()
        return int(first) + 1 if top > dmax else 1

    def serial() -> torch.Tensor:
        out = torch.empty(1, dtype=torch.float64, device="cuda")
        mod.ivamax_serial1[(1,)](x, 0.0, out)
        return out

    def one_fetch() -> int:
        dmax_out = serial()
        return finish(kernel(), dmax_out)

    def pair_first() -> int:
        p = kernel()
        return finish(p, serial())

    def torch_start() -> int:
        p = kernel()
        return finish(p, x[0:1].abs())

    forms = {
        "launcher": lambda: mod.ivamax(n, x, 1)["result"],
        "one fetch": one_fetch,
        "pair kernel first": pair_first,
        "torch start": torch_start,
    }
    for name, fn in forms.items():
        got = fn()
        print(f"{name}: {got}{'' if got == want else ' WRONG'} (argmax {want})", flush=True)
    calls: dict[str, Callable[[], object]] = dict(forms)
    calls["pair kernel alone"] = kernel
    for name, ts in in_turns(calls, reps=20).items():
        print(f"{name:24s} {rounds_text(ts)}", flush=True)
    for name, fn in forms.items():
        print(f"{name:24s} {host_us(fn, calls=20):7.1f} us host wall per synchronised call", flush=True)


if __name__ == "__main__":
    main()
