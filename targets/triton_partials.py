"""How a Triton nest's reductions start and leave their partial results: the operators'
identities and lane reductions, and which array and row each reduction's per-program partials go
to (shared by the kernel that stores them and the launcher that allocates and combines them)."""

from __future__ import annotations

from targets.triton_expr import literal, py_name
from translate import ir

IDENTITY = {"add": 0, "mul": 1, "max": "-inf", "min": "inf", "maxloc": "-inf", "minloc": "inf"}
REDUCE = {"add": "tl.sum({v}, axis=0)", "max": "tl.max({v}, axis=0)", "min": "tl.min({v}, axis=0)",
          "mul": "tl.reduce({v}, 0, _kt_mul)"}


def by_dtype(partials: list[ir.Reduction]) -> dict[ir.DType, list[ir.Reduction]]:
    groups: dict[ir.DType, list[ir.Reduction]] = {}
    for r in partials:
        groups.setdefault(r.dtype, []).append(r)
    return groups


def partials_name(dtype: ir.DType, groups: dict[ir.DType, list[ir.Reduction]]) -> str:
    """``partials``, or ``partials_<dtype>`` where more than one dtype shares an array."""
    shared = [d for d, g in groups.items() if len(g) > 1]
    return "partials" if len(shared) == 1 else f"partials_{dtype.name.lower()}"


def partial_slots(reductions: list[ir.Reduction]) -> dict[int, tuple[str, int]]:
    """Where each reduction (by position) stores its programs' partials: the array's name and the
    row. A pair reduction, or one alone in its type, has its own array (``NAME_part``); those
    sharing a type are the rows of one array, passed to the kernel once (indexing each row on
    the host, and passing it, cost every launch)."""
    groups = by_dtype([r for r in reductions if not r.loc])
    return {k: (f"{py_name(r.var)}_part", 0) if r.loc or len(groups[r.dtype]) == 1
            else (partials_name(r.dtype, groups), groups[r.dtype].index(r)) for k, r in enumerate(reductions)}


def identity(op: str, dtype: ir.DType) -> str:
    value = IDENTITY[op]
    if dtype.is_float:
        return literal(float(value), dtype, True)
    if isinstance(value, str):
        bits = 63 if dtype is ir.DType.I64 else 31
        return str(-(2**bits)) if value == "-inf" else str(2**bits - 1)
    return str(value)


def loc_identity(r: ir.Reduction) -> str:
    """A pair's loc before any iteration: the last of all (never first among equals)."""
    return identity("min" if r.loc_first == "min" else "max", r.loc_dtype)


def partial_arrays(reductions: list[ir.Reduction]) -> list[str]:
    """The partials' arrays of :func:`partial_slots`, each once, in order: the kernel's arguments."""
    return list(dict.fromkeys(array for array, _ in partial_slots(reductions).values()))
