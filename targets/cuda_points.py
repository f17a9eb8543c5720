"""CUDA: a 1-D nest without reductions whose threads each run several iterations a block
apart (``Schedule.march``, by default ``POINTS_PER_THREAD``). A block covers ``n * blockDim.x`` consecutive iterations,
so every load and store stays coalesced; where all ``n`` are in range their bodies are
written out without bounds checks, and the loads each body makes before it writes are
issued for all ``n`` iterations first (``hoisted_loads``), so a thread keeps ``n`` times
the bytes in flight. The loop is parallel (no iteration reads what another writes), so
moving a load of one iteration above the stores of another is legal."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from targets.base import CodeBuffer
from targets.cstyle import NARROW
from targets.planes import steady_loads
from translate import ir
from translate.irquery import arrays_written, scalar_reads
from translate.schedule import DeviceNest

if TYPE_CHECKING:
    from targets.cuda import CudaRenderer

# iterations per thread when the schedule leaves ``march`` at 0. H200, side by side (ms; 1, 2, 4, 8
# per thread): vcopy 0.614 0.556 0.580 0.593, vscal 0.633 0.561 0.662 0.721, heat1d 0.602 0.546 0.561
# 0.571, vswap 0.809 0.772 0.782 0.721 (docs/measurements/2026-12-03-h200-variants.txt)
POINTS_PER_THREAD = 2


def hoisted_loads(seg: DeviceNest) -> list[ir.Load]:
    """Loads that can move to the top of one iteration: in the leading run of plain
    assignments, of arrays no earlier statement of the iteration writes, with subscripts
    of loop variables and the nest's scalar inputs only (no loaded subscripts); each once."""
    written: set[str] = set()
    out: list[ir.Load] = []
    for s in seg.body:
        if not isinstance(s, ir.Assign):
            break
        subscripts = s.target.index if isinstance(s.target, ir.Load) else ()
        for load in steady_loads(seg, s.value) + [x for e in subscripts for x in steady_loads(seg, e)]:
            if load.array not in written and load not in out:
                out.append(load)
        written |= arrays_written(s)
    return out


def with_registers(body: tuple[ir.Stmt, ...], regs: Mapping[ir.Load, ir.Var]) -> tuple[ir.Stmt, ...]:
    """``body`` with the hoisted loads read from their registers where they are still
    current: in the leading plain assignments, before the first write of their array
    (never a store's own target)."""
    written: set[str] = set()
    out: list[ir.Stmt] = []
    for pos, s in enumerate(body):
        if not isinstance(s, ir.Assign):
            return (*out, *body[pos:])
        live = {k: v for k, v in regs.items() if k.array not in written}
        target = s.target
        if isinstance(target, ir.Load):
            target = replace(target, index=tuple(ir.replace_exprs(e, live) for e in target.index))
        out.append(replace(s, target=target, value=ir.replace_exprs(s.value, live)))
        written |= arrays_written(s)
    return tuple(out)


def strided_points(r: CudaRenderer, buf: CodeBuffer, seg: DeviceNest, k_names: Mapping[str, str], n: int) -> None:
    """The body of a 1-D nest kernel whose threads run ``n`` iterations a block apart."""
    lp = seg.loops[0]
    v = r.var(lp.var)
    k, trip = k_names.get(lp.var, v), f"{v}_trip"
    buf.line(f"// {n} iterations per thread, a block apart: their loads are issued before their stores")
    buf.line(f"const int {k}_first = blockIdx.x * ({n} * blockDim.x) + threadIdx.x;")
    with buf.block(f"if ({k}_first + {n - 1}LL * blockDim.x < {trip})", closer="} else {"):
        loads = hoisted_loads(seg)
        at = [r.var(f"{lp.var}_{m}") for m in range(n)]
        for m in range(n):
            first = f"{k}_first" + (f" + {m} * blockDim.x" if m else "")
            buf.line(f"const int {at[m]} = {r.offset(lp, first) if lp.var in k_names else first};")
        counts = Counter(x.array for x in loads)
        bodies = []
        for m in range(n):
            point = {lp.var: ir.Var(f"{lp.var}_{m}", r.dtype_of(lp.var))}
            regs: dict[ir.Load, ir.Var] = {}
            for q, load in enumerate(loads):
                dt = r.array(load.array).dtype
                dt = ir.DType.F32 if dt in NARROW else dt  # a f16/bf16 load is read as float
                name = r.var(load.array) + (str(q) if counts[load.array] > 1 else "") + f"_{m}"
                buf.line(f"const {r.ctype(dt)} {name} = {r.expr(ir.substitute(load, point))};")  # type: ignore[arg-type]
                regs[load] = ir.Var(name, dt)
            bodies.append(with_registers(seg.body, regs))
        for m, body in enumerate(bodies):
            with buf.block("", opener="{"):
                if any(lp.var in scalar_reads(st) for st in body):
                    buf.line(f"const int {v} = {at[m]};")
                r.body_with_privates(buf, body, seg.private)
    with buf.indent(), buf.block(f"for (int {k} = {k}_first; {k} < {trip}; {k} += blockDim.x)"):
        buf.lines(r.loop_var_lines(seg, k_names))
        r.body_with_privates(buf, seg.body, seg.private)
    buf.line("}")
