"""Fortran 90 and later in the frontend: array syntax, WHERE, array intrinsics, assumed-shape
and allocatable arrays, initialised constants. Each construct is run through the lowered IR
(the order audit's interpreter) against numpy, and each has a case that must stay serial or
unsupported."""

from __future__ import annotations

import numpy as np
import pytest

from parsers.fortran import parse_source
from translate import ir
from translate.analysis import analyze
from validation.order_audit import _execute

F8 = np.float64


def lower(src: str) -> dict[str, ir.Kernel | ir.Opaque]:
    return {k.name: k for k in parse_source(src, "t.f90", fixed_form=False).kernels}


def kernel(src: str, name: str) -> ir.Kernel:
    k = lower(src)[name]
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    return k


def run(k: ir.Kernel, scalars: dict, arrays: dict, reverse: bool = False) -> dict:
    """The kernel's outputs by executing its analysed IR (locals, such as temporaries, start at
    zero); ``reverse``: its parallel loops backwards."""
    a = analyze(k)
    env = {p.name: np.zeros([int(ir.evaluate(e, scalars)) for e in p.shape], order="F")
           for p in a.locals if isinstance(p, ir.Array)}
    out, _ = _execute(a, scalars, {**env, **arrays}, reverse=reverse)
    return out


def loops(k: ir.Kernel) -> list[ir.Loop]:
    return [n for s in analyze(k).body for n in ir.walk(s) if isinstance(n, ir.Loop)]


def test_array_assignment_sections_and_scalars() -> None:
    k = kernel("""subroutine s(n, a, b, c)
  integer, intent(in) :: n
  real(8), intent(inout) :: a(n), b(n)
  real(8), intent(in) :: c(n, 3)
  a = b + 2.0d0 * c(:, 2)
  b(2:n:2) = -1.0d0
end subroutine""", "s")
    rng = np.random.default_rng(1)
    n = 7
    a, b, c = rng.standard_normal(n), rng.standard_normal(n), np.asfortranarray(rng.standard_normal((n, 3)))
    out = run(k, {"n": n}, {"a": a.copy(), "b": b.copy(), "c": c})
    want_b = b.copy()
    want_b[1::2] = -1.0
    assert np.allclose(out["a"], b + 2 * c[:, 1]) and np.allclose(out["b"], want_b)
    assert all(lp.kind is ir.LoopKind.PARALLEL for lp in loops(k))


def test_overlapping_sections_evaluate_the_right_side_first() -> None:
    # a(2:n) = a(1:n-1) shifts by one: done in place, a forward loop would smear a(1) everywhere
    k = kernel("""subroutine shift(n, a)
  integer, intent(in) :: n
  real(8), intent(inout) :: a(n)
  a(2:n) = a(1:n-1)
end subroutine""", "shift")
    a = np.arange(1.0, 9.0)
    out = run(k, {"n": 8}, {"a": a.copy()})
    assert np.array_equal(out["a"], np.r_[1.0, a[:-1]])
    assert any(isinstance(d, ir.Array) and d.name.startswith("a_tmp") for d in k.locals)


def test_dependence_between_iterations_of_a_do_loop_stays_serial() -> None:
    k = kernel("""subroutine rows(n, m, a)
  integer :: n, m, i
  real(8) :: a(n, m)
  do i = 2, n
    a(i, :) = a(i - 1, :) + 1.0d0
  end do
end subroutine""", "rows")
    outer, inner = loops(k)
    assert outer.var == "i" and outer.kind is ir.LoopKind.SERIAL
    assert inner.kind is ir.LoopKind.PARALLEL  # along the row: independent
    a = np.asfortranarray(np.zeros((4, 3)))
    out = run(k, {"n": 4, "m": 3}, {"a": a})
    assert np.array_equal(out["a"][:, 0], [0.0, 1.0, 2.0, 3.0])


def test_where_elsewhere() -> None:
    k = kernel("""subroutine w(n, a, b)
  integer :: n
  real(8) :: a(n), b(n)
  where (a > 1.0d0)
    b = sqrt(a)
  elsewhere (a < -1.0d0)
    b = -a
  elsewhere
    b = 0.0d0
  end where
end subroutine""", "w")
    a = np.array([4.0, -3.0, 0.5, 9.0, -0.5])
    out = run(k, {"n": 5}, {"a": a, "b": np.zeros(5)})
    assert np.allclose(out["b"], np.where(a > 1, np.sqrt(np.abs(a)), np.where(a < -1, -a, 0.0)))


def test_where_reading_another_element_of_what_it_assigns_is_not_lowered() -> None:
    op = lower("""subroutine w2(n, a)
  integer :: n
  real(8) :: a(n)
  where (a(1:n-1) > 0.0d0) a(2:n) = 0.0d0
end subroutine""")["w2"]
    assert isinstance(op, ir.Opaque) and "WHERE" in op.reason


@pytest.mark.parametrize("expr, want", [
    ("sum(a)", lambda a, b: a.sum()),
    ("product(b)", lambda a, b: b.prod()),
    ("maxval(a)", lambda a, b: a.max()),
    ("minval(a, mask=a > 0.0d0)", lambda a, b: a[a > 0].min()),
    ("dot_product(a, b)", lambda a, b: a @ b),
    ("dble(count(a > 0.0d0))", lambda a, b: float((a > 0).sum())),
    ("dble(maxloc(a, 1))", lambda a, b: float(np.argmax(a) + 1)),
    ("dble(minloc(a, dim=1))", lambda a, b: float(np.argmin(a) + 1)),
    ("merge_any", None),
])
def test_reductions(expr: str, want) -> None:
    if want is None:  # ANY/ALL
        expr, want = "1.0d0", lambda a, b: 1.0
    k = kernel(f"""subroutine r(n, a, b, s)
  integer :: n
  real(8) :: a(n), b(n), s
  s = {expr}
  if (any(a > 100.0d0) .or. .not. all(b > 0.0d0)) s = -s
end subroutine""", "r")
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(9), rng.uniform(0.5, 1.5, 9)
    a[4] = a.max() + 1.0  # one maximum (MAXLOC's first)
    out = run(k, {"n": 9}, {"a": a, "b": b})
    assert np.isclose(float(out["s"]), want(a, b))
    assert any(lp.reductions for lp in loops(k))


def test_matmul_and_inquiries() -> None:
    k = kernel("""subroutine mm(n, a, b, c, t)
  integer :: n
  real(8) :: a(n, n), b(n, n), c(n, n), t
  c = matmul(a, b)
  t = size(a) + size(a, 2) + lbound(a, 1) + ubound(b, 1) + huge(1) * 0 + epsilon(1.0d0)
end subroutine""", "mm")
    rng = np.random.default_rng(5)
    a, b = (np.asfortranarray(rng.standard_normal((4, 4))) for _ in range(2))
    out = run(k, {"n": 4}, {"a": a, "b": b, "c": np.zeros((4, 4), order="F")})
    assert np.allclose(out["c"], a @ b)
    assert float(out["t"]) == pytest.approx(16 + 4 + 1 + 4 + np.finfo(float).eps)


def test_assumed_shape_extents_are_parameters_with_defaults() -> None:
    k = kernel("""module m
contains
subroutine halo(x, y, depth)
  real(8) :: x(-1:, :), y(:)
  integer :: depth, j
  do j = 1, size(x, 2)
    x(0, j) = y(j) * x(1, j)
  end do
end subroutine
end module""", "halo")
    sizes = {p.name: p for p in k.params if p.binding and p.binding.startswith("extent:")}
    assert set(sizes) == {"x_size1", "x_size2", "y_size1"}
    assert k.param("x").shape == (ir.Var("x_size1", ir.DType.I32), ir.Var("x_size2", ir.DType.I32))
    assert k.param("x").lower[0] == ir.Const(-1, ir.DType.I32)
    assert sizes["x_size1"].default == ir.Const(3, ir.DType.I32)  # x(1, j) is the third element
    assert sizes["y_size1"].default == ir.Var("x_size2", ir.DType.I32)  # y(j) for j up to size(x, 2)
    x = np.asfortranarray(np.ones((3, 5)))
    out = run(k, {"x_size1": 3, "x_size2": 5, "y_size1": 5, "depth": 1}, {"x": x, "y": np.arange(5.0)})
    assert np.array_equal(out["x"][1], np.arange(5.0))


def test_module_allocatable_takes_the_bounds_of_its_allocate() -> None:
    src = """module grid
  implicit none
  integer :: nx
  integer, parameter :: hs = 2
  real(8), allocatable :: state(:, :)
contains
  subroutine setup()
    allocate(state(1-hs:nx+hs, 3))
  end subroutine
  subroutine bump()
    integer :: i
    do i = 1, nx
      state(i, :) = state(i, :) + 1.0d0
    end do
  end subroutine
end module"""
    mods = lower(src)
    k = mods["bump"]
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    state = k.param("state")
    assert isinstance(state, ir.Array) and state.binding == "module:grid"
    assert ir.evaluate(state.shape[0], {"nx": 10}) == 14 and state.lower[0] == ir.Const(-1, ir.DType.I32)
    assert k.param("nx").binding == "module:grid"
    # allocating a module array inside a region changes what the program sees: not lowered
    assert isinstance(mods["setup"], ir.Opaque) and "ALLOCATE" in mods["setup"].reason


def test_initialised_local_is_a_constant_until_assigned() -> None:
    mods = lower("""subroutine c1(n, a)
  integer :: n, i
  integer :: g_dir = 1
  real(8) :: a(n)
  do i = 1, n
    if (g_dir == 1) a(i) = 2.0d0 * a(i)
  end do
end subroutine
subroutine c2(n, a)
  integer :: n
  integer :: calls = 0
  real(8) :: a(n)
  calls = calls + 1
  a(1) = calls
end subroutine""")
    assert isinstance(mods["c1"], ir.Kernel) and "g_dir" not in {d.name for d in mods["c1"].locals}
    assert isinstance(mods["c2"], ir.Opaque) and "implicit SAVE" in mods["c2"].reason


def test_local_allocatable_array() -> None:
    k = kernel("""subroutine tmp(n, a)
  integer :: n
  real(8) :: a(n)
  real(8), allocatable :: w(:)
  allocate(w(n))
  w = 2.0d0 * a
  a = w + 1.0d0
  deallocate(w)
end subroutine""", "tmp")
    w = next(d for d in k.locals if d.name == "w")
    assert isinstance(w, ir.Array) and w.shape == (ir.Var("n", ir.DType.I32),)
    out = run(k, {"n": 3}, {"a": np.array([1.0, 2.0, 3.0])})
    assert np.array_equal(out["a"], [3.0, 5.0, 7.0])


def test_nonconforming_sections_are_reported() -> None:
    op = lower("""subroutine bad(n, a, b)
  integer :: n
  real(8) :: a(n), b(n, n)
  a = b
end subroutine""")["bad"]
    assert isinstance(op, ir.Opaque) and "does not conform" in op.reason


def test_single_precision_literal_widened_keeps_its_value() -> None:
    # real(0.7, kind=8) and a default-real literal assigned to real(8) are 0.699999988..., as compiled
    k = kernel("""subroutine lit(a)
  real(8) :: a(2)
  a(1) = real(0.7, kind=8)
  a(2) = 0.5d0 * 0.7
end subroutine""", "lit")
    out = run(k, {}, {"a": np.zeros(2)})
    assert out["a"][0] == float(np.float32(0.7)) and out["a"][1] == 0.5 * float(np.float32(0.7))


def test_directive_loop_relying_on_private_scratch_arrays_gets_copies_of_them() -> None:
    # NPB SP's x_solve: !$omp parallel do over (k, j) with threadprivate scratch rows cv(i); cv(0)
    # is never written in the loop: every copy starts from cv (tests/test_private_arrays.py)
    src = """subroutine solve(n, a, b)
  integer :: n, i, k
  real(8) :: a(n, n), b(n, n), cv(0:64)
!$omp parallel do private(i)
  do k = 1, n
    do i = 1, n
      cv(i) = 2.0d0 * a(i, k)
    end do
    do i = 1, n
      b(i, k) = cv(i) + cv(i - 1)
    end do
  end do
end subroutine"""
    (outer,) = [lp for lp in loops(kernel(src, "solve")) if lp.var == "k"]
    assert outer.kind is ir.LoopKind.PARALLEL and "cv: one copy per iteration, as the source's" in outer.reason
    a = np.asfortranarray(np.random.default_rng(3).standard_normal((4, 4)))
    want = 2 * a
    want[1:] += 2 * a[:-1]
    for reverse in (False, True):
        out = run(kernel(src, "solve"), {"n": 4}, {"a": a.copy(order="F"), "b": np.zeros((4, 4), order="F")},
                  reverse=reverse)
        assert np.allclose(out["b"], want)
    # the same directive over a loop writing its own elements is honoured
    plain = src.replace("cv(i) = 2.0d0 * a(i, k)", "b(i, k) = 2.0d0 * a(i, k)").replace(
        "b(i, k) = cv(i) + cv(i - 1)", "a(i, k) = b(i, k)")
    assert loops(kernel(plain, "solve"))[0].kind is ir.LoopKind.PARALLEL



def test_private_scratch_rows_indexed_through_inner_scalars_get_a_copy_per_iteration() -> None:
    # NPB MG's rprj3: x1(i1 - 1) with i1 = 2*j1 - d1 is the same row in every j3 iteration (the
    # directive makes it private); filled at every other element before those are read, so each
    # j3 iteration gets its own copy and the loop runs parallel, in either order
    src = """subroutine prj(m, n, r, s, d1)
  integer :: m, n, d1, i1, i3, j1, j3
  real(8) :: r(2 * m + 2, n), s(m, n), x1(64)
!$omp parallel do private(j1, i1, i3, x1)
  do j3 = 2, n - 1
    i3 = j3 + 1 - 1
    do j1 = 2, m
      i1 = 2 * j1 - d1
      x1(i1 - 1) = r(i1 - 1, i3 - 1) + r(i1 - 1, i3 + 1)
    end do
    do j1 = 2, m - 1
      i1 = 2 * j1 - d1
      s(j1, j3) = x1(i1 - 1) + x1(i1 + 1)
    end do
  end do
end subroutine"""
    k = kernel(src, "prj")
    outer = loops(k)[0]
    assert outer.var == "j3" and outer.kind is ir.LoopKind.PARALLEL and "x1: one copy per iteration" in outer.reason
    rng = np.random.default_rng(5)
    m, n = 5, 6
    r = np.asfortranarray(rng.standard_normal((2 * m + 2, n)))
    want = np.zeros((m, n), order="F")
    for j3 in range(2, n):
        x1 = np.full(65, np.nan)  # an element read before it is filled would show
        for j1 in range(2, m + 1):
            x1[2 * j1 - 1 - 1] = r[2 * j1 - 1 - 2, j3 - 2] + r[2 * j1 - 1 - 2, j3]
        for j1 in range(2, m):
            want[j1 - 1, j3 - 1] = x1[2 * j1 - 1 - 1] + x1[2 * j1 - 1 + 1]
    for reverse in (False, True):
        out = run(k, {"m": m, "n": n, "d1": 1}, {"r": r, "s": np.zeros((m, n), order="F")}, reverse=reverse)
        assert np.allclose(out["s"], want)


DO_WHILE = """subroutine jacobi(n, a, b, tol, iters)
  integer :: n, i, iters
  real(8) :: a(n), b(n), tol, err
  err = 2.0d0 * tol + 1.0d0
  iters = 0
  do while (err > tol .and. iters < 100)
    do i = 2, n - 1
      b(i) = 0.5d0 * (a(i - 1) + a(i + 1))
    end do
    err = 0.0d0
    do i = 2, n - 1
      err = max(err, abs(b(i) - a(i)))
      a(i) = b(i)
    end do
    iters = iters + 1
  end do
end subroutine"""


def test_do_while_convergence_loop_stays_on_the_host_around_device_nests() -> None:
    from targets.base import get_renderer
    from translate.partition import HostWhile, partition
    from translate.schedule import Schedule

    k = kernel(DO_WHILE, "jacobi")
    assert [lp.kind for lp in loops(k)] == [ir.LoopKind.PARALLEL, ir.LoopKind.PARALLEL]
    assert any(isinstance(seg, HostWhile) for seg in partition(analyze(k)))
    a = np.r_[1.0, np.zeros(6), 1.0]
    out = run(k, {"n": 8, "tol": 1e-3}, {"a": a.copy(), "b": a.copy()})
    want, iters = a.copy(), 0
    while True:  # the same sweeps in numpy
        b = want.copy()
        b[1:-1] = 0.5 * (want[:-2] + want[2:])
        err = np.abs(b[1:-1] - want[1:-1]).max()
        want[1:-1], iters = b[1:-1], iters + 1
        if err <= 1e-3 or iters >= 100:
            break
    assert int(out["iters"]) == iters and np.allclose(out["a"], want)
    for target, text in (("kokkos", "while (err > tol && iters < 100) {"),
                         ("triton", "while ((err > tol) and (iters < 100)):")):
        r = get_renderer(target, Schedule()).render(analyze(k), Schedule())
        assert text in r.files[r.entry]


def test_a_do_while_inside_a_loop_keeps_that_loop_serial() -> None:
    k = kernel("""subroutine per_row(n, m, a)
  integer :: n, m, i
  real(8) :: a(n, m)
  do i = 1, n
    do while (a(i, 1) > 1.0d0)
      a(i, 1) = 0.5d0 * a(i, 1)
    end do
  end do
end subroutine""", "per_row")
    (outer,) = loops(k)
    assert outer.kind is ir.LoopKind.SERIAL and "DO WHILE" in outer.reason


RESID = """subroutine resid(n1, n2, n3, u, r)
  integer :: n1, n2, n3, i1, i2, i3
  real(8) :: u(n1, n2, n3), r(n1, n2, n3)
  real(8) :: u1(n1), u2(n1)
  do i3 = 2, n3 - 1
    do i2 = 2, n2 - 1
      do i1 = 1, n1
        u1(i1) = u(i1, i2 - 1, i3) + u(i1, i2 + 1, i3)
        u2(i1) = u(i1, i2, i3 - 1) + u(i1, i2, i3 + 1)
      end do
      do i1 = 2, n1 - 1
        r(i1, i2, i3) = u(i1, i2, i3) - 0.25d0 * (u2(i1) + u1(i1 - 1) + u1(i1 + 1))
      end do
    end do
  end do
end subroutine"""


def test_scratch_rows_filled_before_use_get_a_copy_per_iteration() -> None:
    # NPB MG's resid: u1, u2 are filled and consumed inside each (i2, i3) iteration
    k = kernel(RESID, "resid")
    outer, mid = loops(k)[:2]
    assert outer.kind is ir.LoopKind.PARALLEL and mid.kind is ir.LoopKind.PARALLEL
    assert "one copy per iteration" in outer.reason
    u1 = next(d for d in analyze(k).locals if d.name == "u1")
    assert isinstance(u1, ir.Array) and len(u1.shape) == 3  # (n1, copies along i2, copies along i3)
    rng = np.random.default_rng(2)
    u = np.asfortranarray(rng.standard_normal((6, 5, 4)))
    sizes = {"n1": 6, "n2": 5, "n3": 4}
    fwd = run(k, sizes, {"u": u, "r": np.zeros((6, 5, 4), order="F")})
    bwd = run(k, sizes, {"u": u, "r": np.zeros((6, 5, 4), order="F")}, reverse=True)
    want = np.zeros((6, 5, 4))
    for i3 in range(1, 3):
        for i2 in range(1, 4):
            u1v = u[:, i2 - 1, i3] + u[:, i2 + 1, i3]
            u2v = u[:, i2, i3 - 1] + u[:, i2, i3 + 1]
            want[1:-1, i2, i3] = u[1:-1, i2, i3] - 0.25 * (u2v[1:-1] + u1v[:-2] + u1v[2:])
    assert np.allclose(fwd["r"], want) and np.array_equal(fwd["r"], bwd["r"])


def test_assumed_size_extent_reaches_an_index_no_loop_moves() -> None:
    # NPB SP's lhsinit: lhs(5, 0:*) written at lhs(m, 0) and lhs(m, ni) inside a loop over m
    src = """      subroutine lhsinit(ni, lhs)
      integer ni, m
      double precision lhs(5, 0:*)
      do m = 1, 5
         lhs(m, 0) = 0.0d0
         lhs(m, ni) = 0.0d0
      end do
      lhs(3, ni) = 1.0d0
      end
"""
    (k,) = parse_source(src, "t.f", fixed_form=True).kernels
    assert isinstance(k, ir.Kernel)
    lhs = k.param("lhs")
    assert ir.evaluate(lhs.shape[1], {"ni": 7}) == 8  # indices 0..ni


@pytest.mark.parametrize("first, fill, use", [
    (2, "w(j) = a(i, j) + w(j - 1)", "a(i, j) = w(j)"),  # w(1) never written: it carries the last row's
    (1, "w(2 * j) = a(i, j)", "a(i, j) = w(2 * j + 1)"),  # reads the odd elements, fills the even
    (1, "w(j) = a(i, j)", "a(i, j) = w(j + 2)"),  # one past the filled end
    (1, "k = 1\n      w(k) = a(i, j)", "k = j\n      a(i, j) = w(k)"),  # fills w(1) only, through a scalar
    (1, "if (a(i, j) > 0d0) k = j\n      w(k) = a(i, j)", "a(i, j) = w(j)"),  # a scalar of unknown value
])
def test_a_scratch_array_not_proven_filled_stays_shared(first: int, fill: str, use: str) -> None:
    k = kernel(f"""subroutine notfilled(n, m, a)
  integer :: n, m, i, j, k
  real(8) :: a(n, m), w(2 * m + 2)
  k = 1
  do i = 1, n
    do j = {first}, m
      {fill}
    end do
    do j = 1, m - 1
      {use}
    end do
  end do
end subroutine""", "notfilled")
    assert loops(k)[0].kind is ir.LoopKind.SERIAL
    assert all(len(d.shape) == 1 for d in analyze(k).locals if isinstance(d, ir.Array))


def test_a_diagonal_fill_does_not_cover_the_box_around_it() -> None:
    k = kernel("""subroutine diag(n, m, a)
  integer :: n, m, i, j
  real(8) :: a(n, m), w(m, m)
  do i = 1, n
    do j = 1, m
      w(j, j) = a(i, j)
    end do
    do j = 1, m - 1
      a(i, j) = w(j, j + 1)
    end do
  end do
end subroutine""", "diag")
    assert loops(k)[0].kind is ir.LoopKind.SERIAL


def test_collapse_carries_the_assertion_to_the_loop_nested_inside() -> None:
    # an indirect write the analysis cannot prove distinct: the source asserts both loops parallel
    src = """subroutine scatter(n, m, idx, a, b)
  integer :: n, m, idx(m), j, k
  real(8) :: a(m, n), b(m, n)
!$omp parallel do collapse(2) private(j)
  do k = 1, n
    do j = 1, m
      a(idx(j), k) = b(j, k)
    end do
  end do
end subroutine"""
    outer, inner = loops(kernel(src, "scatter"))[:2]
    assert outer.kind is ir.LoopKind.PARALLEL and inner.kind is ir.LoopKind.PARALLEL
    assert inner.directive is not None and "collapse(1)" in inner.directive
    assert "as asserted by the source" in inner.reason
    # without collapse only the outer loop is asserted
    outer, inner = loops(kernel(src.replace(" collapse(2)", ""), "scatter"))[:2]
    assert inner.directive is None and inner.kind is ir.LoopKind.SERIAL


def parallel_with_copies_of_w(k: ir.Kernel, scalars: dict, a: np.ndarray, want: np.ndarray) -> None:
    """The outer loop of ``k`` parallel with a copy of w per iteration, and ``a`` updated to
    ``want`` with its parallel loops run forwards and backwards."""
    outer = loops(k)[0]
    assert outer.kind is ir.LoopKind.PARALLEL and "w: one copy per iteration" in outer.reason
    for reverse in (False, True):
        assert np.allclose(run(k, scalars, {"a": a.copy(order="F")}, reverse=reverse)["a"], want)


def test_a_row_filled_in_pieces_is_covered_by_their_union() -> None:
    # w(1) set before the loop that fills w(2:m): the reads of w(1:m-1) and w(2:m) are covered
    src = """subroutine pieces(n, m, a)
  integer :: n, m, i, j
  real(8) :: a(n, m), w(m)
  do i = 1, n
    w(1) = 2d0 * a(i, 1)
    do j = 2, m
      w(j) = a(i, j) + 1d0
    end do
    do j = 1, m - 1
      a(i, j) = w(j) * w(j + 1)
    end do
  end do
end subroutine"""
    a = np.asfortranarray(np.random.default_rng(7).standard_normal((4, 6)))
    w = np.concatenate([2 * a[:, :1], a[:, 1:] + 1], axis=1)
    want = a.copy(order="F")
    want[:, :-1] = w[:, :-1] * w[:, 1:]
    parallel_with_copies_of_w(kernel(src, "pieces"), {"n": 4, "m": 6}, a, want)
    # a gap (w(2) never written): not covered, the rows stay shared and the loop serial
    assert loops(kernel(src.replace("do j = 2, m", "do j = 3, m"), "pieces"))[0].kind is ir.LoopKind.SERIAL


def test_rows_of_a_block_and_a_backward_sweep_are_covered() -> None:
    # NPB BT's solvers: w(1, j) and w(2, j) filled by separate statements, then read as w(m, j)
    # over m = 1..2 in a sweep that runs backwards
    src = """subroutine block(n, m, a)
  integer :: n, m, i, j, l
  real(8) :: a(n, m), w(2, m)
  do i = 1, n
    do j = 1, m
      w(1, j) = a(i, j)
      w(2, j) = 2d0 * a(i, j)
    end do
    do j = m - 1, 1, -1
      do l = 1, 2
        a(i, j) = a(i, j) + w(l, j) * w(l, j + 1)
      end do
    end do
  end do
end subroutine"""
    a = np.asfortranarray(np.random.default_rng(8).standard_normal((3, 5)))
    want = a.copy(order="F")
    for j in range(3, -1, -1):
        want[:, j] += a[:, j] * a[:, j + 1] * 5  # (1*1 + 2*2) w products
    parallel_with_copies_of_w(kernel(src, "block"), {"n": 3, "m": 5}, a, want)
    # the second row left unwritten: not covered
    assert loops(kernel(src.replace("      w(2, j) = 2d0 * a(i, j)\n", ""), "block"))[0].kind is ir.LoopKind.SERIAL


PER_THREAD = """module work
  implicit none
  real(8) :: w(5)
!$omp threadprivate(w)
end module work
subroutine sweep(n, m, a)
  use work
  implicit none
  integer :: n, m, i, j, l
  real(8) :: a(4, m, n)
!$omp parallel do collapse(2) private(l)
  do i = 1, n
    do j = 1, m
      do l = 1, 4
        w(l) = 2d0 * a(l, j, i)
      end do
      do l = 1, 3
        a(l, j, i) = w(l) + w(l + 1)
      end do
    end do
  end do
end subroutine sweep
"""


def test_a_module_array_the_source_keeps_per_thread_gets_a_copy_per_iteration() -> None:
    # NPB BT's fjac, njac, lhs: module work arrays THREADPRIVATE in the source, written alike in
    # every iteration of the collapsed (i, j) loops and filled before they are read in each
    k = kernel(PER_THREAD, "sweep")
    nest = [lp for lp in loops(k) if lp.var in ("i", "j")]
    assert [lp.kind for lp in nest] == [ir.LoopKind.PARALLEL] * 2, [lp.reason for lp in nest]
    assert "w: one copy per iteration" in nest[0].reason
    local = next(d for d in analyze(k).locals if d.name == "w_private")
    assert len(local.shape) == 3  # w's 5 elements, a copy along j and one along i
    rng = np.random.default_rng(9)
    n, m = 3, 5
    a = np.asfortranarray(rng.standard_normal((4, m, n)))
    want = a.copy(order="F")
    want[:3] = 2 * a[:3] + 2 * a[1:]
    for reverse in (False, True):
        out = run(k, {"n": n, "m": m}, {"a": a.copy(order="F"), "w": np.full(5, 7.0)}, reverse=reverse)
        assert np.allclose(out["a"], want)
        # after the loops w holds what the last iteration (i = n, j = m) left, as a serial run
        # leaves it, and w(5), which no iteration writes, what it held before
        assert np.allclose(out["w"][:4], 2 * a[:, m - 1, n - 1]) and out["w"][4] == 7.0


def test_a_module_array_written_only_in_some_iterations_stays_shared() -> None:
    src = PER_THREAD.replace("      do l = 1, 4\n        w(l) = 2d0 * a(l, j, i)\n      end do\n",
                             "      do l = 1, 4\n        if (a(l, j, i) > 0d0) w(l) = 2d0 * a(l, j, i)\n      end do\n")
    nest = [lp for lp in loops(kernel(src, "sweep")) if lp.var in ("i", "j")]
    assert all("w: one copy per iteration" not in lp.reason for lp in nest)
    assert not any(d.name == "w_private" for d in analyze(kernel(src, "sweep")).locals)
