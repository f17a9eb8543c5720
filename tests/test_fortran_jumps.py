"""GO TO, EXIT, CYCLE, RETURN inside loops and DATA in the frontend. Each routine is run
through its lowered IR (the order audit's interpreter) against a Python model; jumps out of a
loop keep it serial, a jump that lands inside each iteration (CYCLE) does not; what cannot be
lowered is refused with its line."""

from __future__ import annotations

import numpy as np

from parsers.fortran import parse_source
from tests.test_fortran_f90 import loops, run
from translate import ir


def lower(src: str, free: bool = False) -> dict[str, ir.Kernel | ir.Opaque]:
    return {k.name: k for k in parse_source(src, "t.f90" if free else "t.f", fixed_form=not free).kernels}


def kernel(src: str, name: str, free: bool = False) -> ir.Kernel:
    k = lower(src, free)[name]
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    return k


BUBBLE = """      subroutine bubble(ten, j1, m, last)
      integer m, last, j1(m), i, jt
      double precision ten(m), temp
      last = 0
      do i = 1, m - 1
         if (ten(i) .gt. ten(i + 1)) then
            temp = ten(i + 1)
            ten(i + 1) = ten(i)
            ten(i) = temp
            jt = j1(i + 1)
            j1(i + 1) = j1(i)
            j1(i) = jt
         else
            return
         endif
         last = i
      enddo
      last = -1
      end
"""


def bubble_model(ten: np.ndarray, j1: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    ten, j1 = ten.copy(), j1.copy()
    last = 0
    for i in range(len(ten) - 1):
        if ten[i] > ten[i + 1]:
            ten[i], ten[i + 1] = ten[i + 1], ten[i]
            j1[i], j1[i + 1] = j1[i + 1], j1[i]
        else:
            return ten, j1, last
        last = i + 1
    return ten, j1, -1


def test_return_inside_a_loop_skips_the_rest_and_keeps_the_loop_serial() -> None:
    k = kernel(BUBBLE, "bubble")
    assert [lp.kind for lp in loops(k)] == [ir.LoopKind.SERIAL]
    for ten in ([5.0, 4.0, 3.0, 9.0, 1.0], [5.0, 4.0, 3.0, 2.0, 1.0], [1.0, 2.0, 3.0, 4.0, 5.0]):
        t = np.array(ten)
        j = np.arange(1, 6, dtype=np.int32)
        out = run(k, {"m": 5}, {"ten": t.copy(), "j1": j.copy()})
        want_t, want_j, want_last = bubble_model(t, j)
        assert np.array_equal(out["ten"], want_t) and np.array_equal(out["j1"], want_j)
        assert out["last"] == want_last


POWER = """      double precision function power(a, n)
      double precision a, aj
      integer n, nj
      power = 1.0d0
      nj = n
      aj = a
 100  continue
      if (nj .eq. 0) goto 200
      if (mod(nj, 2) .eq. 1) power = power * aj
      aj = aj * aj
      nj = nj / 2
      go to 100
 200  continue
      return
      end

      subroutine powers(x, n, e)
      integer n, e, i
      double precision x(n), power
      do i = 1, n
         x(i) = power(x(i), e)
      end do
      end
"""


def test_a_backward_go_to_is_a_while_loop_and_inlines() -> None:
    k = kernel(POWER, "powers")
    assert any(isinstance(n, ir.While) for s in k.body for n in ir.walk(s))
    x = np.array([1.5, -2.0, 0.5, 3.0])
    for e in (0, 1, 5, 8):
        out = run(k, {"n": 4, "e": e}, {"x": x.copy()})
        assert np.allclose(out["x"], x ** e)


SKIP = """      subroutine skipneg(x, y, n)
      integer n, i
      double precision x(n), y(n)
      do 40 i = 1, n
         if (x(i) .lt. 0) goto 40
         y(i) = sqrt(x(i))
 40   continue
      end
"""

CYCLE_EXIT = """subroutine scan(x, y, n, m, k)
  integer, intent(in) :: n, m
  integer, intent(out) :: k
  real(8), intent(in) :: x(n, m)
  real(8), intent(inout) :: y(n)
  integer :: i, j
  do i = 1, n
    if (x(i, 1) < 0) cycle
    y(i) = 2 * x(i, 1)
  end do
  k = 0
  outer: do j = 1, m
    do i = 1, n
      if (x(i, j) > 0.9d0) then
        k = i + 100 * j
        exit outer
      end if
    end do
  end do outer
end subroutine
"""


def test_a_jump_to_the_end_of_the_body_keeps_the_loop_parallel() -> None:
    k = kernel(SKIP, "skipneg")
    assert [lp.kind for lp in loops(k)] == [ir.LoopKind.PARALLEL]
    x = np.array([1.0, -1.0, 4.0, -9.0, 16.0])
    for reverse in (False, True):
        out = run(k, {"n": 5}, {"x": x, "y": np.zeros(5)}, reverse=reverse)
        assert np.allclose(out["y"], np.where(x < 0, 0.0, np.sqrt(np.abs(x))))


def test_cycle_and_a_named_exit() -> None:
    k = kernel(CYCLE_EXIT, "scan", free=True)
    kinds = [lp.kind for lp in loops(k)]
    assert kinds[0] is ir.LoopKind.PARALLEL  # CYCLE lands in each iteration
    assert kinds[1] is ir.LoopKind.SERIAL  # EXIT leaves the nest: the first hit wins
    rng = np.random.default_rng(3)
    n, m = 6, 5
    x = np.asfortranarray(rng.uniform(-1, 1, (n, m)))
    out = run(k, {"n": n, "m": m}, {"x": x, "y": np.zeros(n)})
    assert np.allclose(out["y"], np.where(x[:, 0] < 0, 0.0, 2 * x[:, 0]))
    hits = [(j, i) for j in range(m) for i in range(n) if x[i, j] > 0.9]
    j, i = hits[0] if hits else (-1, -1)
    assert out["k"] == (i + 1 + 100 * (j + 1) if hits else 0)


def test_an_inlined_function_returning_early() -> None:
    k = kernel("""      integer function ilog2(n)
      integer n, nn, lg
      if (n .eq. 1) then
         ilog2 = 0
         return
      endif
      lg = 1
      nn = 2
      do while (nn .lt. n)
         nn = nn * 2
         lg = lg + 1
      end do
      ilog2 = lg
      return
      end

      subroutine logs(k, m, n)
      integer n, k(n), m(n), i, ilog2
      do i = 1, n
         k(i) = ilog2(m(i))
      end do
      end
""", "logs")
    m = np.array([1, 2, 3, 4, 5, 64, 65], dtype=np.int32)
    out = run(k, {"n": 7}, {"k": np.zeros(7, dtype=np.int32), "m": m})
    assert list(out["k"]) == [0, 1, 2, 2, 3, 6, 7]


def test_data_gives_a_constant() -> None:
    k = kernel("""      subroutine cg(x, n)
      integer n, i, itmax
      double precision x(n), w
      data itmax, w / 25, 0.5d0 /
      do i = 1, n
         x(i) = x(i) * w + itmax
      end do
      end
""", "cg")
    out = run(k, {"n": 3}, {"x": np.ones(3)})
    assert np.allclose(out["x"], 25.5)


def test_what_cannot_be_lowered_is_refused_with_its_line() -> None:
    got = lower("""      subroutine into(n, x)
      integer n, i
      double precision x(n)
      if (n .gt. 3) go to 30
      do 20 i = 1, n
         x(i) = 1
   30    x(i) = 2
   20 continue
      end

      subroutine arith(n, x)
      integer n
      double precision x(n)
      if (n - 3) 10, 10, 20
   10 x(1) = 1
   20 continue
      end

      subroutine both(n, x)
      integer n
      double precision x(n)
      if (n .gt. 3) go to 10
      x(2) = 2
   10 x(1) = x(1) + 1
      if (x(1) .lt. 5) go to 10
      end

      subroutine datagain(x, n)
      integer n, k
      double precision x(n)
      data k / 3 /
      k = k + 1
      x(1) = k
      end
""")
    assert got["into"].reason.startswith("GO TO 30 at t.f:4 jumps into a construct")
    assert got["arith"].reason == "arithmetic IF at t.f:14 cannot be lowered"
    assert got["both"].reason.startswith("label 10 at t.f:24 is jumped to both forward and back")
    assert got["datagain"].reason.startswith("assignment at t.f:32 to 'k', initialised at t.f:31")


def test_a_do_variable_read_after_its_loop_is_refused() -> None:
    got = lower("""      subroutine after(x, n, k)
      integer n, i, k
      double precision x(n)
      do i = 1, n
         if (x(i) .gt. 0.5) goto 10
      end do
 10   continue
      k = i
      end

      subroutine again(x, n, k)
      integer n, i, k
      double precision x(n)
      do i = 1, n
         x(i) = 0
      end do
      i = 3
      k = i
      end
""")
    assert got["after"].reason == ("DO variable i read at t.f:8 after its loop (line 4) ended: its final value is not"
                                   " lowered")
    assert isinstance(got["again"], ir.Kernel)  # given a new value first


def test_a_jump_back_from_an_inner_loop_after_an_earlier_jump_skips_the_rest() -> None:
    # NPB CG's sprnvc: distinct random indices, drawn again on a repeat found by an inner loop
    k = kernel("""      subroutine draw(n, nz, iv, seed)
      integer n, nz, iv(nz), seed, nzv, ii, i
      nzv = 0
 100  continue
      if (nzv .ge. nz) goto 110
      seed = mod(seed * 37 + 11, 101)
      i = mod(seed, 2 * n) + 1
      if (i .gt. n) goto 100
      do ii = 1, nzv
         if (iv(ii) .eq. i) goto 100
      enddo
      nzv = nzv + 1
      iv(nzv) = i
      goto 100
 110  continue
      end
""", "draw")
    n, nz, seed = 10, 6, 7
    want: list[int] = []
    while len(want) < nz:
        seed = (seed * 37 + 11) % 101
        i = seed % (2 * n) + 1
        if i <= n and i not in want:
            want.append(i)
    out = run(k, {"n": n, "nz": nz, "seed": 7}, {"iv": np.zeros(nz, dtype=np.int32)})
    assert list(out["iv"]) == want and out["seed"] == seed


def test_a_labelled_construct_after_comment_lines_is_found() -> None:
    # NPB FT's cfftz: the target of GO TO 160 is a DO construct preceded by a comment block
    k = kernel("""      subroutine copyy(x, y, n, m)
      integer n, m, l, j
      double precision x(n), y(n)
      do l = 1, m, 2
        y(1) = y(1) + 1
        if (l .eq. m) goto 160
        y(1) = y(1) * 2
      enddo
      goto 180
c---------------------------------------------------------------------
c   Copy Y to X.
c---------------------------------------------------------------------
 160  do j = 1, n
        x(j) = y(j)
      enddo
 180  continue
      end
""", "copyy")
    for m in (3, 4):
        y1, ran_160 = 0.0, False
        for lv in range(1, m + 1, 2):
            y1 += 1
            if lv == m:
                ran_160 = True
                break
            y1 *= 2
        out = run(k, {"n": 3, "m": m}, {"x": np.zeros(3), "y": np.array([0.0, 5.0, 6.0])})
        want_y = np.array([y1, 5.0, 6.0])
        assert np.allclose(out["y"], want_y)
        assert np.allclose(out["x"], want_y if ran_160 else np.zeros(3))


def test_a_stop_inside_a_loop_leaves_it_and_stops_on_the_host_at_the_end() -> None:
    got = lower("""      subroutine check(m, mx, x, n)
      integer m, mx, n, i
      double precision x(n)
      if (m .gt. mx) then
         write(*, *) 'bad m', m
         stop
      endif
      do i = 1, n
         x(i) = 2 * x(i)
      end do
      end

      subroutine outer(m, u, x, n, k)
      integer m, n, k, j, mx
      double precision x(n, k), u(4)
      do j = 1, k
         mx = u(1)
         call check(m, mx, x(1, j), n)
      end do
      end

      subroutine scan2(x, n)
      integer n, i
      double precision x(n)
      do i = 1, n
         if (x(i) .lt. 0) then
            print *, 'negative at', i
            stop 3
         end if
         x(i) = sqrt(x(i))
      end do
      end
""")
    for name, code in (("outer", ()), ("scan2", (ir.Const(3, ir.DType.I32),))):
        k = got[name]
        assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
        last = k.body[-1]  # the STOP, made on the host once the loop has left
        assert isinstance(last, ir.If) and isinstance(last.then[0], ir.HostCall) and last.then[0].args == code
        assert not any(isinstance(n, ir.HostCall) and n.kind == "stop" for lp in loops(k) for n in ir.walk(lp))
    x = np.array([4.0, 9.0, 16.0])
    assert np.allclose(run(got["scan2"], {"n": 3}, {"x": x.copy()})["x"], np.sqrt(x))
    xs = np.asfortranarray(np.arange(6.0).reshape(3, 2))
    out = run(got["outer"], {"m": 1, "n": 3, "k": 2}, {"u": np.full(4, 5.0), "x": xs.copy()})
    assert np.allclose(out["x"], 2 * xs)
