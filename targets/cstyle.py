"""The C-style renderer base shared by CUDA and Kokkos: types, array
linearisation, loops with any step sign, host control flow and the error-call
message; its expressions come from :class:`targets.cstyle_expr.CExpressions`.

A backend fills in ``FUNC_QUAL`` (the qualifier of device-callable helpers)
and overrides ``array_ref`` (linear ``a[i + a_n0*j]`` here, ``a(i, j)`` in
Kokkos) and the hooks that launch device segments and return from the host
function."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar

from targets.base import CodeBuffer, Renderer
from targets.cstyle_expr import NARROW, CExpressions
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


class CStyleRenderer(CExpressions, Renderer):
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

    # ------------------------------------------------------------------ arrays

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


def _names(node: object) -> set[str]:
    return {n.name for n in ir.walk(node) if isinstance(n, ir.Var)}
