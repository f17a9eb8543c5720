"""Hand-built IR signatures of tests/validation_data/kernels.f (bodies empty:
validation only needs the signature, plus a reduction marker where one is)."""

from __future__ import annotations

from pathlib import Path

from translate import ir
from translate.ir import Array, BinOp, Call, Const, DType, Intent, Kernel, Loop, Origin, Reduction, Scalar, Var

DATA = Path(__file__).parent / "validation_data"
FORTRAN = DATA / "kernels.f"
I32, F64 = DType.I32, DType.F64


def v(name: str) -> Var:
    return Var(name, I32)


def c(value: int) -> Const:
    return Const(value, I32)


def add(a: ir.Expr, b: ir.Expr) -> BinOp:
    return BinOp("add", a, b, I32)


def sub(a: ir.Expr, b: ir.Expr) -> BinOp:
    return BinOp("sub", a, b, I32)


def mul(a: ir.Expr, b: ir.Expr) -> BinOp:
    return BinOp("mul", a, b, I32)


def strided(n: str, inc: str) -> ir.Expr:
    """1 + (n-1)*|inc|: the extent of X(*) accessed as X(1+(I-1)*INC)."""
    return add(c(1), mul(sub(v(n), c(1)), Call("abs", (v(inc),), I32)))


def origin(line: int) -> Origin:
    return Origin("tests/validation_data/kernels.f", line)


_REDUCE = (Loop("i", c(0), v("n"), c(1), (), ir.LoopKind.PARALLEL, (Reduction("t", "add", F64),)),)

DAXPY = Kernel("daxpy", (
    Scalar("n", I32), Scalar("da", F64),
    Array("dx", F64, (strided("n", "incx"),)), Scalar("incx", I32),
    Array("dy", F64, (strided("n", "incy"),), intent=Intent.INOUT), Scalar("incy", I32),
), (), (), origin(2))

DDOT = Kernel("ddot", (
    Scalar("n", I32),
    Array("dx", F64, (strided("n", "incx"),)), Scalar("incx", I32),
    Array("dy", F64, (strided("n", "incy"),)), Scalar("incy", I32),
), (), _REDUCE, origin(20), result=F64)

STENCIL = Kernel("stencil", (
    Scalar("n", I32), Scalar("m", I32),
    Array("a", F64, (v("lda"), add(v("m"), c(2))), lower=(c(0), c(0))), Scalar("lda", I32),
    Array("b", F64, (v("ldb"), v("m")), intent=Intent.OUT), Scalar("ldb", I32),
), (), (), origin(41))

SCALE = Kernel("scale", (
    Scalar("n", I32),
    Array("x", F64, (v("n"),), intent=Intent.INOUT),
    Scalar("alpha", F64, binding="common:/params/"),
    Scalar("total", F64, Intent.OUT, binding="common:/params/"),
), (), _REDUCE, origin(54))

MATVEC = Kernel("matvec", (
    Scalar("trans", DType.CHAR), Scalar("m", I32), Scalar("n", I32),
    Array("a", F64, (v("lda"), v("n"))), Scalar("lda", I32),
    Array("x", F64, (Call("max", (v("m"), v("n")), I32),)),
    Array("y", F64, (Call("max", (v("m"), v("n")), I32),), intent=Intent.OUT),
), (), _REDUCE, origin(68))

VSQRT = Kernel("vsqrt", (
    Scalar("n", I32), Array("x", F64, (v("n"),)), Array("y", F64, (v("n"),), intent=Intent.OUT),
), (), (), origin(100))

ALL = [DAXPY, DDOT, STENCIL, SCALE, MATVEC, VSQRT]
