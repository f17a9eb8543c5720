"""The C-style renderer base shared by CUDA and Kokkos: types, literals,
precedence-aware expressions (minimal parentheses that keep the IR's
evaluation order), intrinsics with Fortran semantics, array linearisation,
loops with any step sign, host control flow and the error-call message.

A backend fills in ``FUNC_QUAL`` (the qualifier of device-callable helpers)
and overrides ``array_ref`` (linear ``a[i + a_n0*j]`` here, ``a(i, j)`` in
Kokkos) and the hooks that launch device segments and return from the host
function."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar

from targets.base import CodeBuffer, Renderer
from targets.cstyle_text import HELPERS
from targets.host_calls import callable_from_c, cpp_lines, declaration, device_printf
from translate import ir
from translate.ir import DType
from translate.partition import (
    DeviceExtern,
    DeviceNest,
    DeviceSerial,
    HostBlock,
    HostIf,
    HostLoop,
    HostWhile,
    Segment,
    allocation_point,
)

_TYPES = MappingProxyType({
    DType.F32: "float", DType.F64: "double", DType.I32: "int", DType.I64: "long long",
    DType.BOOL: "bool", DType.CHAR: "char",
})
# C ABI types of the shim (CONVENTIONS.md): LOGICAL travels as int
_ABI_TYPES = MappingProxyType({**_TYPES, DType.BOOL: "int"})

# operator -> (spelling, precedence); higher binds tighter
_BINOPS = MappingProxyType({
    "or": ("||", 4), "and": ("&&", 5), "eq": ("==", 9), "ne": ("!=", 9), "lt": ("<", 10), "le": ("<=", 10),
    "gt": (">", 10), "ge": (">=", 10), "add": ("+", 12), "sub": ("-", 12), "mul": ("*", 13), "div": ("/", 13),
    "mod": ("%", 13),
})
_UNARY, _PRIMARY, _TERNARY = 14, 16, 3

_MATH = ("sqrt", "exp", "log", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
         "sinh", "cosh", "tanh", "floor", "ceil", "erf", "log1p", "expm1")
# storage-only float types: loads widen to float, arithmetic is float, stores narrow
NARROW = (DType.F16, DType.BF16)  # stored narrow, computed on in float

_KEYWORDS = frozenset(
    "auto bool break case catch char class const continue default delete do double else enum explicit extern "
    "false float for friend goto if inline int long namespace new operator private protected public register "
    "return short signed sizeof static struct switch template this throw true try typedef union unsigned using "
    "virtual void volatile while and or not xor main".split()
)

# device-callable helpers; {q} is the backend's function qualifier
def cname(name: str) -> str:
    """A C identifier for a source name (keywords get a trailing underscore)."""
    n = name.lower()
    return f"{n}_" if n in _KEYWORDS else n


class CStyleRenderer(Renderer):
    """Shared walking for C-like targets. Per render the instance holds the
    kernel being rendered and the helpers used (no module state)."""

    TYPES: ClassVar[Mapping[DType, str]] = _TYPES
    ABI_TYPES: ClassVar[Mapping[DType, str]] = _ABI_TYPES
    FUNC_QUAL: ClassVar[str] = "static inline"
    INDENT: ClassVar[str] = "    "


    def shim_scalar_arg(self, p: ir.Decl, b: CodeBuffer) -> str:
        """How a C ABI shim passes a scalar parameter on to the kernel API (CONVENTIONS.md):
        intent in by value, out/inout through the pointer it was given; a LOGICAL (int 0/1
        in the ABI) goes through a local bool that the shim copies back after the call."""
        n = cname(p.name)
        if p.intent.writes:
            if p.dtype is DType.BOOL:
                b.line(f"bool {n}_b = *{n} != 0;")
                return f"{n}_b"
            return f"*{n}"
        return f"{n} != 0" if p.dtype is DType.BOOL else n

    def begin(self, kernel: ir.Kernel) -> None:
        self.kernel = kernel
        self.helpers: set[str] = set()
        self.host_decls: set[str] = set()  # weak declarations of the routines host calls name
        self.rename: dict[str, str] = {}
        self._declare: set[str] = set()
        self.chip_rows: dict[str, tuple[ir.Array, ...]] = {}  # by row nest: scratch rows on chip

    # ------------------------------------------------------------ declarations

    def ctype(self, dtype: DType) -> str:
        if dtype not in self.TYPES:
            raise self.unsupported(dtype, f"no {self.name} type for {dtype.value}")
        return self.TYPES[dtype]

    def decl_of(self, name: str) -> ir.Decl | None:
        try:
            return self.kernel.param(name)
        except KeyError:
            return None

    def dtype_of(self, name: str, default: DType = DType.I32) -> DType:
        d = self.decl_of(name)
        return d.dtype if d is not None else default

    def array(self, name: str) -> ir.Array:
        d = self.decl_of(name)
        if not isinstance(d, ir.Array):
            raise self.unsupported(name, f"'{name}' is not a declared array")
        return d

    def var(self, name: str) -> str:
        return self.rename.get(name, cname(name))

    def zero(self, dtype: DType) -> str:
        return {DType.BOOL: "false", DType.CHAR: "' '"}.get(dtype, "0")

    def extreme_identity(self, r: ir.Reduction) -> str:
        """The start of a max or min (maxloc, minloc) reduction: -inf or +inf, the lowest or
        largest integer (every element, even -DBL_MAX, can replace it)."""
        t, up = self.ctype(r.dtype), r.op in ("max", "maxloc")
        if r.dtype.is_float:
            return f"{'-' if up else ''}std::numeric_limits<{t}>::infinity()"
        return f"std::numeric_limits<{t}>::{'lowest' if up else 'max'}()"

    @staticmethod
    def loc_identity(r: ir.Reduction) -> str:
        """A pair's loc before any iteration: the last of all (never first among equals); a
        macro, which device code may use (std::numeric_limits is host code to nvcc)."""
        wide = r.loc_dtype is DType.I64
        return ("LLONG_" if wide else "INT_") + ("MAX" if r.loc_first == "min" else "MIN")

    @staticmethod
    def pair_better(r: ir.Reduction, v: str, loc: str, w: str, wloc: str) -> str:
        """Whether pair (v, loc) replaces (w, wloc) in ``r`` (translate.argreduce): a larger
        (smaller) value, or an equal one reached first."""
        return (f"{v} {'>' if r.op == 'maxloc' else '<'} {w} || "
                f"({v} == {w} && {loc} {'<' if r.loc_first == 'min' else '>'} {wloc})")

    def helper_text(self) -> str:
        order = [h for h in HELPERS if h in self.helpers]
        return "\n\n".join(HELPERS[h].format(q=self.FUNC_QUAL) for h in order)

    def use(self, helper: str) -> str:
        self.helpers.add(helper)
        return helper

    def where(self, line: int = 0) -> str:
        path = self.kernel.origin.path
        return f"{path}:{line or self.kernel.origin.line}"

    # ------------------------------------------------------------- expressions

    def expr(self, e: ir.Expr) -> str:
        return self.visit(e)[0]

    def visit_Const(self, e: ir.Const) -> tuple[str, int]:
        text = self.literal(e.value, e.dtype)
        return text, _UNARY if text.startswith("-") else _PRIMARY

    def literal(self, value: object, dtype: DType) -> str:
        if dtype is DType.CHAR:
            s = str(value)
            if len(s) != 1:
                return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
            return "'\\''" if s == "'" else "'\\\\'" if s == "\\" else f"'{s}'"
        if dtype is DType.BOOL:
            return "true" if value else "false"
        if dtype.is_int:
            return f"{int(value)}LL" if dtype is DType.I64 else str(int(value))  # type: ignore[call-overload]
        x = float(value)  # type: ignore[arg-type]
        if x != x:
            return "NAN"
        if x in (float("inf"), float("-inf")):
            return "INFINITY" if x > 0 else "-INFINITY"
        text = repr(x)
        if "e" not in text and "." not in text:
            text += ".0"
        return f"{text}f" if dtype is DType.F32 or dtype in NARROW else text

    def visit_Var(self, e: ir.Var) -> tuple[str, int]:
        return self.var(e.name), _PRIMARY

    def visit_Load(self, e: ir.Load) -> tuple[str, int]:
        ref = self.array_ref(e.array, e.index)
        if e.dtype in NARROW:
            return self.widen(ref, e.dtype), _PRIMARY
        return ref, _PRIMARY

    def widen(self, text: str, dtype: DType) -> str:
        """A f16/bf16 value as float (the backend's conversion)."""
        return f"static_cast<float>({text})"

    def narrow(self, text: str, dtype: DType) -> str:
        """A float value rounded to f16/bf16 storage."""
        return f"static_cast<{self.ctype(dtype)}>({text})"

    def array_ref(self, name: str, index: tuple[ir.Expr, ...]) -> str:
        """Linearised by layout: LEFT ``a[i + a_n0*j]``, RIGHT ``a[j + a_n1*i]``."""
        decl = self.array(name)
        if len(index) != decl.rank:
            raise self.unsupported(name, f"'{name}' has rank {decl.rank}, indexed with {len(index)}")
        if decl.rank == 0:  # a 0-d array (a full reduction's output): one element
            return f"{cname(name)}[0]"
        idx = list(index) if decl.layout is ir.Layout.LEFT else list(reversed(index))
        dims = list(range(decl.rank)) if decl.layout is ir.Layout.LEFT else list(reversed(range(decl.rank)))
        flat: ir.Expr = idx[-1]
        for k in range(len(idx) - 2, -1, -1):
            ext = ir.Var(f"{cname(name)}_n{dims[k]}", DType.I32)
            flat = ir.BinOp("add", idx[k], ir.BinOp("mul", ext, flat, DType.I32), DType.I32)
        return f"{cname(name)}[{self.expr(flat)}]"

    def extents(self, arrays: Iterable[str]) -> list[str]:
        """``const int a_n0 = ...;`` for the extents the linearisation uses."""
        out = []
        for name in arrays:
            decl = self.array(name)
            if decl.rank < 2:
                continue
            dims = range(decl.rank - 1) if decl.layout is ir.Layout.LEFT else range(1, decl.rank)
            for d in dims:
                out.append(f"const int {cname(name)}_n{d} = {self.expr(decl.shape[d])};")
        return out

    def visit_BinOp(self, e: ir.BinOp) -> tuple[str, int]:
        if e.op == "pow":
            return self.power(e)
        if e.op == "mod" and e.lhs.dtype.is_float:
            return f"{self.math('fmod', e.dtype)}({self.expr(e.lhs)}, {self.expr(e.rhs)})", _PRIMARY
        if e.op not in _BINOPS:
            raise self.unsupported(e, f"operator '{e.op}'")
        sym, prec = _BINOPS[e.op]
        left, lp = self.visit(e.lhs)
        right, rp = self.visit(e.rhs)
        if lp < prec or (e.op == "or" and _is_op(e.lhs, "and")):
            left = f"({left})"
        if rp <= prec or right.startswith("-") or (e.op == "or" and _is_op(e.rhs, "and")):
            right = f"({right})"
        return f"{left} {sym} {right}", prec

    def power(self, e: ir.BinOp) -> tuple[str, int]:
        base, exp = e.lhs, e.rhs
        if isinstance(exp, ir.Const) and exp.dtype.is_int:
            k = int(exp.value)  # type: ignore[arg-type]
            simple = isinstance(base, (ir.Var, ir.Load, ir.Const))
            if k == 1:
                return self.visit(base)
            if k in (2, 3) and simple:
                prod: ir.Expr = base
                for _ in range(k - 1):
                    prod = ir.BinOp("mul", prod, base, e.dtype)
                return self.visit(prod)
        if e.dtype.is_int:
            return f"{self.use('kt_ipow')}({self.expr(base)}, {self.expr(exp)})", _PRIMARY
        ex = self.expr(exp) if exp.dtype.is_float else f"({self.ctype(e.dtype)})({self.expr(exp)})"
        if isinstance(exp, ir.Const) and exp.dtype.is_int:
            ex = self.literal(exp.value, e.dtype)
        return f"{self.math('pow', e.dtype)}({self.expr(base)}, {ex})", _PRIMARY

    def visit_UnOp(self, e: ir.UnOp) -> tuple[str, int]:
        text, prec = self.visit(e.operand)
        sym = "-" if e.op == "neg" else "!"
        if e.op not in ("neg", "not"):
            raise self.unsupported(e, f"unary '{e.op}'")
        if prec < _UNARY or text.startswith(("-", "!")):
            text = f"({text})"
        return f"{sym}{text}", _UNARY

    def visit_Select(self, e: ir.Select) -> tuple[str, int]:
        parts = []
        for sub in (e.cond, e.if_true, e.if_false):
            text, prec = self.visit(sub)
            parts.append(f"({text})" if prec <= _TERNARY else text)
        return f"{parts[0]} ? {parts[1]} : {parts[2]}", _TERNARY

    def visit_Cast(self, e: ir.Cast) -> tuple[str, int]:
        text, prec = self.visit(e.expr)
        if e.expr.dtype == e.dtype:
            return text, prec
        if e.dtype in NARROW:  # round to the narrow type, compute on in float
            return self.widen(self.narrow(text, e.dtype), e.dtype), _PRIMARY
        if prec < _UNARY:
            text = f"({text})"
        return f"({self.ctype(e.dtype)}){text}", _UNARY

    def math(self, fn: str, dtype: DType) -> str:
        return f"{fn}f" if dtype is DType.F32 or dtype in NARROW else fn

    def _args(self, e: ir.Call, typed: bool) -> list[str]:
        out = []
        for a in e.args:
            if typed and a.dtype != e.dtype and e.dtype is not DType.BOOL:
                out.append(self.expr(ir.Cast(e.dtype, a)))
            else:
                out.append(self.expr(a))
        return out

    def visit_Call(self, e: ir.Call) -> tuple[str, int]:
        fn, dt = e.fn, e.dtype
        if fn == "lsame":
            return f"{self.use('kt_lsame')}({', '.join(self._args(e, False))})", _PRIMARY
        if fn in ("min", "max"):
            args = self._args(e, True)
            name = self.math(f"f{fn}", dt) if dt.is_float else self.use(f"kt_{fn}")
            text = args[0]
            for a in args[1:]:
                text = f"{name}({text}, {a})"
            return text, _PRIMARY
        if fn == "abs":
            (a,) = self._args(e, True)
            name = self.math("fabs", dt) if dt.is_float else ("llabs" if dt is DType.I64 else "abs")
            return f"{name}({a})", _PRIMARY
        if fn == "sign":
            a, b = self._args(e, True)
            if dt.is_float:
                return f"{self.math('copysign', dt)}({self.math('fabs', dt)}({a}), {b})", _PRIMARY
            return f"{self.use('kt_sign')}({a}, {b})", _PRIMARY
        if fn == "nint":
            (a,) = self._args(e, False)
            arg_t = e.args[0].dtype
            base = "llround" if dt is DType.I64 else "lround"
            return f"({self.ctype(dt)}){self.math(base, arg_t)}({a})", _UNARY
        if fn in _MATH:
            arg_t = e.args[0].dtype if e.args else dt
            ftype = arg_t if arg_t.is_float else DType.F64
            args = [self.expr(a if a.dtype == ftype else ir.Cast(ftype, a)) for a in e.args]
            text = f"{self.math(fn, ftype)}({', '.join(args)})"
            if dt.is_int:
                return f"({self.ctype(dt)}){text}", _UNARY
            return text, _PRIMARY
        raise self.unsupported(e, f"intrinsic '{fn}'")

    # -------------------------------------------------------------- statements

    def stmts(self, buf: CodeBuffer, stmts: Iterable[ir.Stmt], host: bool = False) -> None:
        previous: ir.Stmt | None = None
        for s in stmts:
            if not (isinstance(s, ir.Return) and isinstance(previous, ir.ErrorCall)):  # it returned already
                self.stmt(buf, s, host)
            previous = s

    def stmt(self, buf: CodeBuffer, s: ir.Stmt, host: bool = False) -> None:
        if isinstance(s, ir.Assign):
            lhs = self.expr(s.target)
            prefix = ""
            if isinstance(s.target, ir.Var) and s.target.name in self.declare_on_assign:
                self.declare_on_assign.discard(s.target.name)
                prefix = f"{self.ctype(s.target.dtype)} "
            value = self.expr(s.value)
            if isinstance(s.target, ir.Load) and self.array(s.target.array).dtype in NARROW:
                lhs = self.array_ref(s.target.array, s.target.index)
                value = self.narrow(value, self.array(s.target.array).dtype)
            buf.line(f"{prefix}{lhs} = {value};")
        elif isinstance(s, ir.If):
            self.if_stmt(buf, s, host)
        elif isinstance(s, ir.Loop):
            if s.line:
                buf.line(f"// {self.where(s.line)}")
            with buf.block(self.for_header(s.var, s.start, s.stop, s.step)):
                self.stmts(buf, s.body, host)
        elif isinstance(s, ir.While):
            buf.line(f"// DO WHILE at {self.where(s.line)}")
            with buf.block(f"while ({self.expr(s.cond)})"):
                self.stmts(buf, s.body, host)
        elif isinstance(s, ir.HostCall) and s.kind == "print" and not host:
            buf.line(device_printf(s, self.expr))
        elif isinstance(s, ir.HostCall) and s.kind == "call" and not host:
            buf.line(f"// CALL {s.routine.upper()} ({self.where(s.line)}): not made from device code")
        elif isinstance(s, ir.HostCall):
            if not host:
                raise self.unsupported(s, f"host code ({s.routine.upper()}) in device code")
            if callable_from_c(s):
                self.host_decls.add(declaration(s))
            local = {d.name for d in self.kernel.locals if isinstance(d, ir.Scalar)}
            buf.lines(cpp_lines(s, self.expr, self.var, local.__contains__, self.where(s.line)))
        elif isinstance(s, (ir.Return, ir.ErrorCall)):
            if not host:
                raise self.unsupported(s, "a return or error call in device code")
            if isinstance(s, ir.ErrorCall):
                buf.line(self.error_call(s))
            buf.line(self.host_return())
        else:
            raise self.unsupported(s, f"statement {type(s).__name__}")

    @property
    def declare_on_assign(self) -> set[str]:
        """Private scalars whose first assignment declares them."""
        return self._declare

    def if_stmt(self, buf: CodeBuffer, s: ir.If, host: bool) -> None:
        buf.line(f"if ({self.expr(s.cond)}) {{")
        while True:
            with buf.indent():
                self.stmts(buf, s.then, host)
            if len(s.orelse) == 1 and isinstance(s.orelse[0], ir.If):
                s = s.orelse[0]
                buf.line(f"}} else if ({self.expr(s.cond)}) {{")
                continue
            if s.orelse:
                buf.line("} else {")
                with buf.indent():
                    self.stmts(buf, s.orelse, host)
            buf.line("}")
            return

    def for_header(self, var: str, start: ir.Expr, stop: ir.Expr, step: ir.Expr) -> str:
        name = self.var(var)
        ctype = self.ctype(self.dtype_of(var))
        lo, hi = self.expr(start), self.expr(stop)
        if isinstance(step, ir.Const):
            k = int(step.value)  # type: ignore[call-overload]
            if k == 0:
                raise self.unsupported(step, "a loop with step 0")
            incr = {1: f"++{name}", -1: f"--{name}"}.get(k, f"{name} += {k}" if k > 0 else f"{name} -= {-k}")
            return f"for ({ctype} {name} = {lo}; {name} {'<' if k > 0 else '>'} {hi}; {incr})"
        st = self.expr(step)
        return f"for ({ctype} {name} = {lo}; ({st}) > 0 ? {name} < {hi} : {name} > {hi}; {name} += {st})"

    def error_call(self, s: ir.ErrorCall) -> str:
        """XERBLA-style: ``** On entry to NAME parameter number K had an illegal value``."""
        routine = s.routine
        args = list(s.args)
        if args and isinstance(args[0], ir.Const) and isinstance(args[0].value, str):
            routine = str(args[0].value).strip()
            args = args[1:]
        else:
            routine = self.kernel.name.upper()
        if len(args) == 1 and args[0].dtype.is_int:
            return (f'fprintf(stderr, " ** On entry to %s parameter number %d had an illegal value\\n", '
                    f'"{routine}", (int)({self.expr(args[0])}));')
        return f'fprintf(stderr, " ** On entry to %s: error in {s.routine}\\n", "{routine}");'

    # ---------------------------------------------------------- host segments

    def host_return(self) -> str:
        raise NotImplementedError

    def host_segments(self, buf: CodeBuffer, segs: Iterable[Segment]) -> None:
        for seg in segs:
            if isinstance(seg, HostBlock):
                self.stmts(buf, seg.stmts, host=True)
            elif isinstance(seg, HostIf):
                with buf.block(f"if ({self.expr(seg.cond)})", closer="}" if not seg.orelse else "} else {"):
                    self.host_segments(buf, seg.then)
                if seg.orelse:
                    with buf.indent():
                        self.host_segments(buf, seg.orelse)
                    buf.line("}")
            elif isinstance(seg, HostLoop):
                with buf.block(self.for_header(seg.var, seg.start, seg.stop, seg.step)):
                    self.host_segments(buf, seg.body)
            elif isinstance(seg, HostWhile):
                with buf.block(f"while ({self.expr(seg.cond)})"):
                    self.host_segments(buf, seg.body)
            elif isinstance(seg, DeviceNest):
                self.launch_nest(buf, seg)
            elif isinstance(seg, DeviceSerial):
                self.launch_serial(buf, seg)
            elif isinstance(seg, DeviceExtern):
                self.launch_extern(buf, seg)
            else:
                raise self.unsupported(seg, "unknown segment")

    def launch_nest(self, buf: CodeBuffer, seg: DeviceNest) -> None:
        raise NotImplementedError

    def launch_serial(self, buf: CodeBuffer, seg: DeviceSerial) -> None:
        raise NotImplementedError

    def launch_extern(self, buf: CodeBuffer, seg: DeviceExtern) -> None:
        raise self.unsupported(seg.op, f"{self.name} has no rendering of library operation '{seg.op.op}'")

    def allocation_point(self, segs: Sequence[Segment]) -> int:
        """The leading segments that run before the local arrays are allocated: those setting the
        scalars their extents read (``translate.partition.allocation_point``)."""
        at = allocation_point(self.kernel, segs, self.local_arrays())
        if at is None:
            raise self.unsupported(self.kernel, "a local array's extent is set after code that uses the array")
        return at

    def local_arrays(self) -> list[ir.Array]:
        """``Kernel.locals`` arrays, which targets allocate, but for rows kept on chip (targets.row_scratch)."""
        chip = {a.name for arrays in self.chip_rows.values() for a in arrays}
        return [d for d in self.kernel.locals if isinstance(d, ir.Array) and d.name not in chip]

    # ------------------------------------------------------------ device bodies

    def body_with_privates(self, buf: CodeBuffer, body: tuple[ir.Stmt, ...], private: Iterable[str],
                           declared: Callable[[str], bool] = lambda n: False) -> None:
        """Render a per-iteration body, declaring each private scalar at its
        first top-level assignment where possible, else at the top."""
        inline: set[str] = set()
        upfront: list[str] = []
        for p in private:
            if declared(p):
                continue
            first = next((s for s in body if p in _names(s)), None)
            if (isinstance(first, ir.Assign) and isinstance(first.target, ir.Var) and first.target.name == p
                    and p not in _names(first.value)):
                inline.add(p)
            else:
                upfront.append(p)
        for p in upfront:
            dt = self.dtype_of(p, DType.F64)
            buf.line(f"{self.ctype(dt)} {self.var(p)} = {self.zero(dt)};")
        self.declare_on_assign.clear()
        self.declare_on_assign.update(inline)
        self.stmts(buf, body)
        self.declare_on_assign.clear()

    def chain_bounds_lines(self, loops: Iterable[ir.Loop]) -> list[str]:
        """``<var>_lo`` (loops not from 0 step 1) and ``<var>_trip`` of loops walked through
        one flat index (``index_lines``)."""
        out = []
        for lp in loops:
            if not self.direct(lp):
                out.append(f"const int {self.var(lp.var)}_lo = {self.expr(lp.start)};")
            out.append(f"const int {self.var(lp.var)}_trip = {self.trip(lp)};")
        return out

    def index_lines(self, loops: Sequence[ir.Loop], rank: str, itype: str) -> list[str]:
        """The loop variables of flat index ``rank`` over ``loops`` (the innermost varying
        fastest; ``<var>_trip`` and, for loops not from 0 step 1, ``<var>_lo`` in scope)."""
        out, rem = [], rank
        for pos, lp in enumerate(reversed(loops)):
            trip = f"{self.var(lp.var)}_trip"
            k = rem if pos == len(loops) - 1 else f"{rem} % {trip}"
            value = f"(int)({k})" if self.direct(lp) else self.offset(lp, f"(int)({k})")
            out.append(f"const {self.ctype(self.dtype_of(lp.var))} {self.var(lp.var)} = {value};")
            if pos < len(loops) - 1:
                out.append(f"const {itype} {rank}{pos} = {rem} / {trip};")
                rem = f"{rank}{pos}"
        return out

    def row_privates(self, buf: CodeBuffer, body: tuple[ir.Stmt, ...], names: Iterable[str]) -> dict[int, str]:
        """Declares the private scalars ``names`` of a row kernel: zero-initialised here, except
        those whose first use assigns them without reading them, returned by that statement's
        id (the caller adds each to ``declare_on_assign`` just before rendering it)."""
        first_assign: dict[int, str] = {}
        for p in names:
            first = next((s for s in body if p in _names(s)), None)
            if (isinstance(first, ir.Assign) and isinstance(first.target, ir.Var) and first.target.name == p
                    and p not in _names(first.value)):
                first_assign[id(first)] = p
            else:
                dt = self.dtype_of(p, DType.F64)
                buf.line(f"{self.ctype(dt)} {self.var(p)} = {self.zero(dt)};")
        return first_assign

    def loop_var_lines(self, seg: DeviceNest, k_names: Mapping[str, str]) -> list[str]:
        """``const int i = i_lo + k_i * step;`` for loops not mapped directly."""
        out = []
        for lp in seg.loops:
            if lp.var not in k_names:
                continue
            out.append(f"const {self.ctype(self.dtype_of(lp.var))} {self.var(lp.var)} = "
                       f"{self.offset(lp, k_names[lp.var])};")
        return out

    def offset(self, lp: ir.Loop, k: str) -> str:
        lo = f"{self.var(lp.var)}_lo"
        if isinstance(lp.step, ir.Const):
            s = int(lp.step.value)  # type: ignore[call-overload]
            if s == 1:
                return f"{lo} + {k}"
            if s == -1:
                return f"{lo} - {k}"
            return f"{lo} + {k} * {s}" if s > 0 else f"{lo} - {k} * {-s}"
        return f"{lo} + {k} * ({self.expr(lp.step)})"

    def direct(self, lp: ir.Loop) -> bool:
        """A loop from 0 with step 1 maps its index straight onto the thread index."""
        return (isinstance(lp.start, ir.Const) and lp.start.value == 0
                and isinstance(lp.step, ir.Const) and lp.step.value == 1)

    def signature(self, head: str, params: list[str], tail: str = "") -> str:
        """``head(p1, p2)`` on one line, or one parameter per line when long."""
        one = f"{head}({', '.join(params)}){tail}"
        if len(one) <= 110 or not params:
            return one
        inner = ",\n".join(f"{self.INDENT}{p}" for p in params)
        return f"{head}(\n{inner}){tail}"

    def trip(self, lp: ir.Loop) -> str:
        return f"{self.use('kt_trip')}({self.expr(lp.start)}, {self.expr(lp.stop)}, {self.expr(lp.step)})"


def _is_op(e: ir.Expr, op: str) -> bool:
    return isinstance(e, ir.BinOp) and e.op == op


def _names(node: object) -> set[str]:
    return {n.name for n in ir.walk(node) if isinstance(n, ir.Var)}
