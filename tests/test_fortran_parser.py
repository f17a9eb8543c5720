from pathlib import Path

import pytest

from parsers.base import ParseError
from parsers.fortran import parse_files, parse_source
from translate import ir
from translate.analysis import analyze
from translate.ir import Array, BinOp, Call, Const, DType, Intent, Load, Loop, Scalar, Var

SAMPLES = Path(__file__).parent / "fortran_samples"
BLAS = sorted((SAMPLES / "blas").glob("*.f"))
I32 = DType.I32


@pytest.fixture(scope="module")
def blas() -> dict[str, ir.Kernel | ir.Opaque]:
    mods = parse_files(BLAS, SAMPLES)
    return {k.name: k for m in mods for k in m.kernels}


@pytest.fixture(scope="module")
def misc() -> dict[str, ir.Kernel | ir.Opaque]:
    files = [SAMPLES / "misc" / n for n in ("stencil.f90", "legacy.f", "physics.f90")]
    return {k.name: k for m in parse_files(files, SAMPLES) for k in m.kernels}


def loops(k: ir.Kernel) -> list[Loop]:
    return [n for s in k.body for n in ir.walk(s) if isinstance(n, Loop)]


def kernel(d: dict[str, ir.Kernel | ir.Opaque], name: str) -> ir.Kernel:
    k = d[name]
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    return k


def test_module_per_file_with_relative_paths() -> None:
    mods = parse_files(BLAS, SAMPLES)
    assert [m.path for m in mods] == [f"blas/{p.name}" for p in BLAS]
    assert all(m.language == "fortran" for m in mods)


@pytest.mark.parametrize("name", ["daxpy", "ddot", "dscal", "dnrm2", "idamax", "dgemv", "dger", "dgemm"])
def test_blas_routines_become_kernels(blas, name: str) -> None:
    k = kernel(blas, name)
    assert k.origin == ir.Origin(f"blas/{name}.f", 1)
    assert loops(k)


def test_daxpy_params_intents_shapes(blas) -> None:
    k = kernel(blas, "daxpy")
    assert [p.name for p in k.params] == ["n", "da", "dx", "incx", "dy", "incy"]
    n, da, dx, incx, dy, _ = k.params
    assert n == Scalar("n", I32, Intent.IN) and da == Scalar("da", DType.F64, Intent.IN)
    assert isinstance(dx, Array) and dx.intent == Intent.IN and dx.dtype == DType.F64
    assert isinstance(dy, Array) and dy.intent == Intent.INOUT
    # assumed-size X(*) accessed with stride INCX over N elements
    assert ir.evaluate(dx.shape[0], {"n": 10, "incx": -3}) == 1 + 9 * 3
    assert ir.evaluate(dy.shape[0], {"n": 10, "incy": 2}) == 19
    assert dx.lower == (Const(1, I32),)
    assert {d.name for d in k.locals} == {"ix", "iy", "m", "mp1"}


def test_daxpy_loops_normalised(blas) -> None:
    first, unrolled, strided = loops(kernel(blas, "daxpy"))
    assert (first.var, first.start, first.stop, first.step) == ("i", Const(0, I32), Var("m", I32), Const(1, I32))
    assert first.body[0] == ir.Assign(
        Load("dy", (Var("i", I32),), DType.F64),
        BinOp("add", Load("dy", (Var("i", I32),), DType.F64),
              BinOp("mul", Var("da", DType.F64), Load("dx", (Var("i", I32),), DType.F64), DType.F64), DType.F64))
    assert unrolled.start == BinOp("sub", Var("mp1", I32), Const(1, I32), I32)
    assert unrolled.step == Const(4, I32) and unrolled.stop == Var("n", I32)
    assert unrolled.body[1].target.index == (BinOp("add", Var("i", I32), Const(1, I32), I32),)
    assert first.line == 28 and strided.line == 49


def test_function_result_and_char_flags(blas) -> None:
    ddot = kernel(blas, "ddot")
    assert ddot.result == DType.F64 and Scalar("ddot", DType.F64) in ddot.locals
    assert ir.Assign(Var("ddot", DType.F64), Var("dtemp", DType.F64)) in ddot.body
    idamax = kernel(blas, "idamax")
    assert idamax.result == I32
    dgemv = kernel(blas, "dgemv")
    assert dgemv.params[0] == Scalar("trans", DType.CHAR, Intent.IN)
    lsames = [n for s in dgemv.body for n in ir.walk(s) if isinstance(n, Call) and n.fn == "lsame"]
    assert Call("lsame", (Var("trans", DType.CHAR), Const("N", DType.CHAR)), DType.BOOL) in lsames
    errors = [n for s in dgemv.body for n in ir.walk(s) if isinstance(n, ir.ErrorCall)]
    assert errors == [ir.ErrorCall("xerbla", (Const("DGEMV ", DType.CHAR), Var("info", I32)))]


def test_parameters_substituted_and_2d_shapes(blas) -> None:
    dgemv = kernel(blas, "dgemv")
    a = dgemv.param("a")
    assert isinstance(a, Array) and a.shape == (Var("lda", I32), Var("n", I32)) and a.intent == Intent.IN
    assert "zero" not in {d.name for d in dgemv.locals}
    y = dgemv.param("y")
    assert y.intent == Intent.INOUT
    env = {"m": 5, "n": 7, "incx": 2, "incy": -3, "trans": "N"}
    assert ir.evaluate(y.shape[0], env) >= 1 + 4 * 3
    x = dgemv.param("x")
    assert ir.evaluate(x.shape[0], env) == 1 + 6 * 2
    dgemm = kernel(blas, "dgemm")
    assert dgemm.param("c").shape == (Var("ldc", I32), Var("n", I32))
    assert dgemm.param("c").intent == Intent.INOUT
    assert ir.evaluate(dgemm.param("a").shape[1], {"k": 3, "m": 9}) == 9


def test_symbolic_step_becomes_trip_count_loop(blas) -> None:
    dnrm2 = kernel(blas, "dnrm2")
    (loop,) = loops(dnrm2)
    assert loop.start == Const(0, I32) and loop.step == Const(1, I32)
    for n, incx in ((5, 1), (5, 3), (1, 2)):
        trip = ir.evaluate(loop.stop, {"n": n, "incx": incx})
        assert trip == len(range(1, 1 + (n - 1) * incx + 1, incx))
    load = next(x for s in loop.body for x in ir.walk(s) if isinstance(x, Load))
    assert load.index == (BinOp("mul", Var("ix", I32), Var("incx", I32), I32),)
    assert dnrm2.param("x").shape[0] == BinOp("add", BinOp("mul", BinOp("sub", Var("n", I32), Const(1, I32), I32),
                                                            Var("incx", I32), I32), Const(1, I32), I32)


def test_negative_step_and_lower_bounds(misc) -> None:
    (loop,) = loops(kernel(misc, "reverse_scale"))
    assert (loop.start, loop.stop, loop.step) == (BinOp("sub", Var("n", I32), Const(1, I32), I32), Const(-1, I32),
                                                  Const(-1, I32))
    j2 = kernel(misc, "jacobi2d")
    u = j2.param("u")
    assert u.lower == (Const(0, I32), Const(0, I32))
    assert u.shape == (BinOp("add", Var("n", I32), Const(2, I32), I32), BinOp("add", Var("m", I32), Const(2, I32), I32))
    assert j2.param("unew").intent == Intent.OUT
    inner = loops(j2)[1]
    # u(i-1, j) with i -> i+1 and lower bound 0: u[i, j+1]
    loads = [x for x in ir.walk(inner.body[0].value) if isinstance(x, Load)]
    assert Load("u", (Var("i", I32), BinOp("add", Var("j", I32), Const(1, I32), I32)), DType.F64) in loads
    h = kernel(misc, "heat3d")
    d = h.param("d")
    assert ir.evaluate(d.shape[0], {"x_min": 1, "x_max": 10}) == 14 and d.dtype == DType.F64


def test_goto_out_of_a_loop_lowers_to_a_flag_and_keeps_it_serial(misc) -> None:
    k = misc["jumpy"]
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    assert [lp.kind for lp in loops(analyze(k))] == [ir.LoopKind.SERIAL]
    assert isinstance(misc["shared"], ir.Kernel)  # the rest of the file goes on


def test_io_calls_and_externals_opaque(misc) -> None:
    # PRINT and a call passing scalars stay host code; a routine with nothing else computes nothing
    assert misc["printer"].reason.startswith("printer computes no result")
    assert misc["caller"].reason.startswith("caller computes no result")
    # an external routine passed an array cannot stay outside the translation
    assert "DOESNOTEXIST" in misc["extcall"].reason and "misc/legacy.f:61" in misc["extcall"].reason
    assert "passed the array x" in misc["extcall"].reason


def test_shared_label_loops(misc) -> None:
    k = kernel(misc, "shared")
    outer, inner = loops(k)
    assert outer.var == "j" and outer.body == (inner,) and inner.var == "i"
    assert k.param("a").intent == Intent.INOUT


def test_common_block_params(misc) -> None:
    k = kernel(misc, "usecom")
    alpha, w = k.param("alpha"), k.param("w")
    assert alpha == Scalar("alpha", DType.F64, Intent.INOUT, "common:/params/")
    assert isinstance(w, Array) and w.binding == "common:/params/" and w.shape == (Const(100, I32),)
    assert w.intent == Intent.IN
    assert [p.name for p in k.params[:2]] == ["n", "x"]


def test_module_routines_and_variables(misc) -> None:
    fall = kernel(misc, "fall")
    assert fall.param("gravity") == Scalar("gravity", DType.F64, Intent.IN, "module:physics")
    assert fall.param("v").dtype == DType.F64 and fall.param("v").intent == Intent.INOUT
    kin = kernel(misc, "kinetic")
    assert kin.result == DType.F64
    assert kin.body[0] == ir.Assign(Var("kinetic", DType.F64), Const(0.0, DType.F64))
    pw = next(x for x in ir.walk(kin.body[1]) if isinstance(x, BinOp) and x.op == "pow")
    assert pw.rhs == Const(2, I32)


def test_function_inlined(misc) -> None:
    k = kernel(misc, "squares")
    (loop,) = loops(k)
    xi = Load("x", (Var("i", I32),), DType.F64)
    assert loop.body == (ir.Assign(Load("y", (Var("i", I32),), DType.F64),
                                   BinOp("add", BinOp("mul", xi, xi, DType.F64), Const(1.0, DType.F64), DType.F64)),)


def test_mixed_arithmetic_casts(misc) -> None:
    k = kernel(misc, "shared")
    value = loops(k)[1].body[0].value
    assert value == BinOp("add", BinOp("mul", ir.Cast(DType.F64, BinOp("add", Var("i", I32), Const(1, I32), I32)),
                                       Const(2.0, DType.F64), DType.F64),
                          ir.Cast(DType.F64, BinOp("add", Var("j", I32), Const(1, I32), I32)), DType.F64)


def test_preprocessed_include_and_define() -> None:
    src = SAMPLES / "misc" / "prep.F90"
    (mod,) = parse_files([src], SAMPLES, include=[SAMPLES / "misc" / "include"],
                         defines={"NMAX_VALUE": "500", "USE_MAX": "1"})
    k = mod.kernels[0]
    assert isinstance(k, ir.Kernel)
    assert k.param("x").shape == (Const(500, I32),)
    (loop,) = loops(k)
    assert loop.line == 7 and isinstance(loop.body[0].value, Call) and loop.body[0].value.fn == "max"
    (mod,) = parse_files([src], SAMPLES, include=[SAMPLES / "misc" / "include"], defines={"NMAX_VALUE": "8"})
    assert loops(mod.kernels[0])[0].line == 11 and mod.kernels[0].body[0].body[0].value.fn == "min"


def test_malformed_source_names_file_and_line() -> None:
    # the unit that does not parse is reported with the line; the other unit of the file goes on
    (mod,) = parse_files([SAMPLES / "misc" / "broken.f90"], SAMPLES)
    ok, bad = mod.kernels
    assert isinstance(bad, ir.Opaque) and bad.name == "bad" and "misc/broken.f90:10" in bad.reason
    assert isinstance(ok, ir.Kernel) and ok.name == "ok"
    # a file with no unit that parses on its own is a ParseError naming the file and line
    errors: list[ParseError] = []
    mods = parse_files([SAMPLES / "misc" / "legacy.f"], SAMPLES, errors=errors)
    assert not errors and mods
    with pytest.raises(ParseError) as err:
        parse_source("subroutine only(n)\n  n = = 2\nend subroutine\n", "one.f90", fixed_form=False)
    assert (err.value.path, err.value.line) == ("one.f90", 2)


def test_parse_source_fixed_and_free_forms() -> None:
    fixed = parse_source("      SUBROUTINE S(N, X)\n      REAL*8 X(N)\n      DO 10 I = 1, N\n"
                         "         X(I) = 0\n   10 CONTINUE\n      END\n", "s.f", fixed_form=True)
    k = fixed.kernels[0]
    assert isinstance(k, ir.Kernel) and k.param("x").dtype == DType.F64 and k.param("x").intent == Intent.INOUT
    assert loops(k)[0].body[0].value == Const(0.0, DType.F64)
    free = parse_source("subroutine t(n, x)\n  integer :: n\n  real(kind=4) :: x(n)\n"
                        "  x(:) = 0\nend subroutine\n", "t.f90", fixed_form=False)
    k = free.kernels[0]  # array syntax: a loop over the section
    assert isinstance(k, ir.Kernel) and k.param("x").intent == Intent.INOUT
    assert loops(k)[0].stop == Var("n", I32) and loops(k)[0].body[0].value == Const(0.0, DType.F32)


def test_implicit_typing_and_kinds() -> None:
    mod = parse_source("subroutine u(n, a, k8, flag)\n  integer*8 k8\n  character(len=1) flag\n"
                       "  dimension a(n)\n  integer, parameter :: dp = kind(1.0d0)\n  real(dp) :: t\n"
                       "  t = 1.0_dp\n  if (flag == 'y') a(1) = t + k8\nend\n", "u.f90", fixed_form=False)
    k = mod.kernels[0]
    assert isinstance(k, ir.Kernel)
    assert k.param("n").dtype == I32 and k.param("a").dtype == DType.F32 and k.param("k8").dtype == DType.I64
    assert k.param("flag").dtype == DType.CHAR and k.param("a").intent == Intent.INOUT
    assert Scalar("t", DType.F64) in k.locals


def test_common_block_members_keep_storage_order_and_all_are_params() -> None:
    mod = parse_source("      SUBROUTINE STEP(N, U)\n      INTEGER N\n      DOUBLE PRECISION U(N), DX, DT\n"
                       "      COMMON /PARAMS/ DX, DT\n      DO 10 I = 1, N\n         U(I) = U(I) * DT\n"
                       "   10 CONTINUE\n      END\n", "step.f", fixed_form=True)
    k = mod.kernels[0]
    assert isinstance(k, ir.Kernel)
    globals_ = [p for p in k.params if p.binding]
    # DX is unused but must be there, before DT, or the reference would lay the block out wrongly
    assert [(p.name, p.binding) for p in globals_] == [("dx", "common:/params/"), ("dt", "common:/params/")]
    assert k.param("dx").intent == Intent.IN
