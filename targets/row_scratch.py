"""Scratch rows kept on chip: a row kernel's per-row copies of a local array in the memory a warp
(CUDA) or a team (Kokkos) has to itself, instead of one global copy per row.

The analysis gives a routine's scratch array one copy per iteration of the loops that make it
parallel (``translate.privatize``: NPB MG's resid fills ``u1(i1)`` and ``u2(i1)`` for each
``(i2, i3)`` and reads them back with neighbours ``i1 - 1``, ``i1 + 1``). Allocated whole, the
copies are as large as the grid (two 1 GB arrays at MG class C) and every element travels to
memory and back. In a row kernel one warp or team runs one row at a time, so it needs only its
row's copy: a few KiB of shared memory (CUDA ``__shared__``, Kokkos level-0 team scratch).

An array is kept on chip for a row nest when it is a local array of the routine, every access to
it anywhere in the routine is in that nest, inside inner loops the analysis found parallel
(``targets.rows.row_owned``), every access's trailing indices are the positions of the nest's own
loops (the copy dimensions the expansion added), and one row's copy has a constant size within
``ROW_BYTES``. Its accesses then drop those trailing indices and its declaration keeps the leading
dimensions only: the row's copy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from math import prod

from targets.rows import row_owned
from translate import ir
from translate.partition import DeviceNest, Segment
from translate.privatize import position
from translate.simplify import simplify

# Two rows of a CUDA block must fit the 48 KiB of static shared memory a block has without
# opting in to more; Kokkos' level-0 team scratch has the same bound on GPUs.
ROW_BYTES = 24 * 1024


@dataclass(frozen=True)
class OnChip:
    """The kernel with its on-chip arrays declared as one row's copy, its segments with those
    arrays' accesses rewritten, and the arrays each row nest keeps on chip (by nest name)."""

    kernel: ir.Kernel
    segments: tuple[Segment, ...]
    rows: dict[str, tuple[ir.Array, ...]]


def row_size(array: ir.Array) -> int:
    return prod(int(e.value) for e in array.shape if isinstance(e, ir.Const)) * array.dtype.itemsize


def on_chip(kernel: ir.Kernel, segments: tuple[Segment, ...],
            is_row: Callable[[DeviceNest], bool]) -> OnChip:
    """The routine with the scratch rows of its row nests (``is_row``) kept on chip."""
    locals_ = {d.name: d for d in kernel.locals if isinstance(d, ir.Array)}
    loads = _load_counts(segments)
    external = {n for node in _nodes(segments) if isinstance(node, ir.Extern) for n in node.inputs + node.outputs}
    rows: dict[str, tuple[ir.Array, ...]] = {}
    nests: dict[str, DeviceNest] = {}
    shapes: dict[str, ir.Array] = {}
    for nest in (s for s in _nodes(segments) if isinstance(s, DeviceNest) and is_row(s)):
        taken: list[ir.Array] = []
        body = nest.body
        own = _load_counts((nest,))
        for name in nest.arrays:
            decl = locals_.get(name)
            if decl is None or name in external or name in shapes or loads.get(name) != own.get(name):
                continue
            row = _row_copy(nest, kernel, decl)
            if row is None or row_size(row) + sum(row_size(a) for a in taken) > ROW_BYTES:
                continue
            taken.append(row)
            body = tuple(_dropped(s, name, len(nest.loops)) for s in body)  # type: ignore[misc]
        if taken:
            names = {a.name for a in taken}
            rows[nest.name] = tuple(taken)
            shapes.update({a.name: a for a in taken})
            nests[nest.name] = replace(nest, body=body, arrays=tuple(a for a in nest.arrays if a not in names))
    if not rows:
        return OnChip(kernel, segments, {})
    new_locals = tuple(shapes.get(d.name, d) for d in kernel.locals)
    return OnChip(replace(kernel, locals=new_locals), tuple(_swapped(s, nests) for s in segments), rows)


def _row_copy(nest: DeviceNest, kernel: ir.Kernel, decl: ir.Array) -> ir.Array | None:
    """``decl`` as one row's copy (its leading dimensions), where every access in ``nest`` ends with
    the positions of the nest's loops and the leading extents are constants; else None."""
    k = len(nest.loops)
    if decl.rank <= k or decl.layout is not ir.Layout.LEFT or not row_owned(nest, kernel, decl.name):
        return None
    positions = {simplify(position(lp)) for lp in nest.loops}
    if len(positions) != k:
        return None
    for node in _nodes((nest,)):
        if isinstance(node, ir.Load) and node.array == decl.name:
            if {simplify(i) for i in node.index[-k:]} != positions:
                return None
    lead = decl.shape[:-k]
    if not all(isinstance(e, ir.Const) and isinstance(e.value, int) and e.value > 0 for e in lead):
        return None
    return replace(decl, shape=lead, lower=decl.lower[:-k] if decl.lower else ())


def _dropped(node: object, name: str, k: int) -> object:
    """``node`` with the trailing ``k`` indices of every access to ``name`` dropped."""
    if isinstance(node, ir.Load) and node.array == name:
        return ir.Load(name, node.index[:-k], node.dtype)
    return ir._rebuilt(node, lambda child: _dropped(child, name, k))


def _swapped(node: object, nests: dict[str, DeviceNest]) -> object:
    if isinstance(node, DeviceNest):
        return nests.get(node.name, node)
    return ir._rebuilt(node, lambda child: _swapped(child, nests))


def _nodes(segments: tuple[Segment, ...]) -> Iterator[object]:
    """Every segment and IR node of the routine's segments, pre-order."""
    for seg in segments:
        yield from ir.walk(seg)


def _load_counts(segments: tuple[Segment, ...]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in _nodes(segments):
        if isinstance(n, ir.Load):
            counts[n.array] = counts.get(n.array, 0) + 1
    return counts
