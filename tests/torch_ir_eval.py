"""A small reference interpreter of IR Kernels for the PyTorch frontend tests.

The kernel is compiled to a Python function (loops, ifs, assignments; loads
and stores on float64/int64 numpy arrays; ``Extern`` matmul through numpy and
convolutions through ``torch.nn.functional``) and run sequentially. Parameters
are bound the way the frontend's bindings say: ``input:<i>``, ``param:<key>``,
``output:<i>``, ``dim:<i>:<axis>``, ``dim:param:<key>:<axis>``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from translate import ir


def _cdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _cmod(a: int, b: int) -> int:
    return a - _cdiv(a, b) * b


def _fdiv(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _expm1(x: float) -> float:
    try:
        return math.expm1(x)
    except OverflowError:
        return math.inf


def _log(x: float) -> float:
    if x == 0:
        return -math.inf
    if x < 0 or x != x:
        return math.nan
    return math.log(x) if x != math.inf else math.inf


def _log1p(x: float) -> float:
    return _log(1.0 + x) if x <= -1 or x != x or x == math.inf else math.log1p(x)


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else (math.inf if x == math.inf else math.nan)


def _pow(a: float, b: float) -> float:
    try:
        r = math.pow(a, b)
    except (ValueError, OverflowError):
        return math.nan if a < 0 else math.inf
    return r


def _tanh(x: float) -> float:
    return math.tanh(x)


def _fmax(a: float, b: float) -> float:
    if a != a or b != b:
        return math.nan
    return a if a >= b else b


def _fmin(a: float, b: float) -> float:
    if a != a or b != b:
        return math.nan
    return a if a <= b else b


_CALLS = {
    "abs": "abs", "sqrt": "_sqrt", "exp": "_exp", "log": "_log", "log10": "math.log10", "sin": "math.sin",
    "cos": "math.cos", "tan": "math.tan", "asin": "math.asin", "acos": "math.acos", "atan": "math.atan",
    "atan2": "math.atan2", "sinh": "math.sinh", "cosh": "math.cosh", "tanh": "_tanh", "min": "_fmin",
    "max": "_fmax", "floor": "math.floor", "ceil": "math.ceil", "erf": "math.erf", "log1p": "_log1p",
    "expm1": "_expm1",
}
_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def _name(n: str) -> str:
    return "v_" + n


class _Compiler:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def expr(self, e: ir.Expr) -> str:
        if isinstance(e, ir.Const):
            v = e.value
            if isinstance(v, float):
                return repr(v) if math.isfinite(v) else ("math.inf" if v > 0 else "-math.inf" if v < 0 else "math.nan")
            return repr(v)
        if isinstance(e, ir.Var):
            return _name(e.name)
        if isinstance(e, ir.Load):
            idx = ", ".join(self.expr(i) for i in e.index)
            return f"{_name(e.array)}[({idx}{',' if len(e.index) == 1 else ''})]"
        if isinstance(e, ir.Cast):
            inner = self.expr(e.expr)
            if e.dtype.is_float:
                return f"float({inner})"
            if e.dtype.is_int:
                return f"int({inner})"
            if e.dtype is ir.DType.BOOL:
                return f"bool({inner})"
            return inner
        if isinstance(e, ir.UnOp):
            return f"(-{self.expr(e.operand)})" if e.op == "neg" else f"(not {self.expr(e.operand)})"
        if isinstance(e, ir.Select):
            return f"({self.expr(e.if_true)} if {self.expr(e.cond)} else {self.expr(e.if_false)})"
        if isinstance(e, ir.Call):
            args = ", ".join(self.expr(a) for a in e.args)
            if e.fn in ("min", "max") and e.dtype.is_int:
                return f"{e.fn}({args})"
            if e.fn in ("floor", "ceil"):
                return f"float({_CALLS[e.fn]}({args}))"
            if e.fn not in _CALLS:
                raise NotImplementedError(f"intrinsic {e.fn}")
            return f"{_CALLS[e.fn]}({args})"
        if isinstance(e, ir.BinOp):
            a, b = self.expr(e.lhs), self.expr(e.rhs)
            if e.op in _CMP:
                return f"({a} {_CMP[e.op]} {b})"
            if e.op in ("and", "or"):
                return f"({a} {e.op} {b})"
            if e.op == "add":
                return f"({a} + {b})"
            if e.op == "sub":
                return f"({a} - {b})"
            if e.op == "mul":
                return f"({a} * {b})"
            if e.op == "div":
                return f"_cdiv({a}, {b})" if e.dtype.is_int else f"_fdiv({a}, {b})"
            if e.op == "mod":
                return f"_cmod({a}, {b})" if e.dtype.is_int else f"math.fmod({a}, {b})"
            if e.op == "pow":
                return f"({a} ** {b})" if e.dtype.is_int else f"_pow({a}, {b})"
        raise NotImplementedError(f"expression {e!r}")

    def stmt(self, s: ir.Stmt, pad: str) -> None:
        if isinstance(s, ir.Assign):
            if isinstance(s.target, ir.Var):
                self.lines.append(f"{pad}{_name(s.target.name)} = {self.expr(s.value)}")
            else:
                self.lines.append(f"{pad}{self.expr(s.target)} = {self.expr(s.value)}")
        elif isinstance(s, ir.Loop):
            self.lines.append(f"{pad}for {_name(s.var)} in range({self.expr(s.start)}, {self.expr(s.stop)}, "
                              f"{self.expr(s.step)}):")
            self.lines.append(f"{pad}    pass")
            for t in s.body:
                self.stmt(t, pad + "    ")
        elif isinstance(s, ir.If):
            self.lines.append(f"{pad}if {self.expr(s.cond)}:")
            self.lines.append(f"{pad}    pass")
            for t in s.then:
                self.stmt(t, pad + "    ")
            if s.orelse:
                self.lines.append(f"{pad}else:")
                self.lines.append(f"{pad}    pass")
                for t in s.orelse:
                    self.stmt(t, pad + "    ")
        elif isinstance(s, ir.Extern):
            ins = ", ".join(_name(n) for n in s.inputs)
            self.lines.append(f"{pad}_extern({s.op!r}, [{ins}], {_name(s.outputs[0])}, {dict(s.attrs)!r})")
        else:
            raise NotImplementedError(f"statement {type(s).__name__}")


def _extern(op: str, ins: list[np.ndarray], out: np.ndarray, attrs: dict[str, object]) -> None:
    if op == "matmul":
        a, b = ins
        if attrs.get("trans_a"):
            a = np.swapaxes(a, -1, -2)
        if attrs.get("trans_b"):
            b = np.swapaxes(b, -1, -2)
        out[...] = np.matmul(a, b).reshape(out.shape)
        return
    ts = [torch.from_numpy(np.ascontiguousarray(x)) for x in ins]
    x, w = ts[0], ts[1]
    bias = ts[2] if len(ts) > 2 else None
    kw = {"stride": attrs["stride"], "padding": attrs["padding"], "dilation": attrs["dilation"],
          "groups": attrs["groups"]}
    fn = {"conv1d": F.conv1d, "conv2d": F.conv2d, "conv3d": F.conv3d, "conv_transpose1d": F.conv_transpose1d,
          "conv_transpose2d": F.conv_transpose2d, "conv_transpose3d": F.conv_transpose3d}[op]
    if op.startswith("conv_transpose"):
        kw["output_padding"] = attrs["output_padding"]
    out[...] = fn(x, w, bias, **kw).numpy()  # type: ignore[operator]


def _np(v: object) -> np.ndarray:
    if isinstance(v, torch.Tensor):
        v = v.detach().to(torch.float64).numpy() if v.dtype.is_floating_point else v.detach().to(torch.int64).numpy()
    return np.asarray(v)


def evaluate(kernel: ir.Kernel, inputs: Sequence[object], state: Mapping[str, torch.Tensor],
             draws: Sequence[torch.Tensor] = ()) -> list[np.ndarray]:
    """Run ``kernel`` on the forward ``inputs``, the model's ``state`` (its tensors by key) and
    the random tensors the model drew; return the outputs in order, then the state outputs."""
    env: dict[str, object] = {}
    for p in kernel.params:
        kind, _, rest = (p.binding or "").partition(":")
        if kind == "input":
            v = inputs[int(rest)]
            env[p.name] = _np(v).astype(np.float64 if p.dtype.is_float else np.int64) if isinstance(p, ir.Array) \
                else (float(v) if p.dtype.is_float else v)  # type: ignore[arg-type]
        elif kind == "param":
            env[p.name] = _np(state[rest])
        elif kind == "random":
            env[p.name] = _np(draws[int(rest.split(":")[0])])
        elif kind == "dim":
            src, axis = rest.rsplit(":", 1)
            t = state[src.split(":", 1)[1]] if src.startswith("param:") else inputs[int(src)]
            env[p.name] = int(t.shape[int(axis)])  # type: ignore[union-attr]
    sizes = {k: v for k, v in env.items() if isinstance(v, int)}
    outs: list[tuple[int, str]] = []
    for d in (*kernel.params, *kernel.locals):
        if isinstance(d, ir.Array) and d.name not in env:
            shape = tuple(int(ir.evaluate(e, sizes)) for e in d.shape)  # type: ignore[arg-type]
            env[d.name] = np.full(shape, np.nan) if d.dtype.is_float else np.zeros(shape, np.int64)
            if (d.binding or "").startswith("output:"):
                outs.append((int(d.binding.split(":")[1]), d.name))  # type: ignore[union-attr]
            elif (d.binding or "").startswith("state:"):
                outs.append((1 << 20, d.name))
    comp = _Compiler()
    names = list(env)
    comp.lines.append(f"def _k({', '.join(_name(n) for n in names)}):")
    comp.lines.append("    pass")
    for s in kernel.body:
        comp.stmt(s, "    ")
    glb: dict[str, object] = {"math": math, "_cdiv": _cdiv, "_cmod": _cmod, "_fdiv": _fdiv, "_exp": _exp,
                              "_log": _log, "_log1p": _log1p, "_expm1": _expm1, "_sqrt": _sqrt, "_pow": _pow,
                              "_tanh": _tanh, "_fmax": _fmax, "_fmin": _fmin, "_extern": _extern}
    exec("\n".join(comp.lines), glb)  # noqa: S102 - the test's own generated code
    with np.errstate(all="ignore"):
        glb["_k"](*(env[n] for n in names))  # type: ignore[operator]
    return [env[name] for _, name in sorted(outs)]  # type: ignore[misc]
