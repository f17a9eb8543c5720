"""The C frontend (parsers/c.py on libclang): the IR it makes of C loop code, the errors it
reports with file and line, the functions it leaves unsupported with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers.base import ParseError
from parsers.c import parse_files, parse_source
from translate import ir
from translate.ir import Const, DType, Intent, Layout, Var


def kernels(text: str, **kw: object) -> dict[str, ir.Kernel | ir.Opaque]:
    return {k.name: k for k in parse_source(text, "t.c", **kw).kernels}  # type: ignore[arg-type]


def kernel(text: str, name: str, **kw: object) -> ir.Kernel:
    k = kernels(text, **kw)[name]
    assert isinstance(k, ir.Kernel), k.reason  # type: ignore[union-attr]
    return k


def loops(k: ir.Kernel) -> list[ir.Loop]:
    return [n for s in k.body for n in ir.walk(s) if isinstance(n, ir.Loop)]


GEMM = """
#define SCALAR_VAL(x) x
void gemm(int ni, int nj, int nk, double alpha, double beta,
          double C[ni][nj], double A[ni][nk], double B[nk][nj])
{
  int i, j, k;
#pragma scop
  for (i = 0; i < ni; i++) {
    for (j = 0; j < nj; j++)
      C[i][j] *= beta;
    for (k = 0; k < nk; k++)
      for (j = 0; j < nj; j++)
        C[i][j] += SCALAR_VAL(alpha) * A[i][k] * B[k][j];
  }
#pragma endscop
}
"""


def test_vla_arguments_are_row_major_arrays_shaped_by_their_declarations() -> None:
    k = kernel(GEMM, "gemm")
    names = [(p.name, type(p).__name__, p.intent) for p in k.params]
    assert names == [("ni", "Scalar", Intent.IN), ("nj", "Scalar", Intent.IN), ("nk", "Scalar", Intent.IN),
                     ("alpha", "Scalar", Intent.IN), ("beta", "Scalar", Intent.IN), ("C", "Array", Intent.INOUT),
                     ("A", "Array", Intent.IN), ("B", "Array", Intent.IN)]
    c = k.param("C")
    assert isinstance(c, ir.Array) and c.layout == Layout.RIGHT and c.dtype == DType.F64
    assert c.shape == (Var("ni", DType.I32), Var("nj", DType.I32))
    assert [(lp.var, lp.start, lp.stop, lp.step) for lp in loops(k)][:2] == [
        ("i", Const(0, DType.I32), Var("ni", DType.I32), Const(1, DType.I32)),
        ("j", Const(0, DType.I32), Var("nj", DType.I32), Const(1, DType.I32))]
    assert any("#pragma scop at line 7 to 15" in n for n in k.notes)


def test_fixed_size_macros_inclusive_and_downward_loops() -> None:
    k = kernel("#define N 64\nvoid f(double A[N][N], double (*B)[N]) {\n"
               "  for (int i = 1; i <= N - 2; i++)\n    for (int j = N - 1; j >= 0; j--)\n"
               "      B[i][j] = 0.25 * A[i][j];\n}\n", "f")
    a, b = k.param("A"), k.param("B")
    assert isinstance(a, ir.Array) and a.shape == (Const(64, DType.I32), Const(64, DType.I32))
    # B's first extent is not declared: the largest row written, + 1
    assert isinstance(b, ir.Array) and b.shape == (Const(63, DType.I32), Const(64, DType.I32))
    outer, inner = loops(k)
    assert (outer.start, outer.stop, outer.step) == (Const(1, DType.I32), Const(63, DType.I32), Const(1, DType.I32))
    assert (inner.start, inner.stop, inner.step) == (Const(63, DType.I32), Const(-1, DType.I32),
                                                     Const(-1, DType.I32))


def test_pointer_with_index_arithmetic_gets_its_extent_from_the_accesses() -> None:
    k = kernel("void mv(int m, int n, int lda, const double *restrict a, const double *restrict x,"
               " double *restrict y) {\n  for (int i = 0; i < m; i++) {\n    double s = 0.0;\n"
               "    for (int j = 0; j < n; j++) s += a[i*lda + j] * x[j];\n    y[i] = s;\n  }\n}\n", "mv")
    env = {"m": 5, "n": 4, "lda": 7}
    a = k.param("a")
    assert isinstance(a, ir.Array) and ir.evaluate(a.shape[0], env) == 4 * 7 + 4
    assert ir.evaluate(k.param("x").shape[0], env) == 4  # type: ignore[union-attr]
    assert k.param("a").intent == Intent.IN and k.param("y").intent == Intent.INOUT
    assert not any("restrict" in n for n in k.notes)  # declared restrict: nothing assumed


def test_scalars_through_pointers_results_and_pragmas() -> None:
    text = ("#include <math.h>\n"
            "double norm(int n, const double *x) {\n  double s = 0;\n"
            "#pragma omp parallel for reduction(+:s)\n  for (int i = 0; i < n; i++) s += x[i]*x[i];\n"
            "  return sqrt(s);\n}\n"
            "void stats(int n, const double *x, const double *shift, double *lo, int *neg) {\n"
            "  *lo = x[0]; *neg = 0;\n  for (int i = 0; i < n; i++) {\n"
            "    *lo = fmin(*lo, x[i] - *shift);\n    if (x[i] < 0) *neg += 1;\n  }\n}\n")
    ks = kernels(text)
    norm, stats = ks["norm"], ks["stats"]
    assert isinstance(norm, ir.Kernel) and norm.result == DType.F64
    assert isinstance(norm.body[-1], ir.Assign) and norm.body[-1].target == Var("norm", DType.F64)
    assert isinstance(norm.body[-1].value, ir.Call) and norm.body[-1].value.fn == "sqrt"
    (loop,) = loops(norm)
    assert loop.directive == "omp parallel for reduction(+:s)"
    assert isinstance(stats, ir.Kernel)
    lo, neg, shift = stats.param("lo"), stats.param("neg"), stats.param("shift")
    assert isinstance(lo, ir.Scalar) and lo.intent == Intent.OUT and lo.dtype == DType.F64
    assert isinstance(neg, ir.Scalar) and neg.intent == Intent.OUT and neg.dtype == DType.I32
    # only read through its pointer: one element, as the caller passes it
    assert isinstance(shift, ir.Array) and shift.shape == (Const(1, DType.I32),) and shift.intent == Intent.IN


def test_while_loops_non_canonical_for_chained_and_by_value_assignments() -> None:
    k = kernel("void f(int n, double tol, double *x) {\n  int it = 0;\n  double err = 1.0;\n"
               "  while (err > tol && it < 100) { err = err * 0.5; it++; }\n"
               "  for (int i = 0; i < n; i *= 2) x[i] = err;\n"
               "  n = n - 1;\n  x[0] = x[n] = 2.0;\n}\n", "f")
    whiles = [s for s in k.body if isinstance(s, ir.While)]
    assert len(whiles) == 2  # the while, and the for whose step is not constant
    assert k.param("n").intent == Intent.IN  # assigned, but C passed it by value: a local copy is
    assert any(isinstance(d, ir.Scalar) and d.name == "n_local" for d in k.locals)
    stores = [s for s in k.body if isinstance(s, ir.Assign) and isinstance(s.target, ir.Load)]
    assert [ir.expr_str(s.target) for s in stores] == ["x[n_local]", "x[0]"]


@pytest.mark.parametrize(("text", "line", "words"), [
    ("void f(int n, double *a) {\n  for (int i = 0; i < n; i++)\n    a[i] = 1.0 +;\n}\n", 3, "expected expression"),
    ('#include "no_such_header.h"\nvoid f(double *a) { a[0] = 1; }\n', 1, "'no_such_header.h' file not found"),
    ("void f(double *a) {\n  for (int i = 0; i < N; i++) a[i] = 0;\n}\n", 2, "undeclared identifier 'N'"),
])
def test_malformed_c_a_missing_header_and_an_unknown_macro_are_one_error_with_its_line(
        tmp_path: Path, text: str, line: int, words: str) -> None:
    src = tmp_path / "bad.c"
    src.write_text(text)
    with pytest.raises(ParseError) as err:
        parse_files([src], tmp_path)
    assert err.value.path == "bad.c" and err.value.line == line and words in err.value.message
    collected: list[ParseError] = []
    assert parse_files([src], tmp_path, errors=collected) == [] and len(collected) == 1


def test_the_workflow_defines_and_include_folders_reach_the_preprocessor(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "sizes.h").write_text("#define SCALE(x) (2.0 * (x))\n")
    src = tmp_path / "k.c"
    src.write_text('#include "sizes.h"\nvoid f(double a[N]) { for (int i = 0; i < N; i++) a[i] = SCALE(a[i]); }\n')
    (mod,) = parse_files([src], tmp_path, [tmp_path / "inc"], {"N": "12"})
    (k,) = mod.kernels
    assert isinstance(k, ir.Kernel) and k.param("a").shape == (Const(12, DType.I32),)  # type: ignore[union-attr]
    assert loops(k)[0].stop == Const(12, DType.I32)


def test_unsupported_constructs_make_that_function_opaque_and_the_rest_goes_on() -> None:
    text = ("#include <stdio.h>\n"
            "static double sq(double v) { return v * v; }\n"
            "void brk(int n, double *a) {\n  for (int i = 0; i < n; i++) { if (a[i] < 0) break; a[i] = 1; }\n}\n"
            "void calls(int n, double *a) {\n  for (int i = 0; i < n; i++) a[i] = sq(a[i]);\n}\n"
            "void chars(int n, char *s) {\n  for (int i = 0; i < n; i++) s[i] = 'a';\n}\n"
            "void show(int n, double *a) {\n  for (int i = 0; i < n; i++) printf(\"%f\\n\", a[i]);\n}\n"
            "void ok(int n, double *a) {\n  for (int i = 0; i < n; i++) a[i] = 2 * a[i];\n}\n"
            "int main(void) { return 0; }\n")
    ks = kernels(text)
    assert isinstance(ks["ok"], ir.Kernel) and isinstance(ks["sq"], ir.Kernel)
    reasons = {n: k.reason for n, k in ks.items() if isinstance(k, ir.Opaque)}
    assert reasons["brk"] == "break statement at t.c:4 cannot be lowered"
    assert reasons["calls"] == "the call to sq at t.c:7 cannot be lowered"
    assert reasons["chars"].startswith("an array of char at t.c:9")
    assert "computes no result" in reasons["show"]  # a report routine: host code
    assert reasons["main"].startswith("PROGRAM main")
