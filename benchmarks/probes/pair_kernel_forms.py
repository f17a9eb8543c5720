"""Probe: the Triton first-max pair kernel (ivamax's ``translate.argreduce`` form) written five ways, at the
region table's size (280M doubles), each followed by the join of the programs' pairs on the device (``argmax``
and the chosen pair's gather, as the launcher queues them):

- ``generated``: the generated kernel (FILE), which tracks the 64-bit iteration (until ``argreduce.in_order`` it
  kept a lane's pair with the full rule ``v > best or (v == best and i < first)``, since then with ``v > best``);
- ``strict``: a lane visits its iterations in order, so within a lane ``v > best`` alone keeps the first;
- ``strided``: ``strict`` with the generated kernel's address ``DX(IX + (I - 1) * INCX)`` and value temporary;
- ``offset``: ``strict`` reading ``DX(IX - 1 + I)``, a runtime offset but no temporary;
- ``tile``: ``strict``, the lane keeping the number of its best tile (a 32-bit constant per tile) instead of the
  iteration, which is rebuilt once at the end;
- ``block``: the program's TILES x BLOCK iterations loaded as one 2-D block (every load issued before the first
  compare: the loop forms above interleave loads and compares, three or four loads in flight per thread), its
  first best found by two whole-block reductions; ``block strided`` with the generated address;

at 32 tiles of 256 lanes and 8 warps (the generated one also at 4), and the generated launcher. Every form's index
is checked against ``torch.argmax``; the size of its PTX, its 64-bit multiplies and loads are printed with it (an
``INCX`` of 1 the JIT did not specialise would show as multiplies).

``python benchmarks/probes/pair_kernel_forms.py FILE`` from the repository root (FILE: a generated
ivamax_triton.py)."""

import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_common import first_max_data, in_turns, load, rounds_text  # noqa: E402

BLOCK = 256


@triton.jit
def _store_pair(part, pid, best, first):
    """The program's best lane's pair: the best value and, among lanes holding it, the first iteration."""
    top = tl.max(best, axis=0)
    at = tl.min(tl.where(best == top, first, 2147483647), axis=0)
    tl.store(part + pid, top)
    tl.store(part + tl.num_programs(0) + pid, at)


@triton.jit
def strict_pair(dx, trip, part, BLOCK: tl.constexpr, TILES: tl.constexpr):
    pid = tl.program_id(0)
    best = tl.full([BLOCK], -float("inf"), tl.float64)
    first = tl.full([BLOCK], 2147483647, tl.int64)
    for tile in tl.static_range(TILES):
        offs = (pid.to(tl.int64) * TILES + tile) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < trip
        i = 1 + offs
        v = tl.where(mask, tl.abs(tl.load(dx + i, mask=mask, other=0.0)), 0.0)
        take = mask & (v > best)
        best = tl.where(take, v, best)
        first = tl.where(take, i, first)
    _store_pair(part, pid, best, first)


@triton.jit
def strided_pair(dx, trip, ix, incx, part, BLOCK: tl.constexpr, TILES: tl.constexpr):
    """``strict`` addressing ``DX(IX + (I - 1) * INCX)`` as the generated kernel does."""
    ix = tl.cast(ix, tl.int64)
    incx = tl.cast(incx, tl.int64)
    pid = tl.program_id(0)
    best = tl.full([BLOCK], -float("inf"), tl.float64)
    first = tl.full([BLOCK], 2147483647, tl.int64)
    for tile in tl.static_range(TILES):
        offs = (pid.to(tl.int64) * TILES + tile) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < trip
        i = 1 + offs
        v = tl.zeros([BLOCK], tl.float64)
        v = tl.where(mask, tl.abs(tl.load(dx + ((ix + ((i - 1) * incx)) - 1), mask=mask, other=0.0)), v)
        take = mask & (v > best)
        best = tl.where(take, v, best)
        first = tl.where(take, i, first)
    _store_pair(part, pid, best, first)


@triton.jit
def offset_pair(dx, trip, ix, part, BLOCK: tl.constexpr, TILES: tl.constexpr):
    """``strict`` reading ``DX(IX - 1 + I)``: the runtime offset of ``strided`` without its temporary."""
    pid = tl.program_id(0)
    best = tl.full([BLOCK], -float("inf"), tl.float64)
    first = tl.full([BLOCK], 2147483647, tl.int64)
    for tile in tl.static_range(TILES):
        offs = (pid.to(tl.int64) * TILES + tile) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < trip
        i = 1 + offs
        v = tl.where(mask, tl.abs(tl.load(dx + (ix - 2) + i, mask=mask, other=0.0)), 0.0)
        take = mask & (v > best)
        best = tl.where(take, v, best)
        first = tl.where(take, i, first)
    _store_pair(part, pid, best, first)


@triton.jit
def tile_pair(dx, trip, part, BLOCK: tl.constexpr, TILES: tl.constexpr):
    pid = tl.program_id(0)
    best = tl.full([BLOCK], -float("inf"), tl.float64)
    at_tile = tl.full([BLOCK], -1, tl.int32)
    for tile in tl.static_range(TILES):
        offs = (pid.to(tl.int64) * TILES + tile) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < trip
        v = tl.where(mask, tl.abs(tl.load(dx + 1 + offs, mask=mask, other=0.0)), 0.0)
        take = mask & (v > best)
        best = tl.where(take, v, best)
        at_tile = tl.where(take, tile, at_tile)
    first = tl.where(at_tile >= 0, 1 + (pid.to(tl.int64) * TILES + at_tile) * BLOCK + tl.arange(0, BLOCK),
                     2147483647)
    _store_pair(part, pid, best, first)


@triton.jit
def block_pair(dx, trip, ix, incx, part, BLOCK: tl.constexpr, TILES: tl.constexpr, STRIDED: tl.constexpr):
    """The program's iterations as one [TILES, BLOCK] block: a value counts when it beats the lanes' start
    (-inf, as a lane's ``v > best``: masked and NaN values do not), the best of those, then its first iteration."""
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * TILES * BLOCK + tl.arange(0, TILES)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    mask = offs < trip
    i = 1 + offs
    if STRIDED:
        at = (tl.cast(ix, tl.int64) + ((i - 1) * tl.cast(incx, tl.int64))) - 1
        v = tl.abs(tl.load(dx + at, mask=mask, other=0.0))
    else:
        v = tl.abs(tl.load(dx + i, mask=mask, other=0.0))
    counts = mask & (v > -float("inf"))
    top = tl.max(tl.max(tl.where(counts, v, -float("inf")), axis=1), axis=0)
    at = tl.min(tl.min(tl.where(counts & (v == top), i, 2147483647), axis=1), axis=0)
    tl.store(part + pid, top)
    tl.store(part + tl.num_programs(0) + pid, at)


def main() -> None:
    mod = load(sys.argv[1], "ivamax_forms")
    n, x, want = first_max_data()
    trip = n - 1

    compiled = {}

    def run(kind: str, tiles: int, warps: int = 4) -> torch.Tensor:
        programs = triton.cdiv(trip, BLOCK * tiles)
        part = torch.empty((2, programs), dtype=torch.float64, device="cuda")
        if kind == "generated":
            k = mod.ivamax_loop1[(programs,)](x, n, 1, 2, trip, part, BLOCK=BLOCK, TILES=tiles, num_warps=warps)
        elif kind == "offset":
            k = offset_pair[(programs,)](x, trip, 2, part, BLOCK=BLOCK, TILES=tiles, num_warps=warps)
        elif kind.startswith("block"):
            k = block_pair[(programs,)](x, trip, 2, 1, part, BLOCK=BLOCK, TILES=tiles, STRIDED=kind.endswith("strided"),
                                        num_warps=warps)
        elif kind == "strided":
            k = strided_pair[(programs,)](x, trip, 2, 1, part, BLOCK=BLOCK, TILES=tiles, num_warps=warps)
        else:
            form = strict_pair if kind == "strict" else tile_pair
            k = form[(programs,)](x, trip, part, BLOCK=BLOCK, TILES=tiles, num_warps=warps)
        compiled.setdefault((kind, tiles, warps), k)
        return part[:, part[0].argmax().view(1)].view(2)

    shapes = {f"{kind} {tiles}, {warps} warps": (kind, tiles, warps)
              for kind, tiles, warps in (("generated", 32, 8), ("generated", 32, 4), ("strict", 32, 8),
                                         ("strided", 32, 8), ("offset", 32, 8), ("tile", 32, 8),
                                         ("block", 32, 8), ("block", 16, 8), ("block", 16, 4), ("block", 8, 4),
                                         ("block strided", 32, 8), ("block strided", 16, 4))}
    for name, (kind, tiles, warps) in shapes.items():
        got = int(run(kind, tiles, warps)[1].item()) + 1
        ptx = compiled[(kind, tiles, warps)].asm["ptx"]
        print(f"{name}: {got}{'' if got == want else ' WRONG'} (argmax {want}); PTX {len(ptx.splitlines())} lines, "
              f"{ptx.count('mul.lo.s64')} 64-bit multiplies, {ptx.count('ld.global')} global loads", flush=True)
    calls = {name: (lambda k=kind, t=tiles, w=warps: run(k, t, w)) for name, (kind, tiles, warps) in shapes.items()}
    calls["launcher"] = lambda: mod.ivamax(n, x, 1)
    for name, ts in in_turns(calls, reps=20).items():
        print(f"{name:20s} {rounds_text(ts)}", flush=True)


if __name__ == "__main__":
    main()
