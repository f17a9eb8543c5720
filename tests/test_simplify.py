from translate.ir import BinOp, Call, Cast, Const, DType, Var, evaluate, expr_str
from translate.simplify import const_int, linearize, simplify

INT = DType.I32
i, n, incx = Var("i", INT), Var("n", INT), Var("incx", INT)


def c(v: int) -> Const:
    return Const(v, INT)


def b(op: str, x, y, t: DType = INT) -> BinOp:
    return BinOp(op, x, y, t)


def test_shift_cancels() -> None:
    assert simplify(b("sub", b("add", i, c(1)), c(1))) == i


def test_blas_stride_index() -> None:
    # X(1 + (I-1)*INCX) with I -> i+1, minus lower bound 1
    e = b("sub", b("add", c(1), b("mul", b("sub", b("add", i, c(1)), c(1)), incx)), c(1))
    assert simplify(e) == b("mul", i, incx)


def test_identities_and_constants() -> None:
    assert simplify(b("mul", n, c(1))) == n
    assert simplify(b("add", c(0), n)) == n
    assert simplify(b("add", b("add", n, c(2)), c(3))) == b("add", n, c(5))
    blas_start = b("sub", c(1), b("mul", b("sub", n, c(1)), incx))
    assert simplify(blas_start) == blas_start
    assert simplify(b("div", c(-7), c(2))) == c(-3)  # truncating division
    assert simplify(b("mod", c(-7), c(2))) == c(-1)
    assert const_int(b("mul", c(3), b("add", c(1), c(1)))) == 6


def test_distributes_constant_factor_exactly() -> None:
    e = simplify(b("mul", b("add", i, c(1)), c(4)))
    for v in range(-3, 4):
        assert evaluate(e, {"i": v}) == (v + 1) * 4
    assert linearize(e) == ({i: 4}, 4)


def test_float_not_reassociated() -> None:
    x = Var("x", DType.F64)
    e = BinOp("add", BinOp("add", x, Const(1.0, DType.F64), DType.F64), Const(2.0, DType.F64), DType.F64)
    assert simplify(e) == e
    assert simplify(BinOp("mul", x, Cast(DType.F64, c(2)), DType.F64)) == BinOp("mul", x, Const(2.0, DType.F64),
                                                                                  DType.F64)


def test_max_of_constants_and_readable_output() -> None:
    assert simplify(Call("max", (c(0), c(5)), INT)) == c(5)
    assert expr_str(simplify(b("sub", b("add", n, c(1)), n))) == "1"
