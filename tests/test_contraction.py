"""translate.contraction: matrix products written as loops become the tiled matmul
(``ir.Extern``), only where that is the same computation; the rendered Triton
matches numpy with leading dimensions larger than the matrices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from translate import contraction, ir
from translate.analysis import analyze
from translate.schedule import Schedule, apply_schedule

pytest.importorskip("fparser")

from parsers.fortran import parse_source  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "examples" / "fortran_numerics" / "src" / "matmul.f90"


def kernels(src: str) -> dict[str, ir.Kernel]:
    out = {}
    for k in parse_source(src, "m.f90", fixed_form=False).kernels:
        assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
        out[k.name] = analyze(k)
    return out


def externs(k: ir.Kernel) -> list[ir.Extern]:
    return [n for s in k.body for n in ir.walk(s) if isinstance(n, ir.Extern)]


def test_both_dgemm_forms_become_one_matmul() -> None:
    ks = kernels(SRC.read_text())
    for name, trans_a in (("matmul_nn", False), ("matmul_tn", True)):
        k = ks[name]
        assert contraction.has_product(k)
        out = apply_schedule(k, Schedule())
        (ext,) = externs(out)
        assert ext.op == "matmul" and ext.inputs == ("a", "b") and ext.outputs == ("a_b_prod",)
        assert ext.attr("trans_a") is trans_a and ext.attr("trans_b") is False
        assert ir.expr_str(ext.attr("k")) == "k"
        prod = out.param("a_b_prod")
        assert isinstance(prod, ir.Array) and prod.layout is ir.Layout.LEFT
        assert [ir.expr_str(s) for s in prod.shape] == ["m", "n"]
        # no loop over l is left, and the product is read at the element being computed
        assert "l" not in {n.var for s in out.body for n in ir.walk(s) if isinstance(n, ir.Loop)}
        assert "a_b_prod[i, j]" in ir.dump(out)
        # the schedule can keep the loops
        assert not externs(apply_schedule(k, Schedule(contraction=False)))


def test_accumulate_form_keeps_the_beta_scaling_and_scales_the_product_by_alpha() -> None:
    text = ir.dump(apply_schedule(kernels(SRC.read_text())["matmul_nn"], Schedule()))
    assert "c[i, j] = (beta * c[i, j])" in text
    assert "c[i, j] = (c[i, j] + (alpha * a_b_prod[i, j]))" in text


def _column_loops(k: ir.Kernel) -> list[ir.Loop]:
    (outer,) = [s for s in k.body if isinstance(s, ir.Loop)]
    return [s for s in outer.body if isinstance(s, ir.Loop)]


def test_the_beta_scaling_joins_the_update_in_one_loop() -> None:
    """C(:, j)'s scaling loops (under IFs on beta) and the update run as one loop over i, each
    iteration on its own element: the (j, i) nest is then elementwise, i fastest."""
    out = apply_schedule(kernels(SRC.read_text())["matmul_nn"], Schedule())
    (fused,) = _column_loops(out)
    assert fused.var == "i" and fused.kind is ir.LoopKind.PARALLEL
    assert [type(s).__name__ for s in fused.body] == ["If", "Assign"]
    text = ir.dump(out)
    assert text.index("if (beta == 0.0)") > text.index("parallel for i in [0, m)")


@pytest.mark.parametrize(("why", "old", "new"), [
    ("the scaling runs over other rows", "     else if (beta /= 1.0d0) then\n        do i = 1, m",
     "     else if (beta /= 1.0d0) then\n        do i = 1, m - 1"),
    ("the scaling reads another element", "c(i, j) = beta*c(i, j)", "c(i, j) = beta*c(1, j)"),
    ("the IF reads C", "else if (beta /= 1.0d0) then", "else if (c(1, j) /= 1.0d0) then"),
    ("a loop before writes another array (from the next row of C)", "c(i, j) = beta*c(i, j)",
     "d(i, j) = beta*c(i + 1, j)"),
])
def test_the_beta_scaling_stays_apart(why: str, old: str, new: str) -> None:
    src = NN.replace("beta, c, ldc)", "beta, c, ldc, d)").replace(
        "real(8), intent(inout) :: c(ldc, *)", "real(8), intent(inout) :: c(ldc, *), d(ldc, *)")
    assert old in src, why
    (k,) = kernels(src.replace(old, new)).values()
    out = apply_schedule(k, Schedule())
    assert externs(out) and len(_column_loops(out)) == 1 and isinstance(_column_loops(out)[0], ir.Loop), why
    (outer,) = [s for s in out.body if isinstance(s, ir.Loop)]
    assert isinstance(outer.body[0], ir.If), why  # the scaling is still before the update, apart


NN = SRC.read_text().split("subroutine matmul_tn")[0]
TN = "subroutine matmul_tn" + SRC.read_text().split("subroutine matmul_tn")[1]


@pytest.mark.parametrize(("why", "src"), [
    ("the l loop starts at 2", TN.replace("do l = 1, k", "do l = 2, k")),
    ("a triangular product: the l loop's bound moves with i", TN.replace("do l = 1, k", "do l = 1, i")),
    ("the increment is not a product of one element of each operand",
     TN.replace("temp = temp + a(l, i)*b(l, j)", "temp = temp + a(l, i)*b(l, j)*a(l, 1)")),
    ("a factor changes with l", TN.replace("temp = temp + a(l, i)*b(l, j)", "temp = temp + a(l, i)*b(l, j)*l")),
    ("an operand is shifted", TN.replace("temp = temp + a(l, i)*b(l, j)", "temp = temp + a(l, i)*b(l + 1, j)")),
    ("temp is used after the loops",
     NN.replace("  end do\nend subroutine", "  end do\n  c(1, 1) = temp\nend subroutine")),
    ("an operand is written in the nest",
     NN.replace("c(i, j) = c(i, j) + temp*a(i, l)", "c(i, j) = c(i, j) + temp*a(i, l)\n           b(l, j) = 0.0d0")),
    ("the accumulated element is not C(i, j)", NN.replace("c(i, j) = c(i, j) + temp*a(i, l)",
                                                          "c(i, l) = c(i, l) + temp*a(i, l)")),
])
def test_not_a_product(why: str, src: str) -> None:
    (k,) = kernels(src).values()
    assert not contraction.has_product(k), why
    assert not externs(apply_schedule(k, Schedule())), why


def test_rendered_triton_matches_numpy_with_leading_dimensions(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    from tests.test_targets_triton import DEV, load_module

    ks = kernels(SRC.read_text())
    m, n, k, lda, ldb, ldc = 37, 29, 23, 41, 26, 40
    r = np.random.default_rng(3)
    for name in ("matmul_nn", "matmul_tn"):
        kern = ks[name]  # a(lda, k) (a(lda, m) for matmul_tn), b(ldb, n), c(ldc, n)
        assert [ir.expr_str(x) for x in kern.param("a").shape] == ["lda", "m" if name == "matmul_tn" else "k"]
        mod, source = load_module(kern, tmp_path / name)
        assert "tl.dot(" in source
        a_cols = m if name == "matmul_tn" else k
        a = r.standard_normal((lda, a_cols))
        b = r.standard_normal((ldb, n))
        c = r.standard_normal((ldc, n))
        for alpha, beta in ((1.5, 0.0), (0.5, 1.0), (2.0, -0.75)):
            op_a = a[:k, :m].T if name == "matmul_tn" else a[:m, :k]
            want = c.copy()
            want[:m] = alpha * op_a @ b[:k] + (beta * c[:m] if beta != 0 else 0)
            flat = {x: torch.from_numpy(v.ravel(order="F").copy()).to(DEV) for x, v in (("a", a), ("b", b), ("c", c))}
            getattr(mod, name)(m, n, k, alpha, flat["a"], lda, flat["b"], ldb, beta, flat["c"], ldc)
            got = flat["c"].cpu().numpy().reshape((ldc, n), order="F")
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
            # a wrong product (a column of A left out) fails the same check
            bad = want.copy()
            bad[:m] -= alpha * np.outer(op_a[:, 0], b[0])
            assert not np.allclose(got, bad, rtol=1e-12, atol=1e-12)
