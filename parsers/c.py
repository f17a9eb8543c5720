"""C frontend: source files -> ``ir.Module`` (one per file) through libclang.

Each function defined in a file (not in the headers it includes) becomes one ``ir.Kernel``;
a function using a construct the frontend cannot lower becomes an ``ir.Opaque`` with the
reason and file:line, and the rest of the file goes on. ``main`` is the program: host code.
Malformed C, a header not found or a name nobody declared (a size macro not defined) raises
``ParseError`` naming the file and line (:mod:`parsers.c_clang`).

IR conventions of this frontend:

* names are the source's (C is case-sensitive); loops keep the source's values
  (``for (i = 1; i < n - 1; i++)`` is ``Loop("i", 1, n - 1, 1)``);
* arrays are row-major (``Layout.RIGHT``): ``double a[n][m]`` (a C99 VLA), ``double a[N][M]``,
  ``double (*a)[M]`` and ``double *a`` indexed ``a[i*lda + j]``; an extent the declaration
  does not give is inferred from the accesses (the largest index reached, + 1), else it is a
  variable ``<a>_extent`` the workflow's ``shapes:`` must give;
* a scalar argument by value is intent ``in`` (where the function assigns it, the body
  works on a local copy); a pointer only dereferenced (``*sum = ...``) is a scalar with
  intent ``out``/``inout`` passed by pointer, or a one-element array where only read;
* a function returning a value returns it by its last statement: ``Kernel.result``, the value
  the local named like the function;
* pointer arguments are taken not to alias one another (as if ``restrict``): the kernel's notes
  say so for those not declared ``restrict``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from parsers import c_clang
from parsers.base import ParseError, Unsupported
from parsers.c_expr import CArray, CExpr, CScope, scalar_dtype, strip, type_name
from parsers.c_stmts import CStmts, array_dims
from parsers.fortran_shapes import infer_intents
from translate import ir
from translate.ir import Const, DType, Expr, Var
from translate.simplify import largest, linearize, simplify, simplify_body

__all__ = ["parse_files", "parse_source"]

Cursor = Any
_OUTPUT_CALLS = ("printf", "fprintf", "puts", "fputs", "putchar", "fputc", "fwrite")


def parse_files(paths: list[Path], root: Path, include: list[Path] | None = None,
                defines: dict[str, str] | None = None,
                errors: list[ParseError] | None = None) -> list[ir.Module]:
    """One ``ir.Module`` per file (``Module.path`` relative to ``root``). A file that does not
    parse raises ``ParseError``; pass ``errors`` to collect those instead and go on."""
    modules = []
    for path in paths:
        path = Path(path)
        try:
            modules.append(_module(path, _shown(path, Path(root)), list(include or []), dict(defines or {})))
        except ParseError as err:
            if errors is None:
                raise
            errors.append(err)
    return modules


def parse_source(text: str, path: str = "source.c", include: list[Path] | None = None,
                 defines: dict[str, str] | None = None) -> ir.Module:
    """Parse one source text (for tests); ``path`` names it in messages."""
    return _module(Path(path), path, list(include or []), dict(defines or {}), text)


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _module(path: Path, shown: str, include: list[Path], defines: dict[str, str],
            text: str | None = None) -> ir.Module:
    if text is None:
        try:
            text = path.read_text(errors="replace")
        except OSError as exc:
            raise ParseError(shown, 1, f"cannot read the file: {exc.strerror}") from None
        tu = c_clang.parse_file(path, include, defines, shown)
    else:
        tu = c_clang.parse_file(path, include, defines, shown, text)
    pragmas = c_clang.pragmas(text)
    lines = text.splitlines()
    kernels: list[ir.Kernel | ir.Opaque] = []
    here = str(path.resolve()) if text is None else None
    for cur in tu.cursor.get_children():
        if cur.kind.name != "FUNCTION_DECL" or not cur.is_definition() or cur.location.file is None:
            continue
        name = cur.location.file.name
        if (here is not None and str(Path(name).resolve()) != here) or (here is None and name != str(path)
                                                                          and Path(name) != path):
            continue  # defined in an included file: that file's own workflow translates it
        kernels.append(_function(cur, shown, lines, pragmas))
    return ir.Module(tuple(kernels), "c", shown)


# ---------------------------------------------------------------- functions


def _function(cur: Cursor, shown: str, lines: list[str], pragmas: dict[int, c_clang.Pragma]) -> ir.Kernel | ir.Opaque:
    name = str(cur.spelling)
    origin = ir.Origin(shown, cur.location.line)
    source = "\n".join(lines[cur.extent.start.line - 1:cur.extent.end.line])
    if name == "main":
        return ir.Opaque(name, source, f"PROGRAM main (the C entry point) at {origin} is the program: it stays host"
                         " code", origin)
    try:
        return _lower(cur, name, origin, shown, lines, pragmas)
    except Unsupported as exc:
        reason = exc.reason
        if _output_only(cur):
            reason = (f"{name} computes no result (it writes no argument): only its output statements act, so it"
                      " stays host code")
        return ir.Opaque(name, source, reason, origin)


def _lower(cur: Cursor, name: str, origin: ir.Origin, shown: str, lines: list[str],
           pragmas: dict[int, c_clang.Pragma]) -> ir.Kernel:
    scope = CScope(shown, name)
    ex = CExpr(scope)
    if cur.type.kind.name == "FUNCTIONPROTO" and cur.type.is_function_variadic():
        raise Unsupported(f"{name} at {origin} takes a variable argument list")
    result: DType | None = None
    if cur.result_type.get_canonical().kind.name != "VOID":
        result = scalar_dtype(cur.result_type)
        if result is None:
            raise Unsupported(f"{name} at {origin} returns {type_name(cur.result_type)}")
    indexed = _indexed(cur)
    restrict: list[str] = []
    for arg in cur.get_arguments():
        n = str(arg.spelling)
        if not n:
            raise Unsupported(f"an unnamed argument of {name} at {origin}")
        scope.params.append(n)
        d = scalar_dtype(arg.type)
        if d is not None:
            scope.scalars[n] = d
            continue
        dims = array_dims(arg, arg.type, ex)
        if dims is None:
            raise Unsupported(f"argument {n} of {name} at {shown}:{arg.location.line} has type"
                              f" {type_name(arg.type)}, which cannot be lowered")
        dtype, shape = dims
        if arg.type.get_canonical().kind.name == "POINTER" and arg.type.get_canonical().is_restrict_qualified():
            restrict.append(n)
        if len(shape) == 1 and shape[0] is None and n not in indexed:
            scope.pointed[n] = dtype
        else:
            scope.arrays[n] = CArray(n, dtype, shape)
    body_cursor = next((k for k in cur.get_children() if k.kind.name == "COMPOUND_STMT"), None)
    if body_cursor is None:
        raise Unsupported(f"{name} at {origin} has no body")
    st = CStmts(ex, pragmas, lines, name if result is not None else None)
    body = tuple(simplify_body(tuple(st.function_body(body_cursor))))
    params, locals_, body, notes = _declarations(scope, body, name, result)
    pointers = [p.name for p in params if isinstance(p, ir.Array) and p.name not in scope.local_arrays]
    unmarked = [p for p in pointers if p not in restrict]
    if len(pointers) > 1 and unmarked:
        notes.append(f"the array arguments ({', '.join(pointers)}) are taken not to overlap, as if restrict")
    notes += [f"#pragma omp honoured as the source's assertion: {d}" for d in st.directives]
    notes += _scops(pragmas, cur)
    if not any(p.intent.writes for p in params) and result is None:
        raise Unsupported(f"{name} computes no result (it writes no argument): only its side effects act, so it"
                          " stays host code")
    return ir.Kernel(name, tuple(params), tuple(locals_), body, origin, result, tuple(notes))


def _indexed(cur: Cursor) -> set[str]:
    """Pointer arguments the function subscripts (``p[i]``): arrays; the others only
    dereferenced (``*p``) are scalars passed by pointer."""
    out: set[str] = set()
    for node in cur.walk_preorder():
        if node.kind.name == "ARRAY_SUBSCRIPT_EXPR":
            base = strip(next(iter(node.get_children())))
            if base.kind.name == "DECL_REF_EXPR":
                out.add(str(base.spelling))
    return out


def _declarations(scope: CScope, body: tuple[ir.Stmt, ...], name: str,
                  result: DType | None) -> tuple[list[ir.Decl], list[ir.Decl], tuple[ir.Stmt, ...], list[str]]:
    """Parameters (source order, intents inferred), locals, the body (copies of assigned by-value
    arguments, reads of read-only pointers as element 0) and notes."""
    notes: list[str] = []
    written = {n.target.name for s in body for n in ir.walk(s) if isinstance(n, ir.Assign)
               and isinstance(n.target, Var)}
    taken = set(scope.scalars) | set(scope.arrays) | set(scope.pointed) | {name}
    prologue: list[ir.Stmt] = []
    locals_: list[ir.Decl] = []
    params: list[ir.Decl] = []
    by_value = [p for p in scope.params if p in scope.scalars]
    for p in by_value:
        if p in written:  # C passes it by value: the function's assignments stay inside it
            copy = _fresh(f"{p}_local", taken)
            body = tuple(ir.substitute(s, {p: Var(copy, scope.scalars[p])}) for s in body)  # type: ignore[misc]
            prologue.append(ir.Assign(Var(copy, scope.scalars[p]), Var(p, scope.scalars[p])))
            locals_.append(ir.Scalar(copy, scope.scalars[p]))
    body = (*prologue, *body)
    for p in [p for p in scope.pointed if p not in written]:  # only read: a one-element array
        d = scope.pointed.pop(p)
        body = tuple(ir.replace_exprs(s, {Var(p, d): ir.Load(p, (Const(0, DType.I32),), d)}) for s in body)  # type: ignore[misc]
        scope.arrays[p] = CArray(p, d, [Const(1, DType.I32)])
    param_names = set(by_value)
    for p in scope.params:
        if p in scope.scalars:
            params.append(ir.Scalar(p, scope.scalars[p]))
        elif p in scope.pointed:
            params.append(ir.Scalar(p, scope.pointed[p], ir.Intent.INOUT))
        else:
            arr = scope.arrays[p]
            shape = _shape(arr, body, param_names, notes)
            params.append(ir.Array(p, arr.dtype, shape, ir.Layout.RIGHT))
    inferred = infer_intents(body, [q for q in params if not (isinstance(q, ir.Scalar) and q.name in by_value)])
    by_name = {q.name: q for q in inferred}
    params = [by_name.get(q.name, q) for q in params]
    for n, d in sorted(scope.scalars.items()):
        if n not in scope.params and n != name:
            locals_.append(ir.Scalar(n, d))
    for n in sorted(scope.local_arrays):
        arr = scope.arrays[n]
        locals_.append(ir.Array(n, arr.dtype, tuple(s for s in arr.shape if s is not None), ir.Layout.RIGHT))
    if result is not None:
        locals_.append(ir.Scalar(name, result))
    return params, locals_, body, notes


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}{k}"
    taken.add(name)
    return name


def _shape(arr: CArray, body: tuple[ir.Stmt, ...], params: set[str], notes: list[str]) -> tuple[Expr, ...]:
    if all(s is not None for s in arr.shape):
        return tuple(s for s in arr.shape if s is not None)
    reach = _reach_all(body, arr.name, len(arr.shape), params)
    out: list[Expr] = []
    for k, s in enumerate(arr.shape):
        if s is not None:
            out.append(s)
        elif reach[k] is not None:
            out.append(reach[k])  # type: ignore[arg-type]
        else:
            notes.append(f"extent {k + 1} of {arr.name} unknown: give it in the workflow's shapes:")
            out.append(Var(f"{arr.name}_extent", DType.I32))
    return tuple(out)


# ----------------------------------------------------------- extents inferred


def _reach_all(body: tuple[ir.Stmt, ...], array: str, rank: int, params: set[str]) -> list[Expr | None]:
    """Per dimension, the largest index of ``array`` the body reaches + 1, over ``params``
    (an affine index in loop variables, coefficients taken non-negative where symbolic),
    or None where some access is beyond this."""
    found: list[list[Expr] | None] = [[] for _ in range(rank)]

    def visit(stmts: tuple[ir.Stmt, ...], loops: dict[str, ir.Loop], env: dict[str, Expr]) -> None:
        env = dict(env)
        for s in stmts:
            heads: tuple[object, ...] = (s.start, s.stop) if isinstance(s, ir.Loop) else \
                (s.cond,) if isinstance(s, (ir.If, ir.While)) else (s,) if isinstance(s, ir.Assign) else ()
            for n in (m for h in heads for m in ir.walk(h)):
                if isinstance(n, ir.Load) and n.array == array:
                    for k, idx in enumerate(n.index):
                        top = _top(ir.substitute(idx, env), loops, params)  # type: ignore[arg-type]
                        if found[k] is not None and top is not None:
                            found[k].append(top)  # type: ignore[union-attr]
                        else:
                            found[k] = None
            if isinstance(s, ir.Assign) and isinstance(s.target, Var):
                if s.target.dtype.is_int and not loops.keys() & _names(s.value) - set(loops):
                    env[s.target.name] = ir.substitute(s.value, env)  # type: ignore[assignment]
                else:
                    env.pop(s.target.name, None)
            elif isinstance(s, ir.Loop):
                visit(s.body, {**loops, s.var: s}, env)
            elif isinstance(s, ir.If):
                visit(s.then, loops, env)
                visit(s.orelse, loops, env)
            elif isinstance(s, ir.While):
                visit(s.body, {**loops, "": s}, {})  # type: ignore[dict-item]
            if isinstance(s, (ir.Loop, ir.If, ir.While)):
                for a in ir.walk(s):
                    if isinstance(a, ir.Assign) and isinstance(a.target, Var):
                        env.pop(a.target.name, None)

    visit(body, {}, {})
    out: list[Expr | None] = []
    for tops in found:
        out.append(largest(tops) if tops else None)
    return out


def _names(e: object) -> set[str]:
    return {n.name for n in ir.walk(e) if isinstance(n, Var)}


def _top(index: Expr, loops: dict[str, Any], params: set[str]) -> Expr | None:
    """``index``'s largest value + 1 with every loop variable at the end of its range that
    makes it largest; None where that cannot be told."""
    e = simplify(index)
    for _ in range(16):
        inside = [v for v in loops if v in _names(e)]
        if not inside:
            break
        v = inside[-1]  # the innermost: its bounds may name the outer ones
        lp = loops[v]
        if not isinstance(lp, ir.Loop) or not isinstance(lp.step, Const) or not isinstance(lp.step.value, int):
            return None
        sign = _sign_of(e, v)
        if sign is None:
            return None
        up = lp.step.value > 0
        high = simplify(ir.BinOp("sub", lp.stop, Const(1, DType.I32), DType.I32)) if up else lp.start
        low = lp.start if up else simplify(ir.BinOp("add", lp.stop, Const(1, DType.I32), DType.I32))
        e = simplify(ir.substitute(e, {v: high if sign >= 0 else low}))  # type: ignore[arg-type]
    if _names(e) - params or any(isinstance(n, ir.Load) for n in ir.walk(e)):
        return None
    return simplify(ir.BinOp("add", e, Const(1, DType.I32), DType.I32))


def _sign_of(e: Expr, var: str) -> int | None:
    """The sign of ``e``'s coefficient of ``var`` (affine in it; a symbolic coefficient such as a
    leading dimension is taken to be positive), or None."""
    lin = linearize(e)
    if lin is None:
        return None
    terms, _ = lin
    sign = 0
    for atom, k in terms.items():
        if atom == Var(var, atom.dtype):
            s = 1 if k > 0 else -1
        elif var in _names(atom):
            if not (isinstance(atom, ir.BinOp) and atom.op == "mul"
                    and Var(var, atom.dtype) in (atom.lhs, atom.rhs)):
                return None
            other = atom.rhs if atom.lhs == Var(var, atom.dtype) else atom.lhs
            if var in _names(other):
                return None
            s = 1 if k > 0 else -1
        else:
            continue
        if sign and s != sign:
            return None
        sign = s
    return sign


# ---------------------------------------------------------------- reports


def _output_only(cur: Cursor) -> bool:
    """Whether the function prints and writes no argument (a report routine)."""
    params = {str(a.spelling) for a in cur.get_arguments()}
    prints = False
    for node in cur.walk_preorder():
        if node.kind.name == "CALL_EXPR" and str(node.spelling) in _OUTPUT_CALLS:
            prints = True
        if node.kind.name in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR"):
            kids = list(node.get_children())
            if not kids:
                continue
            target = strip(kids[0])
            while target.kind.name in ("ARRAY_SUBSCRIPT_EXPR", "UNARY_OPERATOR"):
                target = strip(next(iter(target.get_children())))
            op = c_clang.binary_op(node) if node.kind.name != "UNARY_OPERATOR" else c_clang.unary_op(node)
            assigns = op.endswith("=") and op not in ("==", "!=", "<=", ">=") or "++" in op or "--" in op
            if assigns and str(target.spelling) in params and strip(kids[0]).kind.name != "DECL_REF_EXPR":
                return False
    return prints


def _scops(pragmas: dict[int, c_clang.Pragma], cur: Cursor) -> list[str]:
    first, last = cur.extent.start.line, cur.extent.end.line
    starts = sorted({p.line for p in pragmas.values() if first <= p.line <= last and re.match(r"scop\b", p.text)})
    ends = sorted({p.line for p in pragmas.values() if first <= p.line <= last and re.match(r"endscop\b", p.text)})
    return [f"#pragma scop at line {s}{f' to {e}' if e else ''}: the source asserts a static control part (affine"
            " loops and subscripts)" for s, e in
            zip(starts, [*ends, *[0] * len(starts)], strict=False)]

