"""Probe: where the generated Triton ivamax (a first-max pair reduction, ``translate.argreduce``) spends its
time at the region table's size (280M doubles): the whole launcher (a serial kernel for DMAX's start and its
``.item()``, the pair kernel, the programs' pairs joined with ``argmax`` and brought back); the pair kernel
alone at BLOCK x TILES of 256 x 8, 256 x 16, 256 x 32 (the launcher's), 256 x 64 and 512 x 32; the kernel
and the join. Every form's index is checked against ``torch.argmax`` of ``|x|``.

``python benchmarks/probes/pair_reduction.py FILE`` from the repository root (FILE: a generated
ivamax_triton.py)."""

import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_common import first_max_data, in_turns, load, rounds_text  # noqa: E402

SHAPES = ((256, 8), (256, 16), (256, 32), (256, 64), (512, 32))


def main() -> None:
    mod = load(sys.argv[1], "ivamax_probe")
    n, x, want = first_max_data()
    trip = n - 1

    def kernel(block: int, tiles: int) -> torch.Tensor:
        part = torch.empty((2, triton.cdiv(trip, block * tiles)), dtype=torch.float64, device="cuda")
        mod.ivamax_loop1[(part.shape[1],)](x, n, 1, 2, trip, part, BLOCK=block, TILES=tiles)
        return part

    def joined(block: int, tiles: int) -> int:
        part = kernel(block, tiles)
        return int(part[:, part[0].argmax()].tolist()[1]) + 1

    got = mod.ivamax(n, x, 1)["result"]
    print(f"launcher: {got} (argmax {want})", flush=True)
    calls = {"launcher": lambda: mod.ivamax(n, x, 1)}
    for block, tiles in SHAPES:
        check = joined(block, tiles)
        print(f"{block} x {tiles}: {check}{'' if check == want else ' WRONG'}", flush=True)
        calls[f"kernel {block} x {tiles}"] = lambda b=block, t=tiles: kernel(b, t)
    calls["kernel 256 x 32 + join"] = lambda: joined(256, 32)
    for name, ts in in_turns(calls, reps=20).items():
        print(f"{name:24s} {rounds_text(ts)}", flush=True)


if __name__ == "__main__":
    main()
