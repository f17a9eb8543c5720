"""Order audit: does the loop analysis's "parallel" hold on these inputs?

A parallel loop's iterations may run in any order, all at once, or interleaved.
The candidates here cannot show a wrong "parallel": Kokkos's Serial backend
runs a ``parallel_for`` in order, the Triton interpreter runs its programs one
after another, and CUDA does not run without a GPU. So a loop carrying a
dependence could be called validated and then race on a device.

The audit executes the analysed (and scheduled) kernel in Python twice on a
trial's inputs: once with every loop in source order, once with every loop the
schedule makes parallel run in reverse order. A dependence the analysis missed
(a later iteration reading what an earlier one wrote, two iterations writing one
element) changes the result; reductions only reassociate, which the reduction
tolerance allows. Comparing the two runs with each other, never with the
reference, keeps the audit independent of how faithfully this small
interpreter follows Fortran: a construct it cannot execute skips the audit
(``None``), and the trials themselves still compare every target with the
reference.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from translate import ir
from validation.compare import compare_output

MAX_STEPS = 1_000_000  # statements per run; larger trials are not audited (the audit is Python)


class _Skip(Exception):
    """The audit cannot run this kernel or these inputs."""


class _Exit(Exception):
    """A Return or an error call: the routine ends."""


Thunk = Callable[[], Any]
_BIN: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "pow": operator.pow,
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
    "ne": operator.ne,
}


class _Interp:
    """The kernel compiled once into Python closures over ``env`` and the arrays
    (a tree walk per statement is too slow for the trials' sizes)."""

    def __init__(self, kernel: ir.Kernel, scalars: Mapping[str, Any], arrays: Mapping[str, np.ndarray],
                 reverse: bool) -> None:
        self.kernel = kernel
        self.env: dict[str, Any] = {}
        for k, v in scalars.items():
            self.env[k] = v.item() if isinstance(v, np.generic) else v
        self.arrays = {k: np.array(v, copy=True, order="K") for k, v in arrays.items()}
        self.reverse = reverse
        self.steps = 0
        self.parallel_loops: list[ir.Loop] = []

    # ------------------------------------------------------------ expressions

    def expr(self, e: ir.Expr) -> Thunk:  # noqa: C901 - one case per node kind
        env = self.env
        if isinstance(e, ir.Const):
            c = e.value
            return lambda: c
        if isinstance(e, ir.Var):
            name = e.name
            return lambda: env[name]
        if isinstance(e, ir.Load):
            arr, at = self.arrays[e.array], self.index(e)
            return lambda: arr[at()]
        if isinstance(e, ir.Cast):
            f = self.expr(e.expr)
            conv = int if e.dtype.is_int else float if e.dtype.is_float else (lambda x: x)
            return lambda: conv(f())
        if isinstance(e, ir.UnOp):
            f = self.expr(e.operand)
            return (lambda: -f()) if e.op == "neg" else (lambda: not f())
        if isinstance(e, ir.Select):
            c, t, o = self.expr(e.cond), self.expr(e.if_true), self.expr(e.if_false)
            return lambda: t() if c() else o()
        if isinstance(e, ir.BinOp):
            a, b = self.expr(e.lhs), self.expr(e.rhs)
            if e.op == "and":
                return lambda: a() and b()
            if e.op == "or":
                return lambda: a() or b()
            if e.op == "div":
                return (lambda: ir.c_div(int(a()), int(b()))) if e.dtype.is_int else (lambda: a() / b())
            if e.op == "mod":
                return (lambda: ir.c_mod(int(a()), int(b()))) if e.dtype.is_int else (lambda: math.fmod(a(), b()))
            op = _BIN.get(e.op)
            if op is None:
                raise _Skip(f"operator {e.op}")
            return lambda: op(a(), b())
        if isinstance(e, ir.Call):
            args = [self.expr(x) for x in e.args]
            call = e

            def f() -> Any:
                return ir.evaluate(ir.Call(call.fn, tuple(ir.Const(g(), x.dtype) for g, x in zip(args, call.args,
                                                                                                 strict=True)),
                                           call.dtype), {})
            return f
        raise _Skip(f"expression {type(e).__name__}")

    def index(self, e: ir.Load) -> Thunk:
        arr = self.arrays[e.array]
        if len(e.index) != arr.ndim:
            raise _Skip(f"{e.array} indexed with {len(e.index)} subscripts")
        parts, shape = [self.expr(i) for i in e.index], arr.shape

        def at() -> tuple[int, ...]:
            idx = tuple(int(g()) for g in parts)
            for i, n in zip(idx, shape, strict=True):
                if not 0 <= i < n:  # numpy would wrap a negative index
                    raise _Skip(f"{e.array}{list(idx)} is outside the allocated {shape}")
            return idx
        return at

    # ------------------------------------------------------------ statements

    def block(self, stmts: tuple[ir.Stmt, ...]) -> Callable[[], None]:
        parts = [self.stmt(s) for s in stmts]

        def run() -> None:
            self.steps += len(parts)
            if self.steps > MAX_STEPS:
                raise _Skip(f"more than {MAX_STEPS} statements")
            for f in parts:
                f()
        return run

    def stmt(self, s: ir.Stmt) -> Callable[[], None]:
        env = self.env
        if isinstance(s, ir.Assign):
            val = self.expr(s.value)
            if isinstance(s.target, ir.Load):
                arr, at = self.arrays[s.target.array], self.index(s.target)

                def store() -> None:
                    arr[at()] = val()
                return store
            name, dt = s.target.name, s.target.dtype
            conv = int if dt.is_int else float if dt.is_float else (lambda x: x)

            def assign() -> None:
                env[name] = conv(val())
            return assign
        if isinstance(s, ir.If):
            cond, then, orelse = self.expr(s.cond), self.block(s.then), self.block(s.orelse)
            return lambda: then() if cond() else orelse()
        if isinstance(s, ir.Loop):
            return self.loop(s)
        if isinstance(s, ir.While):
            test, body = self.expr(s.cond), self.block(s.body)

            def repeat() -> None:
                for _ in range(MAX_STEPS):
                    if not test():
                        return
                    body()
                raise _Skip("a DO WHILE ran past the audit's step limit")
            return repeat
        if isinstance(s, (ir.Return, ir.ErrorCall)) or (isinstance(s, ir.HostCall) and s.kind == "stop"):
            def leave() -> None:
                raise _Exit
            return leave
        if isinstance(s, ir.HostCall):  # host work outside the region's data: nothing to replay
            return lambda: None
        raise _Skip(f"statement {type(s).__name__}")

    def loop(self, lp: ir.Loop) -> Callable[[], None]:
        start, stop, step, body = self.expr(lp.start), self.expr(lp.stop), self.expr(lp.step), self.block(lp.body)
        env, var = self.env, lp.var
        backwards = lp.kind == ir.LoopKind.PARALLEL and self.reverse

        def run() -> None:
            lo, hi, st = int(start()), int(stop()), int(step())
            if st == 0:
                raise _Skip("loop step 0")
            values = range(lo, hi, st)
            if backwards and len(values) > 1:
                values = values[::-1]
                if lp not in self.parallel_loops:
                    self.parallel_loops.append(lp)
            for v in values:
                env[var] = v
                body()
        return run


def _execute(kernel: ir.Kernel, scalars: Mapping[str, Any], arrays: Mapping[str, np.ndarray],
             reverse: bool) -> tuple[dict[str, np.ndarray], list[ir.Loop]]:
    it = _Interp(kernel, scalars, arrays, reverse)
    try:
        it.block(kernel.body)()
    except _Exit:
        pass
    except _Skip:
        raise
    except Exception as exc:  # noqa: BLE001 - anything this interpreter does not follow skips the audit
        raise _Skip(f"{type(exc).__name__}: {exc}") from exc
    out = {p.name: it.arrays[p.name] if isinstance(p, ir.Array) else np.asarray(it.env.get(p.name, np.nan))
           for p in kernel.params if p.intent.writes}
    if kernel.result is not None:
        out["result"] = np.asarray(it.env.get(kernel.name, np.nan))
    return out, it.parallel_loops


def audit_order(kernel: ir.Kernel, scalars: Mapping[str, Any], arrays: Mapping[str, np.ndarray],
                reduces: bool, tolerance: tuple[float, float] | None = None) -> str | None:
    """A reason when running the kernel's parallel loops in reverse changes its
    outputs on these inputs (the analysis called a dependent loop parallel);
    ``None`` when it does not, or when the audit cannot run here."""
    if not any(isinstance(n, ir.Loop) and n.kind == ir.LoopKind.PARALLEL for s in kernel.body for n in ir.walk(s)):
        return None
    local = {}
    for p in kernel.locals:  # local arrays (temporaries, per-iteration copies) start as NaN in both runs
        if isinstance(p, ir.Array):
            try:
                shape = tuple(max(1, int(ir.evaluate(e, scalars))) for e in p.shape)  # type: ignore[arg-type]
            except (KeyError, TypeError, ValueError, ArithmeticError):
                return None
            local[p.name] = np.full(shape, np.nan if p.dtype.is_float else 0,
                                    dtype=np.dtype(p.dtype.numpy), order="F" if p.layout == ir.Layout.LEFT else "C")
    arrays = {**arrays, **local}
    try:
        forward, _ = _execute(kernel, scalars, arrays, reverse=False)
        backward, loops = _execute(kernel, scalars, arrays, reverse=True)
    except _Skip:
        return None
    if not loops:
        return None
    bad = []
    for name, ref in forward.items():
        decl = next((p for p in kernel.params if p.name == name), None)
        dtype = decl.dtype if decl is not None else kernel.result or ir.DType.F64
        cmp = compare_output(name, decl, dtype, ref, backward[name], reduces, tolerance=tolerance)
        if not cmp.ok and not cmp.inconclusive:
            bad.append(cmp.reason)
    if not bad:
        return None
    where = ", ".join(f"loop {lp.var} (line {lp.line})" for lp in loops)
    return (f"the loop analysis is wrong for these inputs: running the parallel loops ({where}) in reverse "
            f"order changes the result (reverse order as 'candidate', source order as 'reference': {bad[0]}); "
            "a parallel translation would race")
