"""Row programs of the Triton target: a parallel nest whose body walks the
contiguous dimension of a row with inner loops (softmax, layer norm, RMS norm,
row sums, log-softmax) runs ONE program per row, each inner loop as
``BLOCK_N``-wide chunks of ``tl.arange`` over the row, reductions into
private scalars as vector partials combined with ``tl.sum`` / ``tl.max`` /
``tl.min`` after the loop, stores as masked vector stores. Rows longer than a
block loop over chunks (one pass per source loop: the two- or three-pass
form of the source).

``targets.rows.row_nest`` recognises the pattern; anything else keeps the
general tile path of ``targets.triton_kernels``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from targets.rows import ArgUpdate, arg_update, loop_chain, reduction, row_nest
from targets.triton_expr import DeviceExpr, HostExpr, UnsupportedExpr, dev_dtype, fold, literal, py_name
from targets.triton_kernels import Lines, _Emitter
from targets.triton_partials import IDENTITY
from translate import ir
from translate.irquery import scalar_reads
from translate.partition import DeviceNest

__all__ = ["RowEmitter", "row_nest"]


@dataclass
class _RowExpr(DeviceExpr):
    """Device expressions whose loads are shared while ``memo`` is set: in the
    one-chunk form every inner loop covers the same row, so ``x[i, j]`` read by
    three loops is loaded once (no array the nest reads is written in it)."""

    memo: dict[str, str] | None = None
    stable: set[str] = field(default_factory=set)  # names whose value is fixed for the whole program
    emit_line: Callable[[str], None] | None = None

    def visit_Load(self, e: ir.Load) -> str:
        text = super().visit_Load(e)
        reads = set().union(*(scalar_reads(i) for i in e.index)) if e.index else set()
        if self.memo is None or self.emit_line is None or not reads <= self.stable:
            return text
        if text not in self.memo:
            self.memo[text] = f"row_ld{len(self.memo) + 1}"
            self.emit_line(f"{self.memo[text]} = {text}")
        return self.memo[text]


class RowEmitter(_Emitter):
    """A ``DeviceNest`` that ``row_nest`` accepted, as one program per row. Two
    forms behind the ``ONE_CHUNK`` constexpr: the row fits one block (each inner
    loop straight-line, loads shared between loops) or chunked loops."""

    def __init__(self, kernel: ir.Kernel, nest: DeviceNest, host: HostExpr) -> None:
        super().__init__(kernel)
        self.nest = nest
        self.host = host
        self.dev = _RowExpr(kernel)
        self.header: tuple[str, str, str] | None = None  # the inner loop range the shared loads belong to

    def emit(self) -> tuple[str, list[str]]:
        nest = self.nest
        self.add_arrays(nest.arrays)
        self.add_scalars(nest.scalars_in)
        trips = [(f"{py_name(lp.var)}_trip", lp) for lp in nest.loops]
        extra = [t for t, _ in trips] + ["BLOCK_N: tl.constexpr", "ONE_CHUNK: tl.constexpr"]
        body = Lines()
        body.level = 1
        self.out = body
        body("row = tl.program_id(0).to(tl.int64)")
        rem = "row"
        for pos, (name, lp) in enumerate(reversed(trips)):  # the innermost loop varies fastest
            last = pos == len(trips) - 1
            k = rem if last else f"{rem} % {name}"
            body(f"{py_name(lp.var)} = {self.dev.typed(lp.start, ir.DType.I64)} + "
                 f"{self.dev.typed(lp.step, ir.DType.I64)} * ({k})"
                 if fold(lp.start) != ir.Const(0, lp.start.dtype) or fold(lp.step) != ir.Const(1, lp.step.dtype)
                 else f"{py_name(lp.var)} = {k}")
            if not last:
                body(f"rem = {rem} // {name}")
                rem = "rem"
        body("cols = tl.arange(0, BLOCK_N)")
        body("zero_lanes = tl.zeros([BLOCK_N], tl.int64)  # broadcasts row-invariant addresses")
        temps = {s.target.name for lp in nest.body if isinstance(lp, ir.Loop) for s in lp.body
                 if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) and reduction(s) is None}
        nest_vars = {lp.var for lp in nest.loops}
        for single in (True, False):
            header = "if ONE_CHUNK:  # the row fits one block: straight-line, each element loaded once" \
                if single else "else:  # chunked loops over the row"
            with body.block(header):
                for name in nest.private:  # loop temporaries are vectors made in their loop
                    if name not in temps:
                        body(f"{py_name(name)} = tl.zeros([], {dev_dtype(self.var_dtype(name))})")
                self.dev.memo = {} if single else None
                self.dev.emit_line = body
                self.header = None
                for s in nest.body:
                    if isinstance(s, ir.Loop):
                        self.dev.stable = nest_vars | set(nest.scalars_in) | {c.var for c in loop_chain(s)}
                        self.row_loop(s, single)
                    else:
                        self.scalar_stmt(s)
        self.dev.memo = None
        head = Lines()
        head("@triton.jit")
        head(f"def {nest.name}({', '.join(self.params + extra)}):")
        head.level = 1
        origin = f"{self.kernel.origin.path}:{nest.line}" if nest.line else str(self.kernel.origin)
        loops = ", ".join(lp.var for lp in nest.loops)
        head(f'"""Row program for the nest at {origin}: one program per ({loops}), the inner loops as')
        head('BLOCK_N-wide vectors over the contiguous dimension, reductions through tl.sum/tl.max."""')
        for p in self.prologue:
            head(p)
        return head.text() + body.text(), self.launch_lines(trips)

    def scalar_stmt(self, s: ir.Stmt) -> None:
        self.dev.mask = None
        self.dev.vector = set()
        self.dev.stable = {lp.var for lp in self.nest.loops} | set(self.nest.scalars_in)
        if not isinstance(s, ir.Assign):
            raise UnsupportedExpr(s, "row program: statement kind")
        if isinstance(s.target, ir.Var):
            dt = self.var_dtype(s.target.name)
            self.out(f"{py_name(s.target.name)} = {self.value(s.value, dt)}")
        else:
            decl = self.kernel.param(s.target.array)
            off = self.dev.offset(s.target.array, s.target.index)
            self.out(f"tl.store({py_name(s.target.array)} + {off}, {self.value(s.value, decl.dtype)})")

    def row_loop(self, lp: ir.Loop, single: bool = False) -> None:
        """One inner loop (or a perfect chain of them, flattened into one lane index)
        as BLOCK_N-wide chunks."""
        out = self.out
        chain = loop_chain(lp)
        inner = chain[-1]
        j = py_name(inner.var)
        bounds = [(self.dev.typed(c.start, ir.DType.I64), self.dev.typed(c.stop, ir.DType.I64)) for c in chain]
        accs: dict[str, tuple[str, ir.Expr]] = {}
        args: list[ArgUpdate] = []
        for st in inner.body:
            red = reduction(st) if isinstance(st, ir.Assign) else None
            if red is not None and isinstance(st, ir.Assign) and isinstance(st.target, ir.Var):
                accs.setdefault(st.target.name, red)
            upd = arg_update(st)
            if upd is not None and all(a.best != upd.best for a in args):
                args.append(upd)
        for name, (op, _) in accs.items():
            dt = self.var_dtype(name)
            out(f"{py_name(name)}_acc = tl.full([BLOCK_N], {literal(float(IDENTITY[op]), dt, True)}, "
                f"{dev_dtype(dt)})" if dt.is_float else
                f"{py_name(name)}_acc = tl.full([BLOCK_N], {self._int_identity(op, dt)}, {dev_dtype(dt)})")
        for a in args:  # per-lane best, its index and the lane's iteration that found it
            b, w = py_name(a.best.name), py_name(a.where.name)
            out(f"{b}_acc = tl.zeros([BLOCK_N], {dev_dtype(a.best.dtype)}) + {b}")
            out(f"{w}_acc = tl.zeros([BLOCK_N], {dev_dtype(a.where.dtype)}) + {w}")
            out(f"{b}_it = tl.full([BLOCK_N], -1, tl.int64)")
        mask = f"{j}_mask"
        if len(chain) == 1:
            lo, hi = bounds[0]
            step_var, total, first = j, hi, lo
        else:
            step_var = f"{j}_flat"
            trips = [f"({hi} - {lo})" for lo, hi in bounds]
            out(f"{j}_count = {' * '.join(trips)}  # the {len(chain)} loops flattened, the innermost fastest")
            total, first = f"{j}_count", "0"
        if single:
            key = (j, *[t for b in bounds for t in b])
            if key != self.header:  # another row range: the shared loads no longer apply
                self.header = key
                if self.dev.memo:
                    self.dev.memo = {}
            out(f"{step_var} = {first} + cols")
            self.chunk_body(chain, bounds, accs, args, mask, total)
        else:
            with out.block(f"for {step_var}_0 in range({first}, {total}, BLOCK_N):"):
                out(f"{step_var} = {step_var}_0 + cols")
                self.chunk_body(chain, bounds, accs, args, mask, total)
        self.dev.vector = set()
        self.dev.mask = None
        for name, (op, _) in accs.items():
            v = py_name(name)
            if op == "add":
                out(f"{v} = {v} + tl.sum({v}_acc, axis=0)")
            else:
                red, fn = ("tl.max", "tl.maximum") if op == "max" else ("tl.min", "tl.minimum")
                out(f"{v} = {fn}({v}, {red}({v}_acc, axis=0))")
        for a in args:
            self.arg_combine(a)

    def arg_combine(self, a: ArgUpdate) -> None:
        """Lanes to one result: the lanes holding the best value (a NaN when any lane
        holds one), of those the one that found it first; its index."""
        out = self.out
        b, w = py_name(a.best.name), py_name(a.where.name)
        red = "tl.max" if a.better == "gt" else "tl.min"
        if a.nan:
            fill = '-float("inf")' if a.better == "gt" else 'float("inf")'
            out(f"{b}_nan = {b}_acc != {b}_acc")
            out(f"{b}_any_nan = tl.max({b}_nan.to(tl.int32), axis=0) > 0")
            out(f"{b}_top = {red}(tl.where({b}_nan, {fill}, {b}_acc), axis=0)")
            out(f"{b}_cand = tl.where({b}_any_nan, {b}_nan, {b}_acc == {b}_top)")
            out(f'{b} = tl.where({b}_any_nan, float("nan"), {b}_top).to({dev_dtype(a.best.dtype)})')
        else:
            out(f"{b} = {red}({b}_acc, axis=0)")
            out(f"{b}_cand = {b}_acc == {b}")
        out(f"{b}_first = tl.min(tl.where({b}_cand, {b}_it, {2**62}), axis=0)")
        out(f"{w} = tl.max(tl.where({b}_cand & ({b}_it == {b}_first), {w}_acc, {-(2**62)}), axis=0)"
            f".to({dev_dtype(a.where.dtype)})")

    def chunk_body(self, chain: list[ir.Loop], bounds: list[tuple[str, str]], accs: dict[str, tuple[str, ir.Expr]],
                   args: list[ArgUpdate], mask: str, total: str) -> None:
        out = self.out
        inner = chain[-1]
        j = py_name(inner.var)
        if len(chain) == 1:
            out(f"{mask} = {j} < {total}")
            it = j
        else:
            it = f"{j}_flat"
            out(f"{mask} = {it} < {total}")
            rest = it
            for k in range(len(chain) - 1, -1, -1):
                lo, hi = bounds[k]
                v = py_name(chain[k].var)
                if k == 0:
                    out(f"{v} = {lo} + {rest}")
                else:
                    out(f"{v} = {lo} + {rest} % ({hi} - {lo})")
                    out(f"{v}_rest = {rest} // ({hi} - {lo})")
                    rest = f"{v}_rest"
        self.dev.vector = {c.var for c in chain}
        self.dev.mask = mask
        by_best = {a.best.name: a for a in args}
        for s in inner.body:
            upd = arg_update(s)
            if upd is not None:
                a = by_best[upd.best.name]
                b, w = py_name(a.best.name), py_name(a.where.name)
                lane_best = ir.Var(f"{a.best.name}_acc", a.best.dtype)
                self.dev.vector.add(lane_best.name)
                cond = ir.substitute(s.cond, {a.best.name: lane_best})
                assert isinstance(cond, ir.BinOp | ir.UnOp)
                out(f"{b}_take = {mask} & ({self.value(cond, ir.DType.BOOL, '[BLOCK_N]')})")
                out(f"{b}_acc = tl.where({b}_take, {self.value(a.value, a.best.dtype, '[BLOCK_N]')}, {b}_acc)")
                out(f"{w}_acc = tl.where({b}_take, {self.value(a.index, a.where.dtype, '[BLOCK_N]')}, {w}_acc)")
                out(f"{b}_it = tl.where({b}_take, {it}, {b}_it)")
                continue
            assert isinstance(s, ir.Assign)
            if isinstance(s.target, ir.Load):
                decl = self.kernel.param(s.target.array)
                text = self.value(s.value, decl.dtype, "[BLOCK_N]")
                out(f"tl.store({self.dev.pointer(s.target.array, s.target.index)}, {text}, mask={mask})")
                continue
            name = s.target.name
            dt = self.var_dtype(name)
            if name in accs:
                op, contrib = accs[name]
                acc = f"{py_name(name)}_acc"
                text = self.value(contrib, dt, "[BLOCK_N]")
                if op == "add":
                    out(f"{acc} = {acc} + tl.where({mask}, {text}, 0)")
                else:
                    fn = "tl.maximum" if op == "max" else "tl.minimum"
                    out(f"{acc} = tl.where({mask}, {fn}({acc}, {text}), {acc})")
            else:
                out(f"{py_name(name)} = {self.value(s.value, dt, '[BLOCK_N]')}")
                self.dev.vector.add(name)

    @staticmethod
    def _int_identity(op: str, dt: ir.DType) -> str:
        bits = 63 if dt is ir.DType.I64 else 31
        return {"add": "0", "max": str(-(2**bits)), "min": str(2**bits - 1)}[op]

    def launch_lines(self, trips: list[tuple[str, ir.Loop]]) -> list[str]:
        nest = self.nest
        lines = [f"# {nest.name}: row program (one program per row, BLOCK_N-wide vectors along the row)"]
        for name, lp in trips:
            lines.append(f"{name} = max(0, {self.host_trip(lp)})")
        rows = " * ".join(n for n, _ in trips)
        chain = loop_chain(next(s for s in nest.body if isinstance(s, ir.Loop)))
        reads = set().union(*(scalar_reads(c.start) | scalar_reads(c.stop) for c in chain))
        if reads <= set(nest.scalars_in) | {d.name for d in self.kernel.params}:
            extent = " * ".join(f"max(1, {self.host(c.stop)} - ({self.host(c.start)}))" for c in chain)
        else:
            extent = "1024"
        args = self.launch_args + [n for n, _ in trips]
        lines += [
            f"if {rows} > 0:",
            f"    row_block = min(triton.next_power_of_2({extent}), 4096)",
            "    warps = 4 if row_block <= 1024 else (8 if row_block <= 2048 else 16)",
        ]
        lines.append(f"    {nest.name}[({rows},)]({', '.join(args)}, BLOCK_N=row_block,")
        lines.append(f"        ONE_CHUNK={extent} <= row_block, num_warps=warps)")
        return lines

    def host_trip(self, lp: ir.Loop) -> str:
        start, stop, step = self.host(lp.start), self.host(lp.stop), self.host(lp.step)
        if step == "1":
            return stop if start == "0" else f"{stop} - ({start})"
        self.host.helpers.add("_trip")
        return f"_trip({start}, {stop}, {step})"
