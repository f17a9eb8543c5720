from pathlib import Path

import pytest

from parsers.fortran import parse_files, parse_source
from translate import ir
from translate.analysis import analyze, loop_report
from translate.ir import BinOp, Const, DType, Load, LoopKind, Reduction, Var

SAMPLES = Path(__file__).parent / "fortran_samples"
I32 = DType.I32


@pytest.fixture(scope="module")
def kernels() -> dict[str, ir.Kernel]:
    files = sorted((SAMPLES / "blas").glob("*.f")) + [SAMPLES / "misc" / n for n in
                                                      ("stencil.f90", "legacy.f", "physics.f90")]
    out = {}
    for m in parse_files(files, SAMPLES):
        for k in m.kernels:
            if isinstance(k, ir.Kernel):
                out[k.name] = analyze(k)
    return out


def loops(k: ir.Kernel) -> list[ir.Loop]:
    return [n for s in k.body for n in ir.walk(s) if isinstance(n, ir.Loop)]


def by_line(k: ir.Kernel) -> dict[int, ir.Loop]:
    return {lp.line: lp for lp in loops(k)}


def test_daxpy_all_parallel_with_induction_substitution(kernels) -> None:
    k = kernels["daxpy"]
    assert [lp.kind for lp in loops(k)] == [LoopKind.PARALLEL] * 3
    strided = by_line(k)[49]
    assert "assuming incy != 0" in strided.reason
    # IX = IX + INCX removed, uses rewritten to the closed form
    assert len(strided.body) == 1
    iy = BinOp("sub", BinOp("add", Var("iy", I32), BinOp("mul", Var("i", I32), Var("incy", I32), I32), I32),
               Const(1, I32), I32)
    assert strided.body[0].target == Load("dy", (iy,), DType.F64)
    # the final value of IX is not used after the loop: no update emitted
    assert not any(isinstance(s, ir.Assign) and s.target == Var("ix", I32) for s in k.body[-1:])


def test_ddot_sum_reduction(kernels) -> None:
    k = kernels["ddot"]
    for lp in loops(k):
        assert lp.kind == LoopKind.PARALLEL
        assert lp.reductions == (Reduction("dtemp", "add", DType.F64),)
        assert "dtemp is a sum reduction" in lp.reason


def test_dgemv_n_and_t_forms(kernels) -> None:
    lines = by_line(kernels["dgemv"])
    # y := alpha*A*x + y: outer J serial (every j updates all of y), inner I parallel
    assert lines[121].kind == LoopKind.SERIAL and "y[i] is written" in lines[121].reason
    assert lines[123].kind == LoopKind.PARALLEL
    assert lines[129].kind == LoopKind.SERIAL and lines[132].kind == LoopKind.PARALLEL
    # y := alpha*A**T*x + y: parallel over J with TEMP private, inner dot product a reduction
    for outer, inner in ((145, 147), (154, 157)):
        assert lines[outer].kind == LoopKind.PARALLEL and "temp" in lines[outer].private
        assert lines[inner].reductions == (Reduction("temp", "add", DType.F64),)
    assert "ix" in lines[154].private
    assert "checked by the routine" in lines[154].reason


def test_dgemm_collapsible_nests(kernels) -> None:
    lines = by_line(kernels["dgemm"])
    assert lines[89].kind == lines[90].kind == LoopKind.PARALLEL
    assert lines[111].kind == LoopKind.PARALLEL and lines[111].private == ("temp",)
    assert lines[121].kind == LoopKind.SERIAL and "c[i, j] is written" in lines[121].reason
    assert lines[123].kind == LoopKind.PARALLEL
    assert lines[133].kind == LoopKind.PARALLEL and lines[133].private == ("temp",)
    assert lines[135].reductions == (Reduction("temp", "add", DType.F64),)


def test_argmax_is_a_pair_reduction_and_scaled_norm_stays_serial(kernels) -> None:
    # each branch's scan: the max of |dx| and the first iteration reaching it (translate.argreduce)
    found = loops(kernels["idamax"])
    assert [lp.kind for lp in found] == [LoopKind.PARALLEL] * 2
    assert [lp.reductions for lp in found] == [
        (Reduction("dmax_best", "maxloc", DType.F64, loc="i_first"),),
        (Reduction("dmax_best2", "maxloc", DType.F64, loc="i_first2"),)]
    assert all("the first maximum of dmax" in lp.reason for lp in found)
    (lp,) = loops(kernels["dnrm2"])
    assert lp.kind == LoopKind.SERIAL and "scale is carried" in lp.reason


def test_recurrence_serial_with_reason(kernels) -> None:
    (lp,) = loops(kernels["prefix"])
    assert lp.kind == LoopKind.SERIAL
    assert lp.reason == "loop i is not parallel: x[i - 1] is read and x[i] written"


def test_stencils_parallel_2d_and_3d(kernels) -> None:
    assert [lp.kind for lp in loops(kernels["jacobi2d"])] == [LoopKind.PARALLEL] * 2
    k3 = loops(kernels["heat3d"])
    assert [lp.kind for lp in k3] == [LoopKind.PARALLEL] * 3
    assert k3[0].body == (k3[1],) and k3[1].body == (k3[2],)  # perfectly nested: collapsible


def test_directives_honoured(kernels) -> None:
    (lp,) = loops(kernels["omp_sum"])
    assert lp.directive == "omp parallel do reduction(+:s)"
    assert lp.kind == LoopKind.PARALLEL and lp.reductions == (Reduction("s", "add", DType.F64),)
    assert "as asserted by the source (!$omp parallel do reduction(+:s))" in lp.reason
    (lp,) = loops(kernels["conc"])
    assert lp.directive == "do concurrent" and lp.kind == LoopKind.PARALLEL


def test_directive_asserts_unprovable_loop() -> None:
    src = ("subroutine g(n, idx, x)\n  integer n, idx(n)\n  real x(n)\n  integer i\n"
           "  !$acc parallel loop\n  do i = 1, n\n    x(idx(i)) = x(idx(i)) + 1.0\n  end do\n"
           "  do i = 1, n\n    x(idx(i)) = 0.0\n  end do\nend\n")
    k = analyze(parse_source(src, "g.f90", fixed_form=False).kernels[0])
    asserted, plain = loops(k)
    assert asserted.directive == "acc parallel loop" and asserted.kind == LoopKind.PARALLEL
    assert "unproven" in asserted.reason
    assert plain.kind == LoopKind.SERIAL and plain.directive is None


def test_omp_reduction_clause_when_analysis_cannot_prove() -> None:
    src = ("subroutine h(n, x, s)\n  integer n\n  real(8) x(n), s\n  integer i\n  s = 0\n"
           "!$omp parallel do reduction(max:s)\n  do i = 1, n\n    if (x(i) > s) s = x(i)\n  end do\nend\n")
    k = analyze(parse_source(src, "h.f90", fixed_form=False).kernels[0])
    (lp,) = loops(k)
    assert lp.kind == LoopKind.PARALLEL and lp.reductions == (Reduction("s", "max", DType.F64),)


def test_return_in_loop_is_serial_and_max_reduction() -> None:
    src = ("subroutine r(n, x, s)\n  integer n\n  real(8) x(n), s\n  integer i\n  s = x(1)\n"
           "  do i = 1, n\n    if (x(i) < 0) return\n  end do\n"
           "  do i = 1, n\n    s = max(s, abs(x(i)))\n  end do\nend\n")
    k = analyze(parse_source(src, "r.f90", fixed_form=False).kernels[0])
    ret, red = loops(k)
    assert ret.kind == LoopKind.SERIAL and "return" in ret.reason
    assert red.kind == LoopKind.PARALLEL and red.reductions == (Reduction("s", "max", DType.F64),)


def test_induction_final_value_kept_when_used() -> None:
    src = ("subroutine q(n, inc, x, last)\n  integer n, inc, last\n  real x(*)\n  integer i, ix\n  ix = 1\n"
           "  do i = 1, n\n    x(ix) = 0.0\n    ix = ix + inc\n  end do\n  last = ix\nend\n")
    k = analyze(parse_source(src, "q.f90", fixed_form=False).kernels[0])
    (lp,) = loops(k)
    assert lp.kind == LoopKind.PARALLEL
    i = k.body.index(lp)
    update = k.body[i + 1]
    assert isinstance(update, ir.Assign) and update.target == Var("ix", I32)
    for n, inc in ((0, 3), (4, 3), (5, -2)):
        assert ir.evaluate(update.value, {"ix": 1, "n": n, "inc": inc}) == 1 + n * inc


def test_scalar_used_after_loop_keeps_loop_serial() -> None:
    src = ("subroutine p(n, x, t)\n  integer n\n  real x(n), t\n  integer i\n"
           "  do i = 1, n\n    t = x(i) * 2\n    x(i) = t\n  end do\n  x(1) = t\nend\n")
    k = analyze(parse_source(src, "p.f90", fixed_form=False).kernels[0])
    (lp,) = loops(k)
    assert lp.kind == LoopKind.SERIAL and "t is assigned in the loop and used after it" in lp.reason


def test_loop_report_rows(kernels) -> None:
    rows = loop_report(kernels["daxpy"])
    assert [r["line"] for r in rows] == [28, 34, 49]
    assert rows[0] == {"line": 28, "var": "i", "kind": "parallel", "directive": None,
                       "reason": "loop i is parallel: iterations write distinct elements of dy"}


def test_array_read_into_a_scalar_is_a_dependence() -> None:
    # forward substitution by columns: s(j) reads x(1..j-1), written by earlier iterations,
    # but only through the scalar t: the outer loop must stay serial
    src = ("subroutine fs(n, a, x)\n  integer n\n  real(8) a(n, n), x(n), t\n  integer i, j\n"
           "  do j = 1, n\n    t = x(j)\n    do i = 1, j - 1\n      t = t - a(i, j) * x(i)\n    end do\n"
           "    x(j) = t / a(j, j)\n  end do\n"
           "  do j = 1, n\n    t = x(j) * 2\n    x(j) = t\n  end do\nend\n")
    k = analyze(parse_source(src, "fs.f90", fixed_form=False).kernels[0])
    outer, inner, plain = loops(k)
    assert outer.kind == LoopKind.SERIAL and "x[i] is read and x[j] written" in outer.reason
    assert inner.kind == LoopKind.PARALLEL and inner.reductions == (Reduction("t", "add", DType.F64),)
    # the same element read and written in one iteration is no dependence
    assert plain.kind == LoopKind.PARALLEL and plain.private == ("t",)


def test_descending_induction_and_offset_product_stay_parallel() -> None:
    # a descending loop that steps its pointer down (kp = kp - inc), and a pointer started
    # at an outer index and stepped before use (subscript kp + (i - j)*inc once substituted)
    src = ("subroutine dn(n, j, inc, u, w)\n  integer n, j, inc\n  real(8) u(*), w\n  integer i, kp\n"
           "  kp = 1 + (n - 1)*abs(inc)\n  do i = n, j + 1, -1\n    u(kp) = u(kp) * w\n    kp = kp - inc\n"
           "  end do\n  kp = 1 + (j - 1)*abs(inc)\n  do i = j + 1, n\n    kp = kp + inc\n    u(kp) = u(kp) + w\n"
           "  end do\nend\n")
    k = analyze(parse_source(src, "dn.f90", fixed_form=False).kernels[0])
    down, up = loops(k)
    for lp in (down, up):
        assert lp.kind == LoopKind.PARALLEL, lp.reason
        assert "assuming inc != 0" in lp.reason
        assert len(lp.body) == 1  # the pointer update is gone
    # the closed form of the descending pointer: kp - (n - 1 - i)*inc (0-based i)
    (store,) = down.body
    env = {"kp": 40, "n": 10, "inc": 3}
    assert [ir.evaluate(store.target.index[0], {**env, "i": i}) for i in (9, 8, 5)] == [39, 36, 27]


def test_a_scalar_set_from_the_loop_variable_stands_for_its_value_in_the_indices() -> None:
    # NPB MG's rprj3 writes x1(i1 - 1) with i1 = 2*j1 - d1: distinct elements; a scalar set
    # twice, set from an element, or read before it is set proves nothing
    body = {"strided": "    i = 2*j - d\n    x(i - 1) = y(j)\n",
            "twice": "    i = 2*j - d\n    i = i / 2\n    x(i) = y(j)\n",
            "element": "    i = k(j)\n    x(i) = y(j)\n",
            "read first": "    x(i) = y(j)\n    i = 2*j\n",
            "not injective": "    i = mod(j, 2) + 1\n    x(i) = y(j)\n"}
    kinds = {}
    for case, text in body.items():
        src = ("subroutine st(n, d, k, x, y)\n  integer n, d, k(n)\n  real(8) x(2*n), y(n)\n  integer i, j\n"
               f"  do j = 1, n\n{text}  end do\nend\n")
        (lp,) = loops(analyze(parse_source(src, "st.f90", fixed_form=False).kernels[0]))
        kinds[case] = lp.kind
    assert kinds == {"strided": LoopKind.PARALLEL, "twice": LoopKind.SERIAL, "element": LoopKind.SERIAL,
                     "read first": LoopKind.SERIAL, "not injective": LoopKind.SERIAL}
