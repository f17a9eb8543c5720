"""COMPLEX values lowered to pairs of reals.

A COMPLEX array is stored as Fortran stores it, real and imaginary parts interleaved: the IR
sees a real array with one more, leading, dimension of extent 2 (``u(i, j)`` is
``u[0, i, j] + i*u[1, i, j]``), so the translation takes the program's own memory. A COMPLEX
local scalar ``x`` is two real locals ``x_re`` and ``x_im``. Expressions are lowered to their
(real, imaginary) parts: + - * / with real or complex operands (division by a complex value
as gfortran expands it, Smith's method), integer powers, CMPLX/DCMPLX, CONJG, EXP;
REAL/DBLE, AIMAG/DIMAG and ABS take a part or the modulus, and a COMPLEX value assigned to a
real or integer variable gives its real part. Complex scalar arguments, globals and function
results, complex array syntax and comparisons are refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fparser.two import Fortran2003 as F
from fparser.two.utils import BinaryOpBase, UnaryOpBase

from parsers.base import Unsupported
from translate.ir import BinOp, Call, Cast, Const, DType, Expr, Load, Select, UnOp, Var
from translate.simplify import add, mul, simplify, sub

if TYPE_CHECKING:
    from parsers.fortran_expr import ExprLowerer
    from parsers.fortran_scope import Sym

Pair = tuple[Expr, Expr]

MAKERS = ("cmplx", "dcmplx")
CONJ = ("conjg", "dconjg")
REAL_PART = ("real", "dble", "dreal")
IMAG_PART = ("aimag", "dimag", "imag")
MODULUS = ("abs", "cabs", "cdabs", "zabs")
COMPLEX_MATH = ("exp", "cexp", "cdexp")


def is_complex(ex: ExprLowerer, node: object) -> bool:
    """Whether the expression ``node`` has a COMPLEX value."""
    if isinstance(node, F.Parenthesis):
        return is_complex(ex, node.items[1])
    if isinstance(node, F.Complex_Literal_Constant):
        return True
    if isinstance(node, F.Name):
        sym = ex.scope.lookup(str(node).lower())
        return sym is not None and sym.complex
    if isinstance(node, (F.Part_Ref, F.Intrinsic_Function_Reference, F.Function_Reference, F.Structure_Constructor)):
        name = str(node.items[0]).lower()
        sym = ex.scope.lookup(name)
        if sym is not None and sym.dims is not None:
            return sym.complex
        args = _args(node)
        if name in MAKERS or name in CONJ:
            return True
        if name in COMPLEX_MATH:
            return bool(args) and is_complex(ex, args[0])
        return False
    if isinstance(node, BinaryOpBase):
        lhs, op, rhs = node.items
        if str(op).upper() in ("+", "-", "*", "/"):
            return is_complex(ex, lhs) or is_complex(ex, rhs)
        if str(op) == "**":
            return is_complex(ex, lhs)
        return False
    if isinstance(node, UnaryOpBase):
        return str(node.items[0]) in ("+", "-") and is_complex(ex, node.items[1])
    return False


def _args(node: object) -> list[object]:
    return list(node.items[1].items) if node.items[1] is not None else []  # type: ignore[attr-defined]


def parts_of(ex: ExprLowerer, name: str, sym: Sym) -> Pair:
    """The two real locals of a COMPLEX scalar (declared on first use)."""
    if sym.binding is not None or sym.is_arg:
        raise Unsupported(f"COMPLEX scalar {name} at {ex.where()} (an argument or global) cannot be lowered")
    dtype = sym.dtype or DType.F64
    out = []
    for part in ("re", "im"):
        pname = f"{name}_{part}"
        psym = ex.scope.get(pname)
        if psym.dtype is None:
            psym.dtype = dtype
        elif psym.dtype != dtype or psym.complex or psym.dims is not None:
            raise Unsupported(f"COMPLEX {name} at {ex.where()}: the name {pname} for its {part} part is taken")
        ex.used.add(pname)
        out.append(Var(pname, dtype))
    return out[0], out[1]


def element(ex: ExprLowerer, name: str, sym: Sym, subs: list[object]) -> Pair:
    """The two parts of an element of a COMPLEX array: the leading dimension 0 and 1."""
    load = ex.load(name, sym, subs, complex_ok=True)
    if ex.sections is not None and any(isinstance(s, F.Subscript_Triplet) for s in subs):
        raise Unsupported(f"COMPLEX array section '{name}(...)' at {ex.where()} cannot be lowered")
    return (Load(name, (Const(0, DType.I32), *load.index), load.dtype),
            Load(name, (Const(1, DType.I32), *load.index), load.dtype))


def cexpr(ex: ExprLowerer, node: object, dtype: DType = DType.F64) -> Pair:
    """The (real, imaginary) parts of an expression; a real one has imaginary part 0."""
    if not is_complex(ex, node):
        return _real(ex.expr(node), dtype), Const(0.0, dtype)
    if isinstance(node, F.Parenthesis):
        return cexpr(ex, node.items[1], dtype)
    if isinstance(node, F.Complex_Literal_Constant):
        return _literal(ex, node.items[0], dtype), _literal(ex, node.items[1], dtype)
    if isinstance(node, F.Name):
        name = str(node).lower()
        sym = ex.scope.lookup(name)
        assert sym is not None
        if sym.dims is not None:
            raise Unsupported(f"whole COMPLEX array {name} at {ex.where()} cannot be lowered")
        return parts_of(ex, name, sym)
    if isinstance(node, (F.Part_Ref, F.Intrinsic_Function_Reference, F.Function_Reference, F.Structure_Constructor)):
        return _call(ex, node, dtype)
    if isinstance(node, UnaryOpBase):
        re, im = cexpr(ex, node.items[1], dtype)
        return (re, im) if str(node.items[0]) == "+" else (_neg(re), _neg(im))
    if isinstance(node, BinaryOpBase):
        lhs, op, rhs = node.items
        op = str(op)
        if op == "**":
            return _power(ex, cexpr(ex, lhs, dtype), rhs)
        a, b = cexpr(ex, lhs, dtype), cexpr(ex, rhs, dtype)
        return _arith(op, a, b, dtype, ex.where())
    raise Unsupported(f"COMPLEX expression '{node}' at {ex.where()} cannot be lowered")


def _call(ex: ExprLowerer, node: object, dtype: DType) -> Pair:
    name = str(node.items[0]).lower()  # type: ignore[attr-defined]
    sym = ex.scope.lookup(name)
    args = _args(node)
    if sym is not None and sym.dims is not None:
        return element(ex, name, sym, args)
    if any(isinstance(a, F.Actual_Arg_Spec) for a in args):
        raise Unsupported(f"keyword arguments to {name.upper()} at {ex.where()} cannot be lowered")
    if name in MAKERS:
        if len(args) == 1:
            return cexpr(ex, args[0], dtype)
        return _real(ex.expr(args[0]), dtype), _real(ex.expr(args[1]), dtype)
    if name in CONJ:
        re, im = cexpr(ex, args[0], dtype)
        return re, _neg(im)
    if name in COMPLEX_MATH:
        re, im = cexpr(ex, args[0], dtype)
        mag = Call("exp", (re,), dtype)
        return (BinOp("mul", mag, Call("cos", (im,), dtype), dtype),
                BinOp("mul", mag, Call("sin", (im,), dtype), dtype))
    raise Unsupported(f"{name.upper()} of a COMPLEX value at {ex.where()} cannot be lowered")


def real_valued(ex: ExprLowerer, name: str, subs: list[object]) -> Expr | None:
    """REAL/DBLE, AIMAG/DIMAG or ABS of a COMPLEX argument; None when the argument is real."""
    if not subs or not is_complex(ex, subs[0]) or name not in (*REAL_PART, *IMAG_PART, *MODULUS):
        return None
    re, im = cexpr(ex, subs[0], ex.complex_dtype(subs[0]))
    if name in REAL_PART:
        out = re
    elif name in IMAG_PART:
        out = im
    else:
        out = Call("sqrt", (BinOp("add", BinOp("mul", re, re, re.dtype), BinOp("mul", im, im, im.dtype), re.dtype),),
                   re.dtype)
    if name == "dble":
        return _real(out, DType.F64)
    return out


def _literal(ex: ExprLowerer, part: object, dtype: DType) -> Expr:
    """A part of a complex literal (``(0.0d0, -1.5d0)``): a signed number or a constant name."""
    if isinstance(part, (F.Signed_Real_Literal_Constant, F.Signed_Int_Literal_Constant)):
        text = str(part).lower().split("_")[0].replace("d", "e")
        return Const(float(text), dtype)
    return _real(ex.expr(part), dtype)


def _real(e: Expr, dtype: DType) -> Expr:
    if e.dtype == DType.BOOL or e.dtype == DType.CHAR:
        raise Unsupported("a logical or character value in a COMPLEX expression")
    return simplify(Cast(dtype, e)) if e.dtype != dtype else e


def _neg(e: Expr) -> Expr:
    return simplify(UnOp("neg", e, e.dtype))


def _arith(op: str, a: Pair, b: Pair, t: DType, where: str = "") -> Pair:
    (ar, ai), (br, bi) = a, b
    zero = Const(0.0, t)
    if op == "+":
        return add(ar, br), add(ai, bi)
    if op == "-":
        return sub(ar, br), sub(ai, bi)
    if op == "*":
        if bi == zero:  # by a real: each part, as the compiler does
            return mul(ar, br), mul(ai, br)
        if ai == zero:
            return mul(ar, br), mul(ar, bi)
        return sub(mul(ar, br), mul(ai, bi)), add(mul(ar, bi), mul(ai, br))
    if op == "/" and bi == zero:
        return simplify(BinOp("div", ar, br, t)), simplify(BinOp("div", ai, br, t))
    if op == "/":
        return _divide(a, b, t)
    raise Unsupported(f"operator {op} on COMPLEX values at {where} cannot be lowered")


def _divide(a: Pair, b: Pair, t: DType) -> Pair:
    """Division by a complex value as gfortran expands it (Smith's method: the ratio of the
    divisor's smaller part to its larger keeps the intermediate values in range)."""
    (ar, ai), (br, bi) = a, b

    def op(name: str, x: Expr, y: Expr) -> Expr:
        return BinOp(name, x, y, t)

    small_re = BinOp("lt", Call("abs", (br,), t), Call("abs", (bi,), t), DType.BOOL)
    # |br| < |bi|
    r1 = op("div", br, bi)
    d1 = op("add", op("mul", br, r1), bi)
    re1 = op("div", op("add", op("mul", ar, r1), ai), d1)
    im1 = op("div", op("sub", op("mul", ai, r1), ar), d1)
    # |br| >= |bi|
    r2 = op("div", bi, br)
    d2 = op("add", op("mul", bi, r2), br)
    re2 = op("div", op("add", op("mul", ai, r2), ar), d2)
    im2 = op("div", op("sub", ai, op("mul", ar, r2)), d2)
    return Select(small_re, re1, re2, t), Select(small_re, im1, im2, t)


def _power(ex: ExprLowerer, base: Pair, exponent: object) -> Pair:
    """An integer constant power by repeated products (0 to 8)."""
    e = simplify(ex.expr(exponent))
    if not (isinstance(e, Const) and isinstance(e.value, int) and 0 <= e.value <= 8):
        raise Unsupported(f"COMPLEX power '{exponent}' at {ex.where()} (only constant 0 to 8) cannot be lowered")
    t = base[0].dtype
    out: Pair = (Const(1.0, t), Const(0.0, t))
    for _ in range(e.value):
        out = _arith("*", out, base, t)
    return out
