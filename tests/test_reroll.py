"""translate.reroll: manually unrolled loops back to unit steps, and only those."""

from __future__ import annotations

from parsers.fortran import parse_source
from translate import ir
from translate.analysis import analyze
from translate.reroll import reroll

UNROLLED = """
      SUBROUTINE COPY7(N, DX, DY)
      INTEGER N, I, M, MP1
      DOUBLE PRECISION DX(*), DY(*)
      M = MOD(N, 7)
      DO 10 I = 1, M
         DY(I) = DX(I)
   10 CONTINUE
      MP1 = M + 1
      DO 20 I = MP1, N, 7
         DY(I) = DX(I)
         DY(I+1) = DX(I+1)
         DY(I+2) = DX(I+2)
         DY(I+3) = DX(I+3)
         DY(I+4) = DX(I+4)
         DY(I+5) = DX(I+5)
         DY(I+6) = DX(I+6)
   20 CONTINUE
      END
"""


def kernel(src: str) -> ir.Kernel:
    (k,) = parse_source(src, "u.f", fixed_form=True).kernels
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    return k


def loops(k: ir.Kernel) -> list[ir.Loop]:
    return [n for s in k.body for n in ir.walk(s) if isinstance(n, ir.Loop)]


def test_unrolled_loop_covers_the_same_indices_with_unit_step() -> None:
    before = loops(kernel(UNROLLED))[1]
    after = loops(reroll(kernel(UNROLLED)))[1]
    assert ir.expr_str(after.step) == "1" and len(after.body) == 1
    for n in (0, 1, 6, 7, 8, 20, 21, 100):
        mp1 = n % 7 + 1
        env = {"n": n, "mp1": mp1, "m": n % 7}
        lo, hi, step = (int(ir.evaluate(e, env)) for e in (before.start, before.stop, before.step))
        old = {i + j for i in range(lo, hi, step) for j in range(7)}
        new = set(range(int(ir.evaluate(after.start, env)), int(ir.evaluate(after.stop, env))))
        assert new == old, n
    assert "re-rolled from a 7-way unrolled body" in loops(analyze(kernel(UNROLLED)))[1].reason


def test_swap_groups_through_a_temporary() -> None:
    src = """
      SUBROUTINE SWAP3(N, DX, DY)
      INTEGER N, I
      DOUBLE PRECISION DX(*), DY(*), T
      DO 10 I = 1, N, 3
         T = DX(I)
         DX(I) = DY(I)
         DY(I) = T
         T = DX(I+1)
         DX(I+1) = DY(I+1)
         DY(I+1) = T
         T = DX(I+2)
         DX(I+2) = DY(I+2)
         DY(I+2) = T
   10 CONTINUE
      END
"""
    (lp,) = loops(reroll(kernel(src)))
    assert ir.expr_str(lp.step) == "1" and len(lp.body) == 3


def test_not_an_unrolling_is_left_alone() -> None:
    wrong_shift = UNROLLED.replace("DY(I+4) = DX(I+4)", "DY(I+4) = DX(I+5)")
    step_mismatch = UNROLLED.replace("DO 20 I = MP1, N, 7", "DO 20 I = MP1, N, 8")
    for src in (wrong_shift, step_mismatch):
        lp = loops(reroll(kernel(src)))[1]
        assert ir.expr_str(lp.step) != "1" and len(lp.body) == 7
    # the loop variable read after the loop: the frontend refuses the routine (its final value
    # is not lowered), so no rerolling can change it
    used_after = UNROLLED.replace("      END\n", "      DY(1) = I\n      END\n")
    (k,) = parse_source(used_after, "u.f", fixed_form=True).kernels
    assert isinstance(k, ir.Opaque) and k.reason.startswith("DO variable i read at u.f:")


DOT5 = """
      DOUBLE PRECISION FUNCTION DOT5(N, DX, DY)
      INTEGER N, I, MP1
      DOUBLE PRECISION DX(*), DY(*), S
      S = 0.0D0
      MP1 = MOD(N, 5) + 1
      DO 10 I = MP1, N, 5
         S = S + DX(I)*DY(I) + DX(I+1)*DY(I+1) + DX(I+2)*DY(I+2) +
     +       DX(I+3)*DY(I+3) + DX(I+4)*DY(I+4)
   10 CONTINUE
      DOT5 = S
      END
"""


def test_unrolled_sum_adds_the_same_terms_in_the_same_order() -> None:
    """One unrolled sum statement becomes one term per unit step, over the same indices in the
    same order: S receives the same additions one after another as before."""
    (before,) = loops(kernel(DOT5))
    (after,) = loops(reroll(kernel(DOT5)))
    assert ir.expr_str(after.step) == "1" and len(after.body) == 1
    assert ir.expr_str(after.body[0].value) == "(s + (dx[i] * dy[i]))"
    for n in (0, 4, 5, 11, 23):
        env = {"n": n, "mp1": n % 5 + 1}
        lo, hi, step = (int(ir.evaluate(e, env)) for e in (before.start, before.stop, before.step))
        old = [i + j for i in range(lo, hi, step) for j in range(5)]
        new = list(range(int(ir.evaluate(after.start, env)), int(ir.evaluate(after.stop, env))))
        assert new == old, n
    assert "re-rolled from a 5-way unrolled body" in loops(analyze(kernel(DOT5)))[0].reason


def test_sums_that_are_not_unrollings_are_left_alone() -> None:
    shifted = DOT5.replace("DX(I+3)*DY(I+3)", "DX(I+3)*DY(I+4)")
    grouped = DOT5.replace("S = S + DX(I)*DY(I) +", "S = S + (DX(I)*DY(I) +").replace("DY(I+4)\n", "DY(I+4))\n")
    for src in (shifted, grouped):
        (lp,) = loops(reroll(kernel(src)))
        assert ir.expr_str(lp.step) != "1"
