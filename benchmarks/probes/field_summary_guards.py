"""Probe: what the lane guards of the generated Triton field_summary_like walk cost. Every scalar assignment of
the generated kernel is written ``x = tl.where(in_plane, value, x)``; for the nest's private temporaries (cell_vol,
cell_mass, vsqrd: written before they are read in every iteration) the guard only keeps a value no lane reads. Forms,
all derived from the generated file's text and timed kernel-only on the same arrays (8132 x 6776 cells, the region
table's size), in turns, with their register counts and spills as compiled on this machine:

- ``generated``: the kernel as generated;
- ``private``: the private temporaries assigned without a guard (the reductions keep theirs);
- ``unguarded``: every guard dropped (the masked loads give zeros, which this region's sums tolerate; not general);
- ``hand``: the hand walk of ``field_summary_walk.py`` (the node pair's squared velocities carried, no guards).

``python benchmarks/probes/field_summary_guards.py [FILE]`` from the repository root after ``scripts/run-examples``
(FILE: a generated field_summary_like_triton.py with its guards, by default the examples' output)."""

import re
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
from field_summary_walk import fs_walk  # noqa: E402
from probe_common import field_summary_arrays, in_turns, load  # noqa: E402

SRC = Path("examples/fortran_numerics/out/numerics_stencils/triton/field_summary_like_triton.py")
ROOF = 4284.0  # GB/s: the copy roof the percentages are of (docs/measurements/tuning-evidence.md)
PRIVATE = ("vsqrd", "cell_vol", "cell_mass")
SHAPES = ((512, 4), (512, 8), (1024, 4), (1024, 8), (256, 4))  # lanes, warps


def forms(text: str) -> dict[str, str]:
    """The generated text and the two edits of it."""
    names = "|".join(PRIVATE)
    private = re.sub(rf"^(\s+)({names}) = tl\.where\(in_plane, (.*), \2\)$", r"\1\2 = \3", text, flags=re.M)
    private = private.replace("vsqrd = tl.where(in_plane, 0.0, vsqrd)", "vsqrd = tl.zeros([BLOCK], tl.float64)")
    unguarded = re.sub(r"^(\s+)(\w+) = tl\.where\(in_plane, (.*), \2\)$", r"\1\2 = \3", private, flags=re.M)
    for name, edited in (("private", private), ("unguarded", unguarded)):
        if edited.count("tl.where(in_plane") >= text.count("tl.where(in_plane"):
            raise SystemExit(f"{name}: the generated text changed; no guard was dropped")
    return {"generated": text, "private": private, "unguarded": unguarded}


def written(name: str, text: str, folder: Path) -> ModuleType:
    """``text`` written to ``folder`` and loaded as module ``fs_<name>``."""
    path = folder / f"fs_{name}.py"
    path.write_text(text)
    return load(path, f"fs_{name}")


def main() -> None:
    nx, ny, rows = 8132, 6776, 16
    cells, vels = field_summary_arrays(nx, ny)
    gb = sum(t.numel() for t in cells + vels) * 8 / 1e9
    folder = Path(tempfile.mkdtemp())
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else SRC
    mods = {name: written(name, text, folder) for name, text in forms(src.read_text()).items()}
    want = mods["generated"].field_summary_like(1, nx, 1, ny, *cells, *vels, 0.0, 0.0, 0.0, 0.0, 0.0)
    calls: dict[str, Callable[[], None]] = {}
    for lanes, warps in SHAPES:
        grid = (triton.cdiv(nx, lanes) * triton.cdiv(ny, rows),)
        part = torch.empty((5, grid[0]), dtype=torch.float64, device="cuda")
        for name, mod in mods.items():
            def run(mod=mod, grid=grid, part=part, lanes=lanes, warps=warps) -> object:
                return mod.field_summary_like_loop1[grid](*cells, *vels, 1, nx, 1, ny, ny, nx, *part, BLOCK=lanes,
                                                          PLANES=rows, num_warps=warps)
            k = run()
            got = part.sum(dim=1).tolist()[4]
            calls[f"{name} {lanes} lanes w{warps}"] = run
            print(f"{name:10s} {lanes:5d} lanes w{warps}: {k.n_regs} registers, {k.n_spills} spills"
                  f"{'' if abs(got - want['vol']) <= 1e-12 * abs(want['vol']) else ', WRONG'}", flush=True)
        hgrid = (triton.cdiv(nx, lanes), triton.cdiv(ny, rows))
        hpart = torch.empty(hgrid[0] * hgrid[1] * 5, dtype=torch.float64, device="cuda")

        def hand(hgrid=hgrid, hpart=hpart, lanes=lanes, warps=warps) -> object:
            return fs_walk[hgrid](*cells, *vels, nx, ny, hpart, W=lanes, R=rows, num_warps=warps)
        k = hand()
        print(f"{'hand':10s} {lanes:5d} lanes w{warps}: {k.n_regs} registers, {k.n_spills} spills", flush=True)
        calls[f"hand {lanes} lanes w{warps}"] = hand
    calls["generated launcher (as the region table times it)"] = lambda: mods["generated"].field_summary_like(
        1, nx, 1, ny, *cells, *vels, 0.0, 0.0, 0.0, 0.0, 0.0)
    for name, ts in in_turns(calls, reps=20).items():
        t = statistics.median(ts)
        print(f"{name:52s} {t * 1e3:7.3f} ms {gb / t:6.0f} GB/s {100 * gb / t / ROOF:4.0f}%  rounds "
              + " / ".join(f"{x * 1e3:.3f}" for x in ts), flush=True)


if __name__ == "__main__":
    main()
