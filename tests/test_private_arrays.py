"""Arrays an OpenMP loop of the source keeps per thread (PRIVATE, THREADPRIVATE) where the
analysis cannot prove each read covered by the iteration's own writes: one copy per iteration on
the source's word, the program's array copied into every copy first. Each case runs the analysed
IR forwards and backwards against numpy; the cases that must stay shared stay shared."""

from __future__ import annotations

import numpy as np

from tests.test_fortran_f90 import analyze, ir, kernel, loops, run

# NPB BT's exact_rhs: ue filled over 0..n-1, then read at i = 1 through a scalar (ue(i - 1),
# ue(i + 1)): covered only if n >= 3, which nothing in the routine says
FLUX = """module work
  implicit none
  real(8) :: ue(0:16)
!$omp threadprivate(ue)
end module work
subroutine flux(n, m, f)
  use work
  implicit none
  integer :: n, m, i, j
  real(8) :: f(0:n - 1, m)
!$omp parallel do private(i)
  do j = 1, m
    do i = 0, n - 1
      ue(i) = dble(i * i + j)
    end do
    i = 1
    f(i, j) = ue(i + 1) - ue(i - 1)
    do i = 2, n - 2
      f(i, j) = ue(i + 1) - 2d0 * ue(i) + ue(i - 1)
    end do
  end do
end subroutine flux
"""


def _flux(n: int, m: int) -> np.ndarray:
    f = np.zeros((n, m), order="F")
    for j in range(1, m + 1):
        ue = np.arange(n, dtype=float) ** 2 + j
        f[1, j - 1] = ue[2] - ue[0]
        f[2:n - 1, j - 1] = ue[3:n] - 2 * ue[2:n - 1] + ue[1:n - 2]
    return f


def test_a_per_thread_array_read_past_what_the_analysis_proves_gets_a_copy_on_the_sources_word() -> None:
    k = kernel(FLUX, "flux")
    (j_loop,) = [lp for lp in loops(k) if lp.var == "j"]
    assert j_loop.kind is ir.LoopKind.PARALLEL, j_loop.reason
    assert "ue: one copy per iteration, as the source's !$omp parallel do private(i) keeps them" in j_loop.reason
    # the copies are filled from ue first (every one of them), and the last goes back to ue
    fills = [lp for lp in loops(k) if "every copy of ue, from ue" in lp.reason]
    assert fills, [lp.reason for lp in loops(k)]
    n, m = 7, 4
    before = np.full(17, 5.0)
    for reverse in (False, True):
        out = run(k, {"n": n, "m": m}, {"f": np.zeros((n, m), order="F"), "ue": before.copy()}, reverse=reverse)
        assert np.allclose(out["f"], _flux(n, m))
        # ue after the loop: the last iteration's values, and what it held past n - 1
        assert np.allclose(out["ue"][:n], np.arange(n) ** 2 + m) and np.all(out["ue"][n:] == 5.0)


SCRATCH_TWICE = """subroutine twice(n, a, b)
  implicit none
  integer :: n, i, m
  real(8) :: a(3, n), b(3, n), t(3)
!$omp parallel do private(t, m)
  do i = 1, n
    do m = 1, 3
      t(m) = 2d0 * a(m, i)
    end do
    do m = 1, 3
      a(m, i) = t(m) + t(4 - m)
    end do
  end do
!$omp parallel do private(t, m)
  do i = 1, n
    do m = 1, 3
      t(m) = b(m, i)
    end do
    b(1, i) = t(3) - t(1)
  end do
end subroutine twice
"""


def test_a_private_local_array_the_routine_uses_again_later_gets_a_copy_per_iteration_in_each_loop() -> None:
    # NPB BT's dtemp: PRIVATE in the source's !$omp parallel, used by three loops in turn
    k = kernel(SCRATCH_TWICE, "twice")
    nest = [lp for lp in loops(k) if lp.var == "i"]
    assert [lp.kind for lp in nest] == [ir.LoopKind.PARALLEL] * 2, [lp.reason for lp in nest]
    # t(4 - m) runs backwards, which the proof does not follow: the first loop takes the source's word
    assert "t: one copy per iteration, as the source's !$omp parallel do private(t, m)" in nest[0].reason
    assert "t: one copy per iteration (filled before it is read in each)" in nest[1].reason
    rng = np.random.default_rng(4)
    n = 5
    a, b = np.asfortranarray(rng.standard_normal((3, n))), np.asfortranarray(rng.standard_normal((3, n)))
    want_a, want_b = 2 * a + 2 * a[::-1], b.copy(order="F")
    want_b[0] = b[2] - b[0]
    for reverse in (False, True):
        out = run(k, {"n": n}, {"a": a.copy(order="F"), "b": b.copy(order="F")}, reverse=reverse)
        assert np.allclose(out["a"], want_a) and np.allclose(out["b"], want_b)


REDUCED = """subroutine norm(n, u, rms)
  implicit none
  integer :: n, i, m
  real(8) :: u(5, n), rms(5), w(5)
  do m = 1, 5
    rms(m) = 0d0
  end do
!$omp parallel do private(m, w) reduction(+: rms)
  do i = 1, n
    do m = 1, 5
      w(m) = u(m, i)
    end do
    do m = 1, 5
      rms(m) = rms(m) + w(m) * w(m)
    end do
  end do
end subroutine norm
"""


def test_an_array_the_directive_reduces_is_never_a_per_thread_copy_but_five_scalar_sums() -> None:
    # NPB BT's rhs_norm and error_norm (translate.array_reduce)
    k = kernel(REDUCED, "norm")
    (i_loop,) = [lp for lp in loops(k) if lp.var == "i"]
    assert i_loop.kind is ir.LoopKind.PARALLEL, i_loop.reason
    assert sorted(r.var for r in i_loop.reductions) == [f"rms_{m}" for m in range(1, 6)]
    assert {r.op for r in i_loop.reductions} == {"add"}
    assert not any(d.name.startswith("rms_private") for d in analyze(k).locals)
    u = np.asfortranarray(np.random.default_rng(2).standard_normal((5, 6)))
    for reverse in (False, True):
        out = run(k, {"n": 6}, {"u": u.copy(order="F"), "rms": np.zeros(5)}, reverse=reverse)
        assert np.allclose(out["rms"], (u * u).sum(axis=1))


def test_an_array_reduction_at_indices_the_unrolling_cannot_fix_stays_serial() -> None:
    # a histogram (the element read from an array) and an update under a condition
    binned = REDUCED.replace("rms(m) = rms(m) + w(m) * w(m)", "rms(bin(m)) = rms(bin(m)) + w(m) * w(m)").replace(
        "subroutine norm(n, u, rms)", "subroutine norm(n, u, rms, bin)").replace(
        "integer :: n, i, m\n", "integer :: n, i, m, bin(5)\n")
    guarded = REDUCED.replace("rms(m) = rms(m) + w(m) * w(m)", "if (w(m) > 0d0) rms(m) = rms(m) + w(m)")
    for src in (binned, guarded):
        (i_loop,) = [lp for lp in loops(kernel(src, "norm")) if lp.var == "i"]
        assert i_loop.kind is ir.LoopKind.SERIAL and not i_loop.reductions, i_loop.reason


def test_an_array_an_iteration_reads_before_it_writes_stays_shared() -> None:
    # a value carried from one iteration to the next through w(1): no copy, the loop serial
    src = """subroutine carry(n, a)
  implicit none
  integer :: n, i
  real(8) :: a(n), w(2)
  w(1) = 1d0
!$omp parallel do
  do i = 1, n
    a(i) = a(i) + w(1)
    w(1) = a(i)
  end do
  a(1) = w(1)
end subroutine carry
"""
    k = kernel(src, "carry")
    (i_loop,) = [lp for lp in loops(k) if lp.var == "i"]
    assert i_loop.kind is ir.LoopKind.SERIAL, i_loop.reason
    out = run(k, {"n": 4}, {"a": np.ones(4)})
    assert np.allclose(out["a"], [5.0, 3.0, 4.0, 5.0])
