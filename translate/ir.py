"""The intermediate representation shared by every frontend and every target.

Small frozen dataclasses that print and diff. Conventions:

* Loops are half-open and 0-based: Fortran ``do i = 1, n`` becomes
  ``Loop("i", 0, n, 1)`` and every use of ``i`` in the body is shifted
  (``i + 1`` where the source value is needed). A constant negative step keeps
  its sign: ``do i = n, 1, -1`` becomes ``Loop("i", n - 1, -1, -1)``. A loop
  whose step is not a compile-time constant is normalised by the frontend to a
  unit-step trip-count loop ``k in [0, trip)`` with the source variable
  recomputed as ``start + k * step``.
* ``Load.index`` holds one 0-based index per dimension, in the source's
  dimension order; the array's ``layout`` says how it linearises
  (LEFT = Fortran column-major, RIGHT = C row-major).
* Integer ``div`` truncates toward zero and ``mod`` takes the sign of the
  dividend (Fortran and C semantics, not Python's).
* Shapes are symbolic expressions over the kernel's parameters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from enum import StrEnum


class DType(StrEnum):
    F32 = "f32"
    F64 = "f64"
    I32 = "i32"
    I64 = "i64"
    BOOL = "bool"
    CHAR = "char"  # a single character (Fortran CHARACTER*1 flags such as TRANS)
    F16 = "f16"
    BF16 = "bf16"

    @property
    def is_float(self) -> bool:
        return self in (DType.F32, DType.F64, DType.F16, DType.BF16)

    @property
    def is_int(self) -> bool:
        return self in (DType.I32, DType.I64)

    @property
    def numpy(self) -> str:
        return {
            "f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64",
            "bool": "int32", "char": "S1", "f16": "float16", "bf16": "float32",
        }[self.value]

    @property
    def itemsize(self) -> int:
        """Bytes of one element as the targets store it."""
        return {"f32": 4, "f64": 8, "i32": 4, "i64": 8, "bool": 4, "char": 1, "f16": 2, "bf16": 2}[self.value]


class Layout(StrEnum):
    LEFT = "left"  # column-major: first index contiguous
    RIGHT = "right"  # row-major: last index contiguous


class Intent(StrEnum):
    IN = "in"
    OUT = "out"
    INOUT = "inout"

    @property
    def reads(self) -> bool:
        return self in (Intent.IN, Intent.INOUT)

    @property
    def writes(self) -> bool:
        return self in (Intent.OUT, Intent.INOUT)


class LoopKind(StrEnum):
    SERIAL = "serial"
    PARALLEL = "parallel"


@dataclass(frozen=True)
class Origin:
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Const:
    value: int | float | bool | str
    dtype: DType


@dataclass(frozen=True)
class Var:
    name: str
    dtype: DType


@dataclass(frozen=True)
class Load:
    array: str
    index: tuple[Expr, ...]
    dtype: DType


BINOPS = ("add", "sub", "mul", "div", "mod", "pow", "lt", "le", "gt", "ge", "eq", "ne", "and", "or")
UNOPS = ("neg", "not")
INTRINSICS = (
    "abs", "sqrt", "exp", "log", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "tanh", "min", "max", "sign", "floor", "ceil", "nint", "lsame",
    "erf", "log1p", "expm1",  # PyTorch frontend: gelu (erf form), softplus/log1p, elu/expm1
)


@dataclass(frozen=True)
class BinOp:
    op: str
    lhs: Expr
    rhs: Expr
    dtype: DType


@dataclass(frozen=True)
class UnOp:
    op: str
    operand: Expr
    dtype: DType


@dataclass(frozen=True)
class Call:
    """An intrinsic call; ``fn`` is one of INTRINSICS. ``lsame`` compares two
    characters case-insensitively (BLAS's LSAME)."""

    fn: str
    args: tuple[Expr, ...]
    dtype: DType


@dataclass(frozen=True)
class Select:
    cond: Expr
    if_true: Expr
    if_false: Expr
    dtype: DType


@dataclass(frozen=True)
class Cast:
    dtype: DType
    expr: Expr


Expr = Const | Var | Load | BinOp | UnOp | Call | Select | Cast

# ----------------------------------------------------------------- statements


@dataclass(frozen=True)
class Reduction:
    var: str
    op: str  # "add" | "mul" | "max" | "min" | "maxloc" | "minloc"
    dtype: DType
    # maxloc / minloc (translate.argreduce): ``loc`` rides along with ``var`` and holds the
    # iteration that first reached its extreme; between equal extremes the smaller loc is
    # the first where ``loc_first`` is "min" (a loop counting up), the larger where "max"
    loc: str = ""
    loc_dtype: DType = DType.I32
    loc_first: str = "min"

    @property
    def names(self) -> tuple[str, ...]:
        """The variables the reduction writes: ``var``, and ``loc`` of a pair."""
        return (self.var, self.loc) if self.loc else (self.var,)


def reduced(reductions: Iterable[Reduction]) -> set[str]:
    """Every variable ``reductions`` write (pairs' locs included)."""
    return {n for r in reductions for n in r.names}


@dataclass(frozen=True)
class Assign:
    target: Var | Load
    value: Expr


@dataclass(frozen=True)
class If:
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class Loop:
    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]
    kind: LoopKind = LoopKind.SERIAL
    reductions: tuple[Reduction, ...] = ()
    private: tuple[str, ...] = ()
    reason: str = ""  # why parallel or why not, in words
    directive: str | None = None  # "omp parallel do", "acc loop", "do concurrent"
    line: int = 0  # source line of the loop header
    # analysis: a serial loop whose one parallel loop inside may be moved outside (translate.interchange)
    swappable: bool = False
    # a serial loop that is a linear recurrence x(i) = a(i) * x(i - step) + b(i) (translate.scan):
    # a target may run it as a parallel scan
    scan: bool = False


@dataclass(frozen=True)
class While:
    """``DO WHILE (cond)``: the body runs while ``cond`` holds (a convergence loop). It is
    serial; the loops inside it are analysed as any others and run on the device from the
    host side where the condition reads no array."""

    cond: Expr
    body: tuple[Stmt, ...]
    line: int = 0


@dataclass(frozen=True)
class Return:
    """Early return from the routine (host side)."""


@dataclass(frozen=True)
class ErrorCall:
    """A call to an error handler (XERBLA and the like): reported on the host
    side, then the routine returns."""

    routine: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class HostCall:
    """Host-side work that is not translated and touches none of the region's arrays:
    ``kind`` "call" (a routine outside the translation: a timer, an I/O helper, called
    where the target can call it), "print" (WRITE/PRINT of scalars and text) or "stop"
    (STOP: the program ends). ``module`` is the callee's module ("" for an external
    procedure); ``writes`` the variables the call may change (passed by reference to a
    routine that may write them). It never appears inside a device nest."""

    kind: str
    routine: str
    args: tuple[Expr, ...]
    writes: tuple[str, ...] = ()
    module: str = ""
    line: int = 0


@dataclass(frozen=True)
class Extern:
    """A library operation on whole arrays that a target renders as a vendor
    library call or as a generated template (a tiled Triton matmul).

    ``op`` is one of EXTERN_OPS; ``inputs`` / ``outputs`` name arrays (RIGHT
    layout for PyTorch); ``attrs`` are sorted (key, value) pairs, e.g.
    ``(("trans_b", True),)`` for ``linear``'s weight or ``(("padding", (1, 1)),
    ("stride", (1, 1)))`` for a convolution. Semantics:

    * ``matmul``: out[..., m, n] = sum_k a[..., m, k] * b[..., k, n] (batched over
      leading dims; ``trans_a`` / ``trans_b`` read a or b transposed in its last two dims).
    * ``conv1d`` / ``conv2d`` / ``conv3d`` / ``conv_transpose{1,2,3}d``: torch semantics,
      inputs (x, weight[, bias]); attrs stride, padding, dilation, groups (and output_padding).
    """

    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: tuple[tuple[str, object], ...] = ()
    line: int = 0

    def attr(self, key: str, default: object = None) -> object:
        return dict(self.attrs).get(key, default)


EXTERN_OPS = ("matmul", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")

Stmt = Assign | If | Loop | While | Return | ErrorCall | HostCall | Extern

# -------------------------------------------------------------- declarations


@dataclass(frozen=True)
class Scalar:
    name: str
    dtype: DType
    intent: Intent = Intent.IN
    # where the value comes from when it is not a plain argument: "common:/blk/",
    # "module:name" or "program:name" (Fortran globals made explicit), "extent:<array>:<k>"
    # (extent k, 1-based, of an assumed-shape or allocatable array: the caller passes
    # size(array, k)); for PyTorch "input:<i>" (forward argument i), "param:<state_dict key>",
    # "output:<i>", "dim:<input i>:<axis>"
    binding: str | None = None
    # the value validation gives it when the workflow gives none (an extent inferred from the
    # accesses the routine makes), over the other parameters
    default: Expr | None = None


@dataclass(frozen=True)
class Array:
    name: str
    dtype: DType
    shape: tuple[Expr, ...]
    layout: Layout = Layout.LEFT
    intent: Intent = Intent.IN
    lower: tuple[Expr, ...] = ()  # source lower bounds, for documentation and shims
    binding: str | None = None
    allocatable: bool = False  # an ALLOCATABLE global: the program allocates it (with these bounds)
    complex: bool = False  # a COMPLEX array: dimension 0 (extent 2) holds the real and imaginary parts

    @property
    def rank(self) -> int:
        return len(self.shape)


Decl = Scalar | Array


@dataclass(frozen=True)
class Kernel:
    """A translated region: a routine whose parallel loop nests become device
    kernels and whose remaining scalar code runs on the host side."""

    name: str
    params: tuple[Decl, ...]
    locals: tuple[Decl, ...]
    body: tuple[Stmt, ...]
    origin: Origin
    result: DType | None = None  # function result type; the value is the local named ``name``
    notes: tuple[str, ...] = ()

    def param(self, name: str) -> Decl:
        for p in self.params + self.locals:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def arrays(self) -> tuple[Array, ...]:
        return tuple(p for p in self.params if isinstance(p, Array))


@dataclass(frozen=True)
class Opaque:
    """A region the frontend could not lower, kept with the reason."""

    name: str
    source: str
    reason: str
    origin: Origin
    signature: Kernel | None = None  # parameters, locals and result with an empty body, where declarable


@dataclass(frozen=True)
class Module:
    kernels: tuple[Kernel | Opaque, ...]
    language: str
    path: str


# ------------------------------------------------------------------- helpers


def children(node: object) -> Iterator[object]:
    """Direct child nodes (expressions and statements) of an IR node."""
    for f in fields(node):  # type: ignore[arg-type]
        value = getattr(node, f.name)
        if isinstance(value, tuple):
            yield from (v for v in value if _is_node(v))
        elif _is_node(value):
            yield value


def walk(node: object) -> Iterator[object]:
    """Pre-order walk over a node and everything below it."""
    yield node
    for child in children(node):
        yield from walk(child)


def _is_node(value: object) -> bool:
    return hasattr(value, "__dataclass_fields__") and not isinstance(value, (Reduction, Origin))


def substitute(node: object, mapping: Mapping[str, Expr]) -> object:
    """Replace every ``Var`` whose name is in ``mapping``."""
    if isinstance(node, Var):
        return mapping.get(node.name, node)
    return _rebuilt(node, lambda child: substitute(child, mapping))


def rename_array(node: object, old: str, new: str) -> object:
    """Every access of array ``old`` (loads, stores, library operations' operands) made one of ``new``."""
    if isinstance(node, Load) and node.array == old:
        return Load(new, tuple(rename_array(i, old, new) for i in node.index), node.dtype)  # type: ignore[misc]
    if isinstance(node, Extern):
        node = replace(node, inputs=tuple(new if n == old else n for n in node.inputs),
                       outputs=tuple(new if n == old else n for n in node.outputs))
    return _rebuilt(node, lambda child: rename_array(child, old, new))


def replace_exprs(node: object, mapping: Mapping[Expr, Expr]) -> object:
    """Replace every expression equal to a key of ``mapping`` (a load, say) by its value."""
    if _is_node(node) and node in mapping:  # type: ignore[operator]
        return mapping[node]  # type: ignore[index]
    return _rebuilt(node, lambda child: replace_exprs(child, mapping))


def _rebuilt(node: object, again: Callable[[object], object]) -> object:
    """``node`` with ``again`` applied to each child node (the same object when nothing changed)."""
    if not _is_node(node):
        return node
    changes = {}
    for f in fields(node):  # type: ignore[arg-type]
        value = getattr(node, f.name)
        if isinstance(value, tuple):
            new = tuple(again(v) for v in value)
        elif _is_node(value):
            new = again(value)
        else:
            continue
        if new != value:
            changes[f.name] = new
    return replace(node, **changes) if changes else node  # type: ignore[type-var]


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_mod(a: int, b: int) -> int:
    return a - c_div(a, b) * b


_EVAL_BIN = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "pow": lambda a, b: a**b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b, "and": lambda a, b: a and b, "or": lambda a, b: a or b,
}


def evaluate(expr: Expr, env: Mapping[str, int | float | str | bool]) -> int | float | str | bool:
    """Evaluate a scalar expression (shapes, trip counts) with source semantics."""
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, Var):
        if expr.name not in env:
            raise KeyError(f"no value for '{expr.name}'")
        return env[expr.name]
    if isinstance(expr, Cast):
        v = evaluate(expr.expr, env)
        return int(v) if expr.dtype.is_int else float(v) if expr.dtype.is_float else v
    if isinstance(expr, UnOp):
        v = evaluate(expr.operand, env)
        return -v if expr.op == "neg" else not v
    if isinstance(expr, Select):
        return evaluate(expr.if_true if evaluate(expr.cond, env) else expr.if_false, env)
    if isinstance(expr, BinOp):
        a, b = evaluate(expr.lhs, env), evaluate(expr.rhs, env)
        if expr.op == "div":
            return c_div(a, b) if expr.dtype.is_int else a / b  # type: ignore[arg-type,operator]
        if expr.op == "mod":
            return c_mod(a, b) if expr.dtype.is_int else math.fmod(a, b)  # type: ignore[arg-type]
        return _EVAL_BIN[expr.op](a, b)
    if isinstance(expr, Call):
        args = [evaluate(a, env) for a in expr.args]
        if expr.fn == "max":
            return max(args)  # type: ignore[type-var]
        if expr.fn == "min":
            return min(args)  # type: ignore[type-var]
        if expr.fn == "abs":
            return abs(args[0])  # type: ignore[arg-type]
        if expr.fn == "sign":
            return abs(args[0]) if args[1] >= 0 else -abs(args[0])  # type: ignore[arg-type,operator]
        if expr.fn == "lsame":
            return str(args[0]).upper() == str(args[1]).upper()
        return getattr(math, expr.fn)(*args)
    raise TypeError(f"cannot evaluate {type(expr).__name__}")


def dump(node: object, indent: int = 0) -> str:
    """A compact, readable rendering of IR for reports and debugging."""
    pad = "  " * indent
    if isinstance(node, Kernel):
        head = f"{pad}kernel {node.name}({', '.join(_decl(p) for p in node.params)})  # {node.origin}"
        return "\n".join([head, *(dump(s, indent + 1) for s in node.body)])
    if isinstance(node, Loop):
        extra = f" reduce({', '.join(f'{r.op}:{r.var}' + (f'@{r.loc}' if r.loc else '') for r in node.reductions)})" \
            if node.reductions else ""
        bounds = f"[{expr_str(node.start)}, {expr_str(node.stop)}) step {expr_str(node.step)}"
        head = f"{pad}{node.kind.value} for {node.var} in {bounds}{extra}"
        return "\n".join([head, *(dump(s, indent + 1) for s in node.body)])
    if isinstance(node, If):
        lines = [f"{pad}if {expr_str(node.cond)}:", *(dump(s, indent + 1) for s in node.then)]
        if node.orelse:
            lines += [f"{pad}else:", *(dump(s, indent + 1) for s in node.orelse)]
        return "\n".join(lines)
    if isinstance(node, Assign):
        return f"{pad}{expr_str(node.target)} = {expr_str(node.value)}"
    if isinstance(node, While):
        return "\n".join([f"{pad}while {expr_str(node.cond)}:", *(dump(s, indent + 1) for s in node.body)])
    if isinstance(node, Return):
        return f"{pad}return"
    if isinstance(node, ErrorCall):
        return f"{pad}error {node.routine}({', '.join(expr_str(a) for a in node.args)})"
    if isinstance(node, HostCall):
        return f"{pad}host {node.kind} {node.routine}({', '.join(expr_str(a) for a in node.args)})"
    return f"{pad}{node!r}"


def _decl(p: Decl) -> str:
    if isinstance(p, Array):
        return f"{p.intent.value} {p.dtype.value} {p.name}[{', '.join(expr_str(s) for s in p.shape)}]"
    return f"{p.intent.value} {p.dtype.value} {p.name}"


_SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "pow": "**", "lt": "<",
        "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "and": "&&", "or": "||"}


def expr_str(e: object) -> str:
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Load):
        return f"{e.array}[{', '.join(expr_str(i) for i in e.index)}]"
    if isinstance(e, BinOp):
        return f"({expr_str(e.lhs)} {_SYM[e.op]} {expr_str(e.rhs)})"
    if isinstance(e, UnOp):
        return f"{'-' if e.op == 'neg' else '!'}{expr_str(e.operand)}"
    if isinstance(e, Call):
        return f"{e.fn}({', '.join(expr_str(a) for a in e.args)})"
    if isinstance(e, Select):
        return f"({expr_str(e.cond)} ? {expr_str(e.if_true)} : {expr_str(e.if_false)})"
    if isinstance(e, Cast):
        return f"{e.dtype.value}({expr_str(e.expr)})"
    return repr(e)

