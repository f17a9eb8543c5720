"""Accesses of a parallel nest that address the element at the iteration's flat number.

A nest whose loops each run from 0 by 1 numbers its iterations along
``partition.fastest_first``: the fastest loop's variable plus its trip count times the
number of the rest, and so on. An access that reads or writes an array at exactly the nest's
loop variables, in the array's contiguous order, where every dimension but the slowest has
the extent of the loop that walks it, is at offset ``flat`` in that array: an elementwise
operation over whole tensors (every PyTorch activation, a Fortran whole-array assignment)
addresses all its arrays so. A target that runs the nest as a flat tile then addresses such
an access with the lane's flat index itself: one addition instead of the loop variables rebuilt
by division and the offset rebuilt from them, and contiguous lanes that the compiler can prove
contiguous and load as wide vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

from translate import ir
from translate.partition import DeviceNest, fastest_first
from translate.simplify import simplify


@dataclass(frozen=True)
class FlatIndex:
    """The nest's loops in the order their flat number walks them, fastest first."""

    loops: tuple[ir.Loop, ...]  # fastest first
    whole: bool  # the loop variables are read nowhere but in flat accesses

    def covers(self, decl: ir.Decl, index: tuple[ir.Expr, ...]) -> bool:
        """Whether ``decl[index]`` is the element at the iteration's flat number."""
        if not isinstance(decl, ir.Array) or decl.complex or decl.rank != len(self.loops):
            return False
        dims = list(range(decl.rank)) if decl.layout is ir.Layout.LEFT else list(range(decl.rank - 1, -1, -1))
        for pos, (dim, lp) in enumerate(zip(dims, self.loops, strict=True)):
            sub = index[dim]
            if not isinstance(sub, ir.Var) or sub.name != lp.var:
                return False
            if pos < len(dims) - 1 and simplify(decl.shape[dim]) != simplify(lp.stop):
                return False  # the slowest dimension's extent does not enter the offset
        return True


def flat_index(nest: DeviceNest, kernel: ir.Kernel) -> FlatIndex | None:
    """The nest's flat numbering where at least one of its accesses follows it (None for a
    nest of one loop, whose variable is its flat number already, or of loops that do not
    start at 0 with step 1)."""
    if len(nest.loops) < 2:
        return None
    for lp in nest.loops:
        if simplify(lp.start) != ir.Const(0, lp.start.dtype) or simplify(lp.step) != ir.Const(1, lp.step.dtype):
            return None
    flat = FlatIndex(tuple(nest.loops[k] for k in fastest_first(nest, kernel)), whole=False)
    names = {lp.var for lp in nest.loops}

    def covered(node: object) -> bool:
        if not isinstance(node, ir.Load):
            return False
        try:
            return flat.covers(kernel.param(node.array), node.index)
        except KeyError:
            return False

    def other_use(node: object) -> bool:
        if covered(node):
            return False
        if isinstance(node, ir.Var):
            return node.name in names
        return any(other_use(c) for c in ir.children(node))

    if not any(covered(n) for s in nest.body for n in ir.walk(s)):
        return None
    return FlatIndex(flat.loops, whole=not any(other_use(s) for s in nest.body))
