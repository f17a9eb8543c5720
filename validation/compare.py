"""Compare a candidate's outputs with the reference's.

Every output is compared: out/inout arrays and scalars and the function
result (``"result"``). Floating outputs pass when the largest elementwise
error is within ``tol * max|ref|`` and the relative L2 error within ``tol_l2``
(tolerances by dtype, looser when the region reduces). Elements the reference
leaves unwritten (still poisoned) must stay unwritten; a NaN/Inf in the
candidate where the reference has a number fails (this catches unwritten
outputs); an all-zero or constant output where the reference varies fails
whatever the tolerance; a reference that itself produced NaN/Inf makes the
comparison inconclusive (never ok). With ``allclose=(atol, rtol)`` (PyTorch
regions: KernelBench's fp32 check, atol = rtol = 1e-4) the elementwise test is
``|cand - ref| <= atol + rtol*|ref|`` instead, and the relative L2 test still
applies. Reasons name the output and the first
mismatching element in source terms (1-based, with the declared lower bounds,
for Fortran arrays).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from translate import ir
from validation.inputs import is_poison

# (elementwise, rel-L2) tolerances: (without reductions, with reductions)
TOLERANCES: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "f64": ((1e-12, 1e-12), (1e-10, 1e-10)),
    "f32": ((1e-5, 1e-5), (1e-4, 1e-4)),
    "f16": ((2e-3, 2e-3), (1e-2, 1e-2)),
    "bf16": ((1e-2, 1e-2), (5e-2, 5e-2)),
}


@dataclass(frozen=True)
class OutputComparison:
    name: str
    ok: bool
    inconclusive: bool = False
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    rel_l2_err: float = 0.0
    nan_count: int = 0
    reason: str = ""


@dataclass(frozen=True)
class Comparison:
    ok: bool
    max_abs_err: float
    max_rel_err: float
    rel_l2_err: float
    nan_count: int
    reason: str
    per_output: dict[str, OutputComparison] = field(default_factory=dict)
    inconclusive: bool = False

    @property
    def status(self) -> str:
        return "ok" if self.ok else "inconclusive" if self.inconclusive else "mismatch"


def _fmt(x: Any) -> str:
    if isinstance(x, (bytes, np.bytes_)):
        return repr(x.decode(errors="replace"))
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.17g}"
    return repr(x.item() if hasattr(x, "item") else x)


def _index_namer(decl: ir.Decl | None, name: str, env: Mapping[str, Any] | None):  # noqa: ANN202
    """Format a numpy index tuple as the source would write the element."""
    if not isinstance(decl, ir.Array):
        return lambda idx: name
    lower = [1] * decl.rank
    if decl.lower and env is not None:
        try:
            lower = [int(ir.evaluate(e, env)) for e in decl.lower]  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError):
            pass
    if decl.layout == ir.Layout.LEFT:
        return lambda idx: f"{name}({', '.join(str(int(i) + lo) for i, lo in zip(idx, lower, strict=False))})"
    return lambda idx: f"{name}[{']['.join(str(int(i)) for i in idx)}]"


def _first(mask: np.ndarray, order: str) -> tuple[int, ...]:
    flat = np.flatnonzero(mask.ravel(order=order))[0]
    return tuple(int(i) for i in np.unravel_index(flat, mask.shape, order=order))


def compare_output(name: str, decl: ir.Decl | None, dtype: ir.DType, ref: np.ndarray, cand: np.ndarray | None,
                   reduces: bool, env: Mapping[str, Any] | None = None,
                   tolerance: tuple[float, float] | None = None,
                   allclose: tuple[float, float] | None = None) -> OutputComparison:
    if cand is None:
        return OutputComparison(name, False, reason=f"candidate did not return '{name}'")
    ref, cand = np.asarray(ref), np.asarray(cand)
    if ref.shape != cand.shape:
        return OutputComparison(name, False, reason=f"'{name}' has shape {cand.shape}, reference {ref.shape}")
    order = "F" if isinstance(decl, ir.Array) and decl.layout == ir.Layout.LEFT else "C"
    where = _index_namer(decl, name, env)
    if not dtype.is_float:
        if ref.dtype.kind in "SU" or cand.dtype.kind in "SU":
            bad = np.asarray(ref.astype(str) != cand.astype(str))
        else:
            bad = np.asarray(ref.astype(np.int64) != cand.astype(np.int64))
        if bad.any():
            idx = _first(bad, order) if bad.ndim else ()
            return OutputComparison(name, False, max_abs_err=float("nan"), reason=(
                f"{where(idx)}: candidate {_fmt(cand[idx])}, reference {_fmt(ref[idx])} ({int(bad.sum())} of "
                f"{bad.size} differ; integers must match exactly)"))
        return OutputComparison(name, True)
    r_poison, c_poison = is_poison(ref), is_poison(cand)
    r = ref.astype(np.float64)
    c = cand.astype(np.float64)
    r_bad = ~np.isfinite(r) & ~r_poison
    if r_bad.any():
        idx = _first(r_bad, order) if r_bad.ndim else ()
        return OutputComparison(name, False, inconclusive=True, nan_count=int(r_bad.sum()), reason=(
            f"inconclusive: the reference produced {_fmt(r[idx])} at {where(idx)} ({int(r_bad.sum())} non-finite "
            "values) on these inputs; give the inputs a generator or pin values"))
    extra = r_poison & ~c_poison
    if extra.any():
        idx = _first(extra, order) if extra.ndim else ()
        return OutputComparison(name, False, reason=(
            f"{where(idx)}: candidate wrote {_fmt(c[idx])} where the reference leaves the element unwritten"))
    written = ~r_poison
    c_bad = written & ~np.isfinite(c)
    if c_bad.any():
        idx = _first(c_bad, order) if c_bad.ndim else ()
        what = "left unwritten (still poisoned)" if c_poison[idx] else f"is {_fmt(c[idx])}"
        return OutputComparison(name, False, nan_count=int(c_bad.sum()), max_abs_err=float("inf"), reason=(
            f"{where(idx)} {what} in the candidate, reference {_fmt(r[idx])} ({int(c_bad.sum())} of "
            f"{int(written.sum())} elements non-finite)"))
    if not written.any():
        return OutputComparison(name, True)
    rw, cw = r[written], c[written]
    with np.errstate(invalid="ignore"):
        diff = np.asarray(np.where(written, np.abs(c - r), 0.0))
    scale = float(np.max(np.abs(rw)))
    max_abs = float(diff.max())
    norm = float(np.linalg.norm(rw))
    rel_l2 = float(np.linalg.norm(cw - rw)) / norm if norm > 0 else max_abs
    floor = max(scale * 1e-8, np.finfo(np.float64).tiny)
    max_rel = float(np.max(diff[written] / np.maximum(np.abs(rw), floor)))
    stats = {"max_abs_err": max_abs, "max_rel_err": max_rel, "rel_l2_err": rel_l2}
    if rw.size > 1 and np.ptp(rw) > 0 and np.ptp(cw) == 0:
        kind = "all-zero" if cw[0] == 0 else f"constant ({_fmt(cw[0])} everywhere)"
        return OutputComparison(name, False, **stats, reason=(
            f"'{name}' is {kind} in the candidate while the reference varies (from {_fmt(rw.min())} to "
            f"{_fmt(rw.max())}): the candidate does not compute it"))
    tol, tol_l2 = tolerance or TOLERANCES.get(dtype.value, TOLERANCES["f64"])[1 if reduces else 0]
    if allclose is not None:
        atol, rtol = allclose
        over = written & (diff > atol + rtol * np.abs(r))
    else:
        over = diff > tol * scale
    if over.any() or rel_l2 > tol_l2:
        idx = _first(over, order) if over.any() and over.ndim else (
            _first(diff == max_abs, order) if diff.ndim else ())
        return OutputComparison(name, False, **stats, reason=(
            f"{where(idx)}: candidate {_fmt(c[idx])}, reference {_fmt(r[idx])} (abs err {diff[idx]:.3g}; "
            f"{int(over.sum())} of {int(written.sum())} elements beyond "
            f"{f'{allclose[0]:g} + {allclose[1]:g}*|ref|' if allclose else f'{tol:g}*max|ref|'}; rel L2 {rel_l2:.3g}, "
            f"tolerance {tol_l2:g}{' with reductions' if reduces else ''})"))
    return OutputComparison(name, True, **stats)


def compare(kernel: ir.Kernel, ref_outputs: Mapping[str, np.ndarray], cand_outputs: Mapping[str, np.ndarray],
            reduces: bool, env: Mapping[str, Any] | None = None,
            tolerance: tuple[float, float] | None = None,
            allclose: tuple[float, float] | None = None) -> Comparison:
    """Compare every output of ``kernel`` (see the module docstring). ``env``
    (the case's scalars) lets indices be reported with declared lower bounds;
    ``tolerance`` = (elementwise, rel-L2) overrides the dtype default;
    ``allclose`` = (atol, rtol) replaces the elementwise test (module docstring)."""
    per: dict[str, OutputComparison] = {}
    for p in kernel.params:
        if p.intent.writes:
            per[p.name] = compare_output(p.name, p, p.dtype, ref_outputs[p.name], cand_outputs.get(p.name),
                                         reduces, env, tolerance, allclose)
    if kernel.result is not None:
        per["result"] = compare_output(f"{kernel.name} (function result)", None, kernel.result,
                                       ref_outputs["result"], cand_outputs.get("result"), reduces, env, tolerance,
                                       allclose)
    hint_on = next((p.name for p in kernel.params if isinstance(p, ir.Array) and p.intent.reads), "x")
    for name, o in per.items():
        if o.inconclusive:
            per[name] = replace(o, reason=o.reason + f" (e.g. inputs: {{{hint_on}: positive}}; generators: normal, "
                                "uniform, positive, spd, diag_dominant, int:LO:HI, module:function)")
    failing = [o for o in per.values() if not o.ok]
    inconclusive = any(o.inconclusive for o in failing)
    if inconclusive:
        failing = [o for o in failing if o.inconclusive]
    finite = [o for o in per.values() if not o.inconclusive]
    return Comparison(
        ok=not failing,
        max_abs_err=max((o.max_abs_err for o in finite), default=0.0),
        max_rel_err=max((o.max_rel_err for o in finite), default=0.0),
        rel_l2_err=max((o.rel_l2_err for o in finite), default=0.0),
        nan_count=sum(o.nan_count for o in per.values()),
        reason="; ".join(o.reason for o in failing[:3]),
        per_output=per,
        inconclusive=inconclusive,
    )
