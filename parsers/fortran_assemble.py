"""A lowered routine assembled into an ``ir.Kernel``: its parameters in the frontend's order
(dummy arguments, then the COMMON, module and program variables it uses, then the extents of
assumed-shape arrays), their intents, shapes and types, its locals, and the checks that a
kernel's host results can be returned.
"""

from __future__ import annotations

from parsers.base import Unsupported
from parsers.fortran_expr import ExprLowerer
from parsers.fortran_scope import Scope
from parsers.fortran_shapes import access_extents, assumed_extent, infer_intents
from parsers.fortran_stmts import StmtLowerer
from parsers.fortran_units import SourceFile
from translate import ir
from translate.ir import Const, DType, Var
from translate.simplify import simplify


def assemble(name: str, args: list[str], result_name: str | None, body: tuple[ir.Stmt, ...], scope: Scope,
              ex: ExprLowerer, sl: StmtLowerer, f: SourceFile, hd: object) -> ir.Kernel:
    notes: list[str] = list(sl.notes)
    declared: dict[str, ir.Intent] = {}
    params: list[ir.Decl] = []
    extents: list[tuple[str, int]] = []  # (array, dimension) whose extent the caller passes
    arg_set = set(args)
    for a in args:
        sym = scope.lookup(a)
        if sym is not None and sym.external:
            raise Unsupported(f"procedure argument {a} of {name} cannot be lowered")
        dtype = scope.type_of(a)
        if dtype == DType.CHAR and sym is not None and sym.char_len != 1:
            raise Unsupported(f"character string argument {a} of {name} at {f.where(ex.line)} cannot be lowered")
        if sym is not None and sym.intent is not None:
            declared[a] = sym.intent
        if sym is not None and sym.dims is not None and sym.deferred:
            params.append(_deferred(a, dtype, sym.dims, extents))
        elif sym is not None and sym.dims is not None:
            shape: list[ir.Expr] = []
            lower = tuple(lo for lo, _ in sym.dims)
            for lo, hi in sym.dims:
                if hi is None:
                    ext = assumed_extent(a, ex.accesses, body, arg_set, lo)
                    if ext is None:
                        # a name no parameter has: validation asks for it, the generated code does
                        # not build, until the workflow gives the array's shape
                        notes.append(f"extent of assumed-size {a} unknown: give it in the workflow's shapes:")
                        ext = Var(f"{a}_extent", DType.I32)
                    shape.append(ext)
                else:
                    shape.append(simplify(ir.BinOp("add", ir.BinOp("sub", hi, lo, DType.I32),
                                                    Const(1, DType.I32), DType.I32)))
            params.append(ir.Array(a, dtype, tuple(shape), ir.Layout.LEFT, ir.Intent.IN, lower))
        else:
            params.append(ir.Scalar(a, dtype))
    locals_: list[ir.Decl] = []
    for n in sorted(ex.used - arg_set):
        sym = scope.lookup(n)
        if sym is not None and sym.const is not None:
            continue
        if n == result_name or n == name:
            continue
        if sym is not None and sym.binding is not None:
            if sym.private:
                raise Unsupported(f"{name} uses {n}, a PRIVATE variable of {sym.binding.split(':')[1]}: validation"
                                  " cannot set it from outside the module")
            if sym.dims is not None and sym.deferred:
                params.append(ir.replace(_deferred(n, scope.type_of(n), sym.dims, extents), binding=sym.binding))
            elif not sym.binding.startswith("common:"):
                decl = ir.replace(_decl(n, scope, sym.dims), binding=sym.binding)
                params.append(ir.replace(decl, allocatable=True) if sym.allocatable else decl)
            continue
        if sym is not None and sym.deferred:
            raise Unsupported(f"allocatable local array {n} of {name} is not allocated in {name}")
        locals_.append(_decl(n, scope, sym.dims if sym is not None else None))
    for members in scope.commons.values():
        # a COMMON block is storage: every member, in block order, so a caller can lay it out
        if any(m in ex.used for m in members):
            for m in members:
                sym = scope.lookup(m)
                assert sym is not None and sym.binding is not None
                params.append(ir.replace(_decl(m, scope, sym.dims), binding=sym.binding))
    params = [_complex_array(p, scope, name) for p in params]
    locals_ = [_complex_array(d, scope, name) for d in locals_]
    params = _with_intents(body, params, declared)
    params += _extent_params(body, params, extents)
    params += _shape_globals(params, scope, name)
    shared = sorted(p.name for p in params if p.binding is not None and p.name in sl.host_globals)
    if shared:
        raise Unsupported(f"{name} uses {', '.join(shared)}, which CALL {sl.host_globals[shared[0]].upper()} changes"
                          " on the host: the call cannot stay outside the translation")
    _no_host_results(name, body)
    if body and not any(p.intent.writes for p in params) and result_name is None:
        raise Unsupported(f"{name} computes no result (it writes no argument, COMMON or module variable): only"
                          " its output statements act, so it stays host code")
    locals_.extend(sl.extra_locals.values())
    result: DType | None = None
    if result_name is not None:
        result = scope.type_of(result_name)
        locals_.append(ir.Scalar(name, result))
    path, line = f.origin(hd.item.span[0])  # type: ignore[attr-defined]
    return ir.Kernel(name, tuple(params), tuple(locals_), body, ir.Origin(path, line), result, tuple(notes))


ANY_EXTENT = 24  # validation's extent of an array the routine walks to its end, when the workflow gives none


def _no_host_results(name: str, body: tuple[ir.Stmt, ...]) -> None:
    """A value a host call returns (``CALL WTIME(t)``) must not feed the routine's computation:
    the translation does not make that call wherever it runs, so it could not compute the same."""
    calls = [n for s in body for n in ir.walk(s) if isinstance(n, ir.HostCall)]
    returned = {w: c for c in calls for w in c.writes}
    if not returned:
        return
    for s in body:
        for n in ir.walk(s):
            if isinstance(n, ir.HostCall):
                continue
            exprs: list[object] = [n.value, *(n.target.index if isinstance(n.target, ir.Load) else ())] \
                if isinstance(n, ir.Assign) else [n.cond] if isinstance(n, ir.If) else \
                [n.start, n.stop, n.step] if isinstance(n, ir.Loop) else []
            used = {v.name for e in exprs for v in ir.walk(e) if isinstance(v, Var)} & returned.keys()
            if used:
                v = sorted(used)[0]
                raise Unsupported(f"{name} uses {v}, which CALL {returned[v].routine.upper()} sets: the translation"
                                  " does not make that call where it runs, so it stays host code")


def _complex_array(d: ir.Decl, scope: Scope, routine: str) -> ir.Decl:
    """A COMPLEX array as the real array of its parts: a leading dimension of extent 2
    (parsers/fortran_complex.py). COMPLEX scalars are refused here (locals are split into
    two reals before), as are COMPLEX arrays whose extents the caller passes."""
    sym = scope.lookup(d.name)
    if sym is None or not sym.complex:
        return d
    if isinstance(d, ir.Scalar):
        raise Unsupported(f"COMPLEX scalar {d.name} of {routine} (an argument or global) cannot be lowered")
    if any(isinstance(v, Var) and v.name.startswith(f"{d.name}_size") for e in d.shape for v in ir.walk(e)):
        raise Unsupported(f"COMPLEX assumed-shape or allocatable array {d.name} of {routine} cannot be lowered")
    return ir.replace(d, shape=(Const(2, DType.I32), *d.shape), lower=(Const(0, DType.I32), *d.lower), complex=True)


def _deferred(n: str, dtype: DType, dims: list[tuple[ir.Expr, ir.Expr | None]],
              extents: list[tuple[str, int]]) -> ir.Array:
    """An assumed-shape or allocatable array: its extents are parameters the caller passes
    (``<array>_size<k>``, bound "extent:<array>:<k>")."""
    shape = []
    for k in range(1, len(dims) + 1):
        extents.append((n, k))
        shape.append(Var(f"{n}_size{k}", DType.I32))
    return ir.Array(n, dtype, tuple(shape), ir.Layout.LEFT, ir.Intent.IN, tuple(lo for lo, _ in dims))


def _extent_params(body: tuple[ir.Stmt, ...], params: list[ir.Decl], extents: list[tuple[str, int]]) -> list[ir.Decl]:
    """The extent parameters of assumed-shape and allocatable arrays, each with the extent its
    accesses need as the value validation gives it by default."""
    own = {f"{a}_size{k}" for a, k in extents}
    names = {p.name for p in params} | own
    out: list[ir.Decl] = []
    inferred: dict[str, list[ir.Expr | None]] = {}
    for array, k in extents:
        rank = max(kk for a, kk in extents if a == array)
        if array not in inferred:
            inferred[array] = access_extents(body, array, rank, names)
        name = f"{array}_size{k}"
        default = inferred[array][k - 1]
        if default is not None and name in {v.name for v in ir.walk(default) if isinstance(v, Var)}:
            # the accesses reach as far as the extent itself (a loop to SIZE(x, k)): any extent runs
            default = Const(ANY_EXTENT, DType.I32)
        out.append(ir.Scalar(name, DType.I32, ir.Intent.IN, f"extent:{array}:{k}", default))
    return out


def _shape_globals(params: list[ir.Decl], scope: Scope, name: str) -> list[ir.Decl]:
    """Module variables the shapes of global arrays are written in (``u(nx, nz)``, its extents from
    the ALLOCATE of the program) that the routine does not use itself: parameters too."""
    have = {p.name for p in params}
    out: list[ir.Decl] = []
    for p in list(params):
        if not isinstance(p, ir.Array):
            continue
        for e in (*p.shape, *p.lower):
            for n in sorted({v.name for v in ir.walk(e) if isinstance(v, Var)} - have):
                if n == f"{p.name}_extent" and scope.lookup(n) is None:
                    continue  # an assumed-size extent the workflow has to give
                sym = scope.lookup(n)
                if sym is None or sym.binding is None or sym.dims is not None:
                    raise Unsupported(f"the shape of {p.name} in {name} depends on '{n}', which {name} cannot see")
                out.append(ir.Scalar(n, scope.type_of(n), ir.Intent.IN, sym.binding))
                have.add(n)
    return out


def _decl(n: str, scope: Scope, dims: list[tuple[ir.Expr, ir.Expr | None]] | None) -> ir.Decl:
    dtype = scope.type_of(n)
    if dims is None:
        return ir.Scalar(n, dtype)
    if any(hi is None for _, hi in dims):
        raise Unsupported(f"assumed-size array {n} that is not an argument")
    shape = tuple(simplify(ir.BinOp("add", ir.BinOp("sub", hi, lo, DType.I32), Const(1, DType.I32), DType.I32))
                  for lo, hi in dims if hi is not None)
    return ir.Array(n, dtype, shape, ir.Layout.LEFT, ir.Intent.IN, tuple(lo for lo, _ in dims))


def _with_intents(body: tuple[ir.Stmt, ...], params: list[ir.Decl], declared: dict[str, ir.Intent]) -> list[ir.Decl]:
    inferred = infer_intents(body, params)
    return [ir.replace(p, intent=declared[p.name]) if p.name in declared else p for p in inferred]
