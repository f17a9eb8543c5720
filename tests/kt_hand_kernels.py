"""Hand-built IR kernels (no frontend needed) shared by the schedule and the
C-style target tests. Each mirrors a real routine shape: quick returns, stride
branches, reductions, halos, collapsed nests, recurrences, negative steps and
host branches on character flags."""

from __future__ import annotations

from dataclasses import replace

from translate import ir
from translate.ir import DType, Intent, LoopKind

F64, I32, CHAR = DType.F64, DType.I32, DType.CHAR
P, S = LoopKind.PARALLEL, LoopKind.SERIAL


def v(name: str, dtype: DType = I32) -> ir.Var:
    return ir.Var(name, dtype)


def c(value: int | float | str, dtype: DType | None = None) -> ir.Const:
    if dtype is None:
        dtype = I32 if isinstance(value, int) else CHAR if isinstance(value, str) else F64
    return ir.Const(value, dtype)


def b(op: str, lhs: ir.Expr, rhs: ir.Expr, dtype: DType | None = None) -> ir.BinOp:
    if dtype is None:
        dtype = DType.BOOL if op in ("lt", "le", "gt", "ge", "eq", "ne", "and", "or") else lhs.dtype
    return ir.BinOp(op, lhs, rhs, dtype)


def ld(array: str, *index: ir.Expr, dtype: DType = F64) -> ir.Load:
    return ir.Load(array, tuple(index), dtype)


def asg(target: ir.Var | ir.Load, value: ir.Expr) -> ir.Assign:
    return ir.Assign(target, value)


def loop(var: str, start: ir.Expr, stop: ir.Expr, body: list[ir.Stmt], kind: LoopKind = P, step: int = 1,
         reductions: tuple[ir.Reduction, ...] = (), line: int = 0) -> ir.Loop:
    return ir.Loop(var, start, stop, c(step), tuple(body), kind, reductions, line=line)


def extent(n: ir.Expr, inc: ir.Expr) -> ir.Expr:
    """1 + (n - 1) * |inc|"""
    return b("add", c(1), b("mul", b("sub", n, c(1)), ir.Call("abs", (inc,), I32)))


def origin(line: int) -> ir.Origin:
    return ir.Origin("blas.f", line)


def daxpy() -> ir.Kernel:
    n, incx, incy, ix, iy, i = v("n"), v("incx"), v("incy"), v("ix"), v("iy"), v("i")
    da = v("da", F64)
    body: list[ir.Stmt] = [
        ir.If(b("le", n, c(0)), (ir.Return(),)),
        ir.If(b("eq", da, c(0.0)), (ir.Return(),)),
        ir.If(
            b("and", b("eq", incx, c(1)), b("eq", incy, c(1))),
            (loop("i", c(0), n, [asg(ld("dy", i), b("add", ld("dy", i), b("mul", da, ld("dx", i))))], line=20),),
            (
                asg(ix, c(0)),
                asg(iy, c(0)),
                ir.If(b("lt", incx, c(0)), (asg(ix, b("mul", b("add", ir.UnOp("neg", n, I32), c(1)), incx)),)),
                ir.If(b("lt", incy, c(0)), (asg(iy, b("mul", b("add", ir.UnOp("neg", n, I32), c(1)), incy)),)),
                loop("i", c(0), n, [
                    asg(ld("dy", iy), b("add", ld("dy", iy), b("mul", da, ld("dx", ix)))),
                    asg(ix, b("add", ix, incx)),
                    asg(iy, b("add", iy, incy)),
                ], kind=S, line=30),
            ),
        ),
    ]
    return ir.Kernel(
        "daxpy",
        (ir.Scalar("n", I32), ir.Scalar("da", F64), ir.Array("dx", F64, (extent(n, incx),)),
         ir.Scalar("incx", I32), ir.Array("dy", F64, (extent(n, incy),), intent=Intent.INOUT),
         ir.Scalar("incy", I32)),
        (ir.Scalar("i", I32), ir.Scalar("ix", I32), ir.Scalar("iy", I32)),
        tuple(body), origin(1),
    )


def ddot() -> ir.Kernel:
    n, i, dtemp = v("n"), v("i"), v("dtemp", F64)
    body = (
        asg(v("ddot", F64), c(0.0)),
        asg(dtemp, c(0.0)),
        ir.If(b("le", n, c(0)), (ir.Return(),)),
        loop("i", c(0), n, [asg(dtemp, b("add", dtemp, b("mul", ld("dx", i), ld("dy", i))))],
             reductions=(ir.Reduction("dtemp", "add", F64),), line=12),
        asg(v("ddot", F64), dtemp),
    )
    return ir.Kernel(
        "ddot",
        (ir.Scalar("n", I32), ir.Array("dx", F64, (n,)), ir.Array("dy", F64, (n,))),
        (ir.Scalar("i", I32), ir.Scalar("dtemp", F64), ir.Scalar("ddot", F64)),
        body, origin(5), result=F64,
    )


def stencil() -> ir.Kernel:
    """b(1:n, 1:m) from a(0:n+1, 0:m+1): a 5-point average; halo untouched."""
    n, m, i, j = v("n"), v("m"), v("i"), v("j")
    ip, jp = b("add", i, c(1)), b("add", j, c(1))

    def a(x: ir.Expr, y: ir.Expr) -> ir.Load:
        return ld("a", x, y)

    value = b("mul", c(0.25), b("add", b("add", b("add", a(i, jp), a(b("add", i, c(2)), jp)), a(ip, j)),
                                a(ip, b("add", j, c(2)))))
    inner = loop("i", c(0), n, [asg(ld("b", ip, jp), value)], line=8)
    shape = (b("add", n, c(2)), b("add", m, c(2)))
    return ir.Kernel(
        "stencil",
        (ir.Scalar("n", I32), ir.Scalar("m", I32), ir.Array("a", F64, shape, lower=(c(0), c(0))),
         ir.Array("b", F64, shape, intent=Intent.INOUT, lower=(c(0), c(0)))),
        (ir.Scalar("i", I32), ir.Scalar("j", I32)),
        (loop("j", c(0), m, [inner], line=7),), origin(3),
    )


def lap3d() -> ir.Kernel:
    """lu(1:nx, 1:ny, 1:nz) = the 7-point sum of u minus 6 u, arrays (0:n+1) in each dim;
    the halo of lu untouched."""
    nx, ny, nz, i, j, k = v("nx"), v("ny"), v("nz"), v("i"), v("j"), v("k")

    def p1(x: ir.Expr, d: int = 1) -> ir.Expr:
        return b("add", x, c(d))

    def u(x: ir.Expr, y: ir.Expr, z: ir.Expr) -> ir.Load:
        return ld("u", x, y, z)

    terms = [u(i, p1(j), p1(k)), u(p1(i, 2), p1(j), p1(k)), u(p1(i), j, p1(k)), u(p1(i), p1(j, 2), p1(k)),
             u(p1(i), p1(j), k), u(p1(i), p1(j), p1(k, 2))]
    total: ir.Expr = b("mul", c(-6.0), u(p1(i), p1(j), p1(k)))
    for t in terms:
        total = b("add", total, t)
    inner = loop("i", c(0), nx, [asg(ld("lu", p1(i), p1(j), p1(k)), total)], line=9)
    shape = (p1(nx, 2), p1(ny, 2), p1(nz, 2))
    return ir.Kernel(
        "lap3d",
        (ir.Scalar("nx", I32), ir.Scalar("ny", I32), ir.Scalar("nz", I32),
         ir.Array("u", F64, shape, lower=(c(0), c(0), c(0))),
         ir.Array("lu", F64, shape, intent=Intent.INOUT, lower=(c(0), c(0), c(0)))),
        (ir.Scalar("i", I32), ir.Scalar("j", I32), ir.Scalar("k", I32)),
        (loop("k", c(0), nz, [loop("j", c(0), ny, [inner], line=8)], line=7),), origin(3),
    )


def axpy3d() -> ir.Kernel:
    """w(i,j,k) = s*u(i,j,k) + z(i,j,k), then umax = max |u|, both 3-D collapsed."""
    nx, ny, nz, i, j, k, s = v("nx"), v("ny"), v("nz"), v("i"), v("j"), v("k"), v("s", F64)
    shape = (nx, ny, nz)
    body = [asg(ld("w", i, j, k), b("add", b("mul", s, ld("u", i, j, k)), ld("z", i, j, k)))]
    umax = v("umax", F64)
    red = [asg(umax, ir.Call("max", (umax, ir.Call("abs", (ld("u", i, j, k),), F64)), F64))]
    nest1 = loop("k", c(0), nz, [loop("j", c(0), ny, [loop("i", c(0), nx, body, line=12)], line=11)], line=10)
    rr = (ir.Reduction("umax", "max", F64),)
    nest2 = loop("k", c(0), nz, [loop("j", c(0), ny, [loop("i", c(0), nx, red, line=18, reductions=rr)],
                                      line=17, reductions=rr)], line=16, reductions=rr)
    return ir.Kernel(
        "axpy3d",
        (ir.Scalar("nx", I32), ir.Scalar("ny", I32), ir.Scalar("nz", I32), ir.Scalar("s", F64),
         ir.Array("u", F64, shape), ir.Array("z", F64, shape), ir.Array("w", F64, shape, intent=Intent.OUT),
         ir.Scalar("umax", F64, Intent.OUT)),
        (ir.Scalar("i", I32), ir.Scalar("j", I32), ir.Scalar("k", I32)),
        (asg(umax, c(0.0)), nest1, nest2), origin(9),
    )


def recur() -> ir.Kernel:
    """x(i) = c*x(i-1) + y(i) (loop-carried), and total = sum of x done serially."""
    n, i, cc, t = v("n"), v("i"), v("c", F64), v("t", F64)
    serial = loop("i", c(1), n, [asg(ld("x", i), b("add", b("mul", cc, ld("x", b("sub", i, c(1)))), ld("y", i)))],
                  kind=S, line=6)
    acc = loop("i", c(0), n, [asg(t, b("add", t, ld("x", i)))], kind=S, line=9)
    return ir.Kernel(
        "recur",
        (ir.Scalar("n", I32), ir.Scalar("c", F64), ir.Array("x", F64, (n,), intent=Intent.INOUT),
         ir.Array("y", F64, (n,)), ir.Scalar("total", F64, Intent.OUT)),
        (ir.Scalar("i", I32), ir.Scalar("t", F64)),
        (asg(t, c(0.0)), serial, acc, asg(v("total", F64), t)), origin(2),
    )


def reverse() -> ir.Kernel:
    """do i = n, 1, -1: y(i) = x(n-i+1);  do i = 1, n, 2: z(i) = 2*x(i)."""
    n, i = v("n"), v("i")
    neg = loop("i", b("sub", n, c(1)), c(-1), [asg(ld("y", i), ld("x", b("sub", b("sub", n, c(1)), i)))],
               step=-1, line=4)
    two = loop("i", c(0), n, [asg(ld("z", i), b("mul", c(2.0), ld("x", i)))], step=2, line=7)
    return ir.Kernel(
        "reverse",
        (ir.Scalar("n", I32), ir.Array("x", F64, (n,)), ir.Array("y", F64, (n,), intent=Intent.OUT),
         ir.Array("z", F64, (n,), intent=Intent.INOUT)),
        (ir.Scalar("i", I32),), (neg, two), origin(1),
    )


def dgemv() -> ir.Kernel:
    """y += alpha*op(A)*x, unit strides, reference-BLAS loop shapes."""
    m, n, lda, i, j = v("m"), v("n"), v("lda"), v("i"), v("j")
    alpha, temp, trans = v("alpha", F64), v("temp", F64), v("trans", CHAR)
    lsame = (lambda ch: ir.Call("lsame", (trans, c(ch)), DType.BOOL))  # noqa: E731
    notrans = loop("j", c(0), n, [
        asg(temp, b("mul", alpha, ld("x", j))),
        loop("i", c(0), m, [asg(ld("y", i), b("add", ld("y", i), b("mul", temp, ld("a", i, j))))], line=40),
    ], kind=S, line=38)
    dotform = loop("j", c(0), n, [
        asg(temp, c(0.0)),
        loop("i", c(0), m, [asg(temp, b("add", temp, b("mul", ld("a", i, j), ld("x", i))))], kind=S, line=50),
        asg(ld("y", j), b("add", ld("y", j), b("mul", alpha, temp))),
    ], line=48)
    body = (
        asg(v("info"), c(0)),
        ir.If(b("and", ir.UnOp("not", lsame("N"), DType.BOOL), ir.UnOp("not", lsame("T"), DType.BOOL)),
              (asg(v("info"), c(1)),)),
        ir.If(b("ne", v("info"), c(0)), (ir.ErrorCall("xerbla", (c("DGEMV ", CHAR), v("info"))), ir.Return())),
        ir.If(b("or", b("or", b("eq", m, c(0)), b("eq", n, c(0))), b("eq", alpha, c(0.0))), (ir.Return(),)),
        ir.If(lsame("N"), (notrans,), (dotform,)),
    )
    mx = ir.Call("max", (m, n), I32)
    return ir.Kernel(
        "dgemv",
        (ir.Scalar("trans", CHAR), ir.Scalar("m", I32), ir.Scalar("n", I32), ir.Scalar("alpha", F64),
         ir.Array("a", F64, (lda, n)), ir.Scalar("lda", I32), ir.Array("x", F64, (mx,)),
         ir.Array("y", F64, (mx,), intent=Intent.INOUT)),
        (ir.Scalar("i", I32), ir.Scalar("j", I32), ir.Scalar("info", I32), ir.Scalar("temp", F64)),
        body, origin(30),
    )


def gemv_rows() -> ir.Kernel:
    """DGEMV 'N' as the interchange leaves it: a parallel I loop around the serial J loop,
    y(i) += temp*a(i, j) with temp = alpha*x(j) private (GEMV_N below, without the frontend)."""
    m, n, i, j, alpha, temp = v("m"), v("n"), v("i"), v("j"), v("alpha", F64), v("temp", F64)
    inner = loop("j", c(0), n, [asg(temp, b("mul", alpha, ld("x", j))),
                               asg(ld("y", i), b("add", ld("y", i), b("mul", temp, ld("a", i, j))))], kind=S, line=9)
    outer = replace(loop("i", c(0), m, [inner], line=8), private=("temp",))
    return ir.Kernel(
        "gemvn",
        (ir.Scalar("m", I32), ir.Scalar("n", I32), ir.Scalar("alpha", F64), ir.Array("a", F64, (m, n)),
         ir.Array("x", F64, (n,)), ir.Array("y", F64, (m,), intent=Intent.INOUT)),
        (ir.Scalar("i", I32), ir.Scalar("j", I32), ir.Scalar("temp", F64)),
        (outer,), origin(1),
    )


ALL = (daxpy, ddot, stencil, axpy3d, lap3d, recur, reverse, dgemv)


# ---------------------------------------------------- from Fortran (frontend + analysis)

# reference BLAS's column loop (DGEMV 'N' form): a serial J loop whose body branches on an
# array value and launches the parallel I loop; {args}, {decls}, {branch} and {tail} vary it
GEMVN = """
      SUBROUTINE GEMVN(M,N,ALPHA,A,LDA,X,INCX,Y{args})
      INTEGER M,N,LDA,INCX
      DOUBLE PRECISION ALPHA
      DOUBLE PRECISION A(LDA,*),X(*),Y(*)
      DOUBLE PRECISION TEMP,ZERO
      PARAMETER (ZERO=0.0D+0)
      INTEGER I,J,JX,KX
{decls}
      IF (INCX.GT.0) THEN
          KX = 1
      ELSE
          KX = 1 - (N-1)*INCX
      END IF
      JX = KX
      DO 20 J = 1,N
{branch}
          JX = JX + INCX
   20 CONTINUE
{tail}
      END
"""

GEMVN_BRANCH = """
          IF (X(JX).NE.ZERO) THEN
              TEMP = ALPHA*X(JX)
              DO 10 I = 1,M
                  Y(I) = Y(I) + TEMP*A(I,J)
   10         CONTINUE
          END IF"""


def gemvn(branch: str = GEMVN_BRANCH, args: str = "", decls: str = "", tail: str = "") -> ir.Kernel:
    """GEMVN (or a variant of it) through the Fortran frontend and the analysis."""
    from parsers.fortran import parse_source
    from translate.analysis import analyze

    text = GEMVN.format(args=args, decls=decls, branch=branch.strip("\n"), tail=tail)
    (kernel,) = parse_source(text, "gemvn.f", fixed_form=True).kernels
    assert isinstance(kernel, ir.Kernel)
    return analyze(kernel)


# DGEMV 'N' in free form, column by column (a serial J loop around the parallel I loop): the
# loop interchange and the split of the serial loop start from it
GEMV_N = """
subroutine gemvn(m, n, alpha, a, x, y)
  integer, intent(in) :: m, n
  double precision, intent(in) :: alpha, a(m, n), x(n)
  double precision, intent(inout) :: y(m)
  double precision :: temp
  integer :: i, j
  do j = 1, n
    temp = alpha*x(j)
    do i = 1, m
      y(i) = y(i) + temp*a(i, j)
    end do
  end do
end subroutine
"""
