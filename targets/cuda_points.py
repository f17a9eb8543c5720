"""CUDA: a 1-D nest without reductions whose threads each run several iterations a block
apart (``Schedule.run_length``, by default ``CudaDefaults.points_per_thread``). A block covers ``n * blockDim.x``
consecutive iterations,
so every load and store stays coalesced; where all ``n`` are in range their bodies are
written out without bounds checks, and the loads each body makes before it writes are
issued for all ``n`` iterations first (``hoisted_loads``), so a thread keeps ``n`` times
the bytes in flight. The loop is parallel (no iteration reads what another writes), so
moving a load of one iteration above the stores of another is legal.

Also here: 1-D fp64 nests that run their two iterations per thread as one ``double2`` access
per array (``vector_pairs``), and 2-D nests running two neighbouring outer iterations per
thread (``Schedule.row_pairs``, ``paired_rows``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from targets.base import CodeBuffer
from targets.cstyle import NARROW
from targets.defaults import CUDA
from targets.planes import steady_loads
from translate import ir
from translate.irquery import arrays_written, scalar_reads
from translate.partition import DeviceNest

if TYPE_CHECKING:
    from targets.cuda import CudaRenderer



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
        firsts = [f"{k}_first" + (f" + {m} * blockDim.x" if m else "") for m in range(n)]
        hoisted_points(r, buf, seg, lp, [r.offset(lp, f) if lp.var in k_names else f for f in firsts])
    with buf.indent(), buf.block(f"for (int {k} = {k}_first; {k} < {trip}; {k} += blockDim.x)"):
        buf.lines(r.loop_var_lines(seg, k_names))
        r.body_with_privates(buf, seg.body, seg.private)
    buf.line("}")


def hoisted_points(r: CudaRenderer, buf: CodeBuffer, seg: DeviceNest, lp: ir.Loop, values: list[str]) -> None:
    """The nest's body once per value of ``lp``'s variable in ``values`` (``lp_m``), the loads
    each makes before it writes (``hoisted_loads``) issued for all of them first."""
    at = [r.var(f"{lp.var}_{m}") for m in range(len(values))]
    for name, value in zip(at, values, strict=True):
        buf.line(f"const int {name} = {value};")
    loads = hoisted_loads(seg)
    counts = Counter(x.array for x in loads)
    bodies = []
    for m in range(len(values)):
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
        _point_body(r, buf, seg, body, lp, at[m])


def _point_body(r: CudaRenderer, buf: CodeBuffer, seg: DeviceNest, body: tuple[ir.Stmt, ...], lp: ir.Loop,
                value: str) -> None:
    """One iteration's ``body`` in a block of its own, ``lp``'s variable set to ``value`` where
    the body still reads it."""
    with buf.block("", opener="{"):
        if any(lp.var in scalar_reads(st) for st in body):
            buf.line(f"const int {r.var(lp.var)} = {value};")
        r.body_with_privates(buf, body, seg.private)


def row_pairs(r: CudaRenderer, seg: DeviceNest) -> bool:
    """A 2-D nest without reductions that is given neither a block shape nor a count of
    iterations per thread by the schedule: ``CudaDefaults.row_pairs`` outer iterations per thread
    where the schedule asks for them (``Schedule.row_pairs``). Asked only of nests that walk no
    rows (``targets.cuda_mapping`` tries plane walks first)."""
    return (r.schedule.row_pairs and len(seg.loops) == 2 and not seg.reductions and r.schedule.run_length == 0
            and r.schedule.block_rows == 0)


def paired_rows(r: CudaRenderer, buf: CodeBuffer, seg: DeviceNest, order: list[ir.Loop],
                k_names: Mapping[str, str]) -> None:
    """The body of a 2-D nest kernel whose threads each run ``CudaDefaults.row_pairs`` neighbouring
    iterations of the outer loop (blockIdx.y covers runs of them), the loads of all issued
    first; a thread per iteration of the inner loop, grid-strided along x."""
    inner, outer = order
    vi, vo = r.var(inner.var), r.var(outer.var)
    ki, ko = k_names.get(inner.var, vi), k_names.get(outer.var, vo)
    n = CUDA.row_pairs
    buf.line(f"// {n} neighbouring {outer.var} per thread: their loads are issued before their stores")
    with buf.block(r.grid_loop(ki, f"{vi}_trip")):
        if inner.var in k_names:
            buf.line(f"const int {vi} = {r.offset(inner, ki)};")
        runs = f"for (int {ko}_first = {n} * blockIdx.y; {ko}_first < {vo}_trip; {ko}_first += {n} * gridDim.y)"
        with buf.block(runs):
            with buf.block(f"if ({ko}_first + {n - 1} < {vo}_trip)", closer="} else {"):
                firsts = [f"{ko}_first" + (f" + {m}" if m else "") for m in range(n)]
                hoisted_points(r, buf, seg, outer, [r.offset(outer, f) if outer.var in k_names else f for f in firsts])
            with buf.indent(), buf.block(f"for (int {ko} = {ko}_first; {ko} < {vo}_trip; ++{ko})"):
                if outer.var in k_names:
                    buf.line(f"const int {vo} = {r.offset(outer, ko)};")
                r.body_with_privates(buf, seg.body, seg.private)
            buf.line("}")


def _unit_index(e: ir.Expr, var: str) -> bool:
    """``e`` is ``var``, ``var + c``, ``c + var`` or ``var - c`` with ``c`` free of ``var``: one
    element further per iteration."""

    def free(x: ir.Expr) -> bool:
        return var not in scalar_reads(x) and not any(isinstance(n, ir.Load) for n in ir.walk(x))

    if isinstance(e, ir.Var):
        return e.name == var
    if not isinstance(e, ir.BinOp) or e.op not in ("add", "sub"):
        return False
    if isinstance(e.lhs, ir.Var) and e.lhs.name == var:
        return free(e.rhs)
    return e.op == "add" and isinstance(e.rhs, ir.Var) and e.rhs.name == var and free(e.lhs)


def vector_pairs(r: CudaRenderer, seg: DeviceNest, points: int) -> dict[str, ir.Load] | None:
    """The one access of each array (by array, in body order) of a 1-D nest that runs two
    consecutive iterations per thread as one 16-byte access per array (``Schedule.vectors``, at
    ``points`` = two points per thread); None for other nests. Needed: no reductions, step 1, a body of plain
    assignments, every array 1-D fp64 and read and written at one subscript that moves one
    element per iteration, each written by one statement and not read after it."""
    if not r.schedule.vectors or len(seg.loops) != 1 or seg.reductions or points != 2:
        return None
    lp = seg.loops[0]
    if lp.step != ir.Const(1, lp.step.dtype):
        return None
    accesses: dict[str, ir.Load] = {}
    written: set[str] = set()
    for s in seg.body:
        if not isinstance(s, ir.Assign):
            return None
        target = [s.target] if isinstance(s.target, ir.Load) else []
        for load in [n for n in ir.walk(s.value) if isinstance(n, ir.Load)] + target:
            arr = r.array(load.array)
            if (len(load.index) != 1 or arr.dtype is not ir.DType.F64 or len(arr.shape) != 1
                    or not _unit_index(load.index[0], lp.var) or load.array in written
                    or accesses.setdefault(load.array, load) != load):
                return None
        written |= {t.array for t in target}
    return accesses if written else None


def paired_points(r: CudaRenderer, buf: CodeBuffer, seg: DeviceNest, k_names: Mapping[str, str],
                  accesses: Mapping[str, ir.Load]) -> None:
    """The body of a ``vector_pairs`` nest: thread t runs iterations 2t and 2t + 1 (shifted by
    one, the first iteration run on its own, where the arrays start 8 bytes past a 16-byte
    boundary) as double2 loads and stores when every array shares that alignment; one at a
    time at the end and where the alignments differ. Where two or more arrays are stored, the
    loads keep the stores' order (``kt_load2_ordered``: faster on vswap than the compiler's own
    order; benchmarks/probes/vswap_load_order.cu, docs/measurements/tuning-evidence.md)."""
    lp = seg.loops[0]
    v, dt = r.var(lp.var), r.dtype_of(lp.var)
    k, trip = k_names.get(lp.var, v), f"{v}_trip"
    stores = [s for s in seg.body if isinstance(s, ir.Assign) and isinstance(s.target, ir.Load)]
    stored = sorted({s.target.array for s in stores if isinstance(s.target, ir.Load)})
    first = {lp.var: ir.Var(f"{v}_lo", dt) if lp.var in k_names else ir.Const(0, dt)}
    odd = [f"((reinterpret_cast<unsigned long long>(&{r.expr(ir.substitute(x, first))}) >> 3) & 1u)"
           for x in accesses.values()]
    buf.line("// two iterations per thread as one 16-byte access of each array where all of them share the")
    buf.line("// alignment of the first iteration (which runs on its own if they start 8 bytes past 16)")
    buf.line(f"const unsigned kt_odd = {odd[0]};")
    buf.line(f"const bool kt_pairs = {' && '.join(f'kt_odd == {o}' for o in odd[1:]) or 'true'};")
    buf.line("const int kt_head = kt_pairs ? (int)kt_odd : 0;")
    buf.line(f"const int {k}_first = kt_head + 2 * (blockIdx.x * blockDim.x + threadIdx.x);")
    with buf.block(f"if (kt_pairs && {k}_first + 1 < {trip})", closer="} else {"):
        buf.line(f"const int {v}_0 = {r.offset(lp, f'{k}_first') if lp.var in k_names else f'{k}_first'};")
        here = {lp.var: ir.Var(f"{v}_0", dt)}
        ptr = {a: f"&{r.expr(ir.substitute(x, here))}" for a, x in accesses.items()}
        regs: list[dict[ir.Load, ir.Var]] = [{}, {}]
        # two or more arrays stored: every load in the order of the stores (read-only arrays first)
        ordered = len(stored) > 1
        order = [a for a in accesses if a not in stored] + stored if ordered else list(accesses)
        for a in order:
            x = accesses[a]
            load = (f"{r.use('kt_load2_ordered')}({ptr[a]})" if ordered
                    else f"*reinterpret_cast<const double2*>({ptr[a]})")
            buf.line(f"const double2 {r.var(a)}_v = {load};")
            for m in range(2):
                regs[m][x] = ir.Var(f"{r.var(a)}_v.{'xy'[m]}", ir.DType.F64)
        for a in stored:
            buf.line(f"double {r.var(a)}_out0, {r.var(a)}_out1;")
        for m in range(2):
            body = tuple(ir.Assign(ir.Var(f"{r.var(s.target.array)}_out{m}", ir.DType.F64)
                                   if isinstance(s.target, ir.Load) else s.target, ir.replace_exprs(s.value, regs[m]))
                         for s in seg.body if isinstance(s, ir.Assign))
            _point_body(r, buf, seg, body, lp, f"{v}_0" + (f" + {m}" if m else ""))
        for a in stored:
            buf.line(f"*reinterpret_cast<double2*>({ptr[a]}) = make_double2({r.var(a)}_out0, {r.var(a)}_out1);")
    with buf.indent(), buf.block(f"for (int {k} = {k}_first; {k} < {k}_first + 2 && {k} < {trip}; ++{k})"):
        buf.lines(r.loop_var_lines(seg, k_names))
        r.body_with_privates(buf, seg.body, seg.private)
    buf.line("}")
    with buf.block("if (kt_head == 1 && blockIdx.x == 0 && threadIdx.x == 0)"):
        buf.line(f"const int {k} = 0;  // the first iteration, before the first pair")
        buf.lines(r.loop_var_lines(seg, k_names))
        r.body_with_privates(buf, seg.body, seg.private)
