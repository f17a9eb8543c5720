"""Fortran projects as they are found: modules across files in any order, modules outside the
sources, main programs with contained procedures, INCLUDE lines, calls that stay on the host,
output and STOP on error paths, and what must stay unsupported."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers.base import ParseError
from parsers.fortran import parse_files, parse_source
from targets.base import get_renderer
from translate import ir
from translate.analysis import analyze
from translate.schedule import Schedule


def write(tmp: Path, files: dict[str, str]) -> list[Path]:
    paths = []
    for name, text in files.items():
        p = tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        paths.append(p)
    return sorted(paths)


def routines(tmp: Path, files: dict[str, str], errors: list[ParseError] | None = None) -> dict:
    mods = parse_files(write(tmp, files), tmp, errors=errors)
    return {k.name: k for m in mods for k in m.kernels}


def lowered(d: dict, name: str) -> ir.Kernel:
    k = d[name]
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    return k


def test_module_defined_in_a_file_that_sorts_after_its_user(tmp_path: Path) -> None:
    d = routines(tmp_path, {
        "a_user.f90": "subroutine scale(n, x)\n  use z_consts\n  integer :: n, i\n  real(8) :: x(n)\n"
                      "  do i = 1, n\n    x(i) = factor * x(i)\n  end do\nend subroutine\n",
        "z_consts.f90": "module z_consts\n  real(8), parameter :: factor = 2.5d0\nend module\n",
    })
    k = lowered(d, "scale")
    assert any(isinstance(n, ir.Const) and n.value == 2.5 for s in k.body for n in ir.walk(s))


def test_module_cycle_is_reported_and_costs_only_its_users(tmp_path: Path) -> None:
    d = routines(tmp_path, {
        "a.f90": "module ma\n  use mb\n  integer :: x\nend module\n",
        "b.f90": "module mb\n  use ma\n  integer :: y\nend module\n",
        "c.f90": "subroutine uses(n)\n  use ma\n  integer :: n\n  n = x\nend subroutine\n"
                 "subroutine free(n, a)\n  integer :: n, i\n  real :: a(n)\n  do i = 1, n\n    a(i) = 0\n"
                 "  end do\nend subroutine\n",
    })
    assert isinstance(d["uses"], ir.Opaque) and "cycle" in d["uses"].reason and "ma" in d["uses"].reason
    assert isinstance(d["free"], ir.Kernel)


def test_module_outside_the_sources(tmp_path: Path) -> None:
    d = routines(tmp_path, {"k.f90": """module k
contains
  subroutine plain(n, a)
    use mpi
    integer :: n, i
    real(8) :: a(n)
    do i = 1, n
      a(i) = 1.0d0
    end do
  end subroutine
  subroutine needs(n, a)
    use mpi
    integer :: n
    real(8) :: a(n)
    a(1) = mpi_wtime_value
  end subroutine
end module
"""})
    assert isinstance(d["plain"], ir.Kernel)  # a name it does not use costs nothing
    # without IMPLICIT NONE an undeclared name would become a local: never with a module unknown
    assert isinstance(d["needs"], ir.Opaque) and "mpi_wtime_value" in d["needs"].reason
    assert "module mpi" in d["needs"].reason


def test_use_only_and_renames(tmp_path: Path) -> None:
    d = routines(tmp_path, {
        "m.f90": "module m\n  real(8), parameter :: a = 1.0d0, b = 2.0d0\nend module\n",
        "u.f90": "subroutine u(x)\n  use m, only: c => b\n  implicit none\n  real(8) :: x\n  x = c\nend subroutine\n"
                 "subroutine v(x)\n  use m, only: a\n  implicit none\n  real(8) :: x\n  x = b\nend subroutine\n",
    })
    assert lowered(d, "u").body[0] == ir.Assign(ir.Var("x", ir.DType.F64), ir.Const(2.0, ir.DType.F64))
    assert isinstance(d["v"], ir.Opaque) and "'b'" in d["v"].reason  # ONLY: b is not visible


def test_main_program_contained_procedures_are_routines(tmp_path: Path) -> None:
    d = routines(tmp_path, {"p.f90": """program sim
  implicit none
  integer :: nx = 8
  real(8) :: dt
  real(8) :: u(100)
  dt = 0.1d0
  call step()
contains
  subroutine step()
    integer :: i
    do i = 1, nx
      u(i) = u(i) + dt
    end do
  end subroutine
end program
"""})
    assert isinstance(d["sim"], ir.Opaque) and "main program" in d["sim"].reason and "step" in d["sim"].reason
    k = lowered(d, "step")
    assert {p.name: p.binding for p in k.params} == {"u": "program:sim", "dt": "program:sim", "nx": "program:sim"}
    assert k.param("u").intent == ir.Intent.INOUT


def test_include_lines_are_expanded_with_their_origin(tmp_path: Path) -> None:
    write(tmp_path, {
        "inc/sizes.h": "      integer nmax\n      parameter (nmax = 16)\n",
        "s.f": "      subroutine z(a)\n      include 'sizes.h'\n      double precision a(nmax)\n"
               "      integer i\n      do 10 i = 1, nmax\n         a(i) = 0.0d0\n   10 continue\n      end\n",
    })
    with pytest.raises(ParseError, match="sizes.h"):  # not next to s.f, and no include folder given
        parse_files([tmp_path / "s.f"], tmp_path)
    d = parse_files([tmp_path / "s.f"], tmp_path, [tmp_path / "inc"])[0].kernels
    k = d[0]
    assert isinstance(k, ir.Kernel) and k.param("a").shape == (ir.Const(16, ir.DType.I32),)


def test_include_not_found_names_the_file(tmp_path: Path) -> None:
    errors: list[ParseError] = []
    routines(tmp_path, {"s.f": "      subroutine z\n      include 'nothere.h'\n      end\n"}, errors)
    assert errors and "nothere.h" in errors[0].message and errors[0].path == "s.f" and errors[0].line == 2


# ------------------------------------------------------------------ host code

TIMED = """module timing
  logical :: timeron = .true.
contains
  subroutine timer_start(n)
    integer :: n
    call wtime_external(n)
  end subroutine
end module
subroutine relax(n, a, b)
  use timing
  integer :: n, i
  real(8) :: a(n), b(n)
  if (timeron) call timer_start(3)
  do i = 1, n
    b(i) = 0.5d0 * a(i)
  end do
  if (n < 0) then
    write(0, *) 'relax: bad n', n
    stop 2
  end if
end subroutine
"""


def test_timer_calls_and_error_output_stay_on_the_host(tmp_path: Path) -> None:
    d = routines(tmp_path, {"t.f90": TIMED})
    k = analyze(lowered(d, "relax"))
    calls = [n for s in k.body for n in ir.walk(s) if isinstance(n, ir.HostCall)]
    assert [(c.kind, c.routine, c.module) for c in calls] == [("call", "timer_start", "timing"),
                                                              ("print", "stderr", ""), ("stop", "stop", "")]
    loop = next(n for s in k.body for n in ir.walk(s) if isinstance(n, ir.Loop))
    assert loop.kind is ir.LoopKind.PARALLEL
    # timer_start itself passes its argument on to a routine outside the sources, which may write it
    ts = lowered(d, "timer_start")
    assert ts.body == (ir.HostCall("call", "wtime_external", (ir.Var("n", ir.DType.I32),), ("n",), "", 6),)
    assert ts.param("n").intent == ir.Intent.INOUT


def test_host_calls_render_as_weak_calls_and_launcher_notes(tmp_path: Path) -> None:
    k = analyze(lowered(routines(tmp_path, {"t.f90": TIMED}), "relax"))
    cpp = get_renderer("kokkos", Schedule()).render(k, Schedule())
    text = cpp.files[cpp.entry]
    assert 'extern "C" void __timing_MOD_timer_start(int*) __attribute__((weak));' in text
    assert "if (__timing_MOD_timer_start) __timing_MOD_timer_start(&kt_arg0);" in text
    assert 'std::fprintf(stderr, "relax: bad n %lld\\n"' in text and "std::exit(2);" in text
    cu = get_renderer("cuda", Schedule()).render(k, Schedule())
    assert "__attribute__((weak))" in cu.files[cu.entry] and "#include <cstdlib>" in cu.files[cu.entry]
    tr = get_renderer("triton", Schedule()).render(k, Schedule())
    py = tr.files[tr.entry]
    assert "pass  # CALL TIMER_START(3)" in py and "raise SystemExit(2)" in py
    # the call alone under an IF: the launcher still compiles
    mod = {k.name: k for k in parse_source("subroutine only(n, a)\n  logical :: t\n  integer :: n, i\n"
                                           "  real(8) :: a(n)\n  t = n > 2\n  if (t) call tick(3)\n  do i = 1, n\n"
                                           "    a(i) = 1.0d0\n  end do\nend subroutine\n", "o.f90",
                                           fixed_form=False).kernels}
    only = get_renderer("triton", Schedule()).render(analyze(mod["only"]), Schedule())
    compile(only.files[only.entry], "only_triton.py", "exec")
    assert any("TIMER_START" in n for n in tr.notes)


def test_a_host_call_inside_a_loop_keeps_the_loop_serial() -> None:
    k = parse_source("""subroutine tick(n, a)
  integer :: n, i
  real(8) :: a(n)
  do i = 1, n
    a(i) = a(i) + 1.0d0
    call progress(i)
  end do
end subroutine""", "t.f90", fixed_form=False).kernels[0]
    assert isinstance(k, ir.Kernel)
    loop = next(n for s in analyze(k).body for n in ir.walk(s) if isinstance(n, ir.Loop))
    assert loop.kind is ir.LoopKind.SERIAL and "host code (PROGRESS)" in loop.reason


@pytest.mark.parametrize("body, why", [
    ("call fill(n, a)", "passed the array a"),
    ("call fill(n, a(2))", "array element"),
])
def test_calls_that_cannot_stay_on_the_host(body: str, why: str) -> None:
    k = parse_source(f"subroutine c(n, a)\n  integer :: n\n  real(8) :: a(n)\n  {body}\n  a(1) = 0\n"
                     "end subroutine\n", "c.f90", fixed_form=False).kernels[0]
    assert isinstance(k, ir.Opaque) and why in k.reason and "FILL" in k.reason


def test_a_host_call_that_changes_what_the_region_uses_is_refused(tmp_path: Path) -> None:
    d = routines(tmp_path, {"g.f90": """module state
  real(8) :: total
contains
  subroutine add_up(n, a)
    integer :: n, i
    real(8) :: a(n)
    do i = 1, n
      total = total + a(i)
    end do
  end subroutine
  subroutine report_total(n, a, s)
    integer :: n
    real(8) :: a(n), s
    call bump()
    s = total
  end subroutine
  subroutine bump()
    integer :: k
    if (total < 0.0d0) call xerbla('BUMP', 1)
    do k = 1, 3
      if (total > 100.0d0) return
      total = total + 1.0d0
    end do
  end subroutine
end module
"""})
    assert isinstance(d["report_total"], ir.Opaque) and "total" in d["report_total"].reason
    assert "BUMP" in d["report_total"].reason


def test_callee_with_loops_inlined_when_the_arrays_keep_their_layout() -> None:
    mods = {k.name: k for k in parse_source("""subroutine border(n1, n2, u)
  integer :: n1, n2, i
  real(8) :: u(n1, n2)
  do i = 1, n2
    u(1, i) = u(n1 - 1, i)
  end do
end subroutine
subroutine caller(m1, m2, v, w)
  integer :: m1, m2
  real(8) :: v(m1, m2), w(m1 + 1, m2)
  call border(m1, m2, v)
  v(2, 2) = 1.0d0
end subroutine
subroutine other(m1, m2, w)
  integer :: m1, m2
  real(8) :: w(m1 + 1, m2)
  call border(m1, m2, w)
end subroutine""", "b.f90", fixed_form=False).kernels}
    k = mods["caller"]
    assert isinstance(k, ir.Kernel)
    loop = next(n for s in k.body for n in ir.walk(s) if isinstance(n, ir.Loop))
    assert loop.var == "border1_i" and loop.body[0].target.array == "v"  # type: ignore[union-attr]
    # w's rows are one longer than border declares: its elements would move, so no inlining
    assert isinstance(mods["other"], ir.Opaque) and "other extents" in mods["other"].reason


def test_inlined_callee_shares_its_common_block() -> None:
    k = parse_source("""      subroutine user(n, x)
      integer n, i
      double precision x(n)
      do 10 i = 1, n
         x(i) = scaled(x(i))
   10 continue
      end
      double precision function scaled(v)
      double precision v, alpha, beta
      common /coef/ alpha, beta
      scaled = alpha * v + beta
      end
""", "u.f", fixed_form=True).kernels[0]
    assert isinstance(k, ir.Kernel)
    assert [(p.name, p.binding) for p in k.params if p.binding] == [("alpha", "common:/coef/"),
                                                                   ("beta", "common:/coef/")]


def test_default_real_8_changes_the_default_kinds(tmp_path: Path) -> None:
    src = {"r.f": "      subroutine s(n, x, y)\n      real x(n)\n      double precision y(n)\n"
                  "      x(1) = 1.0\n      y(1) = x(1)\n      end\n"}
    plain = parse_files(write(tmp_path, src), tmp_path)[0].kernels[0]
    assert isinstance(plain, ir.Kernel) and plain.param("x").dtype == ir.DType.F32
    wide = parse_files(write(tmp_path, src), tmp_path, flags=("-fdefault-real-8", "-fdefault-double-8"))[0].kernels[0]
    assert isinstance(wide, ir.Kernel) and wide.param("x").dtype == ir.DType.F64
    assert wide.body[0] == ir.Assign(ir.Load("x", (ir.Const(0, ir.DType.I32),), ir.DType.F64),
                                     ir.Const(1.0, ir.DType.F64))
    # without -fdefault-double-8, gfortran makes DOUBLE PRECISION REAL(16): refused
    quad = parse_files(write(tmp_path, src), tmp_path, flags=("-fdefault-real-8",))[0].kernels[0]
    assert isinstance(quad, ir.Opaque) and "REAL(16)" in quad.reason


def test_private_module_variables(tmp_path: Path) -> None:
    d = routines(tmp_path, {"p.f90": """module pm
  implicit none
  integer, private :: mode = 2
  integer, private :: calls = 0
contains
  subroutine s(n, a)
    integer :: n, i
    real(8) :: a(n)
    do i = 1, n
      if (mode == 2) a(i) = 2.0d0 * a(i)
    end do
  end subroutine
  subroutine t(n, a)
    integer :: n
    real(8) :: a(n)
    calls = calls + 1
    a(1) = calls
  end subroutine
end module
"""})
    # nothing assigns mode and only its module could: a constant
    assert [p.name for p in lowered(d, "s").params] == ["n", "a"]
    # calls changes: a variable no code outside the module can set for validation
    assert isinstance(d["t"], ir.Opaque) and "PRIVATE" in d["t"].reason


def test_do_variable_also_assigned_is_declared_as_a_scalar() -> None:
    k = parse_source("""subroutine tri(n, m, a, b)
  integer :: n, m, j, k, top
  real(8) :: a(n, m), b(n, m)
  do j = 1, n
    k = 1
    b(j, k) = a(j, k)
    do k = 2, m
      b(j, k) = a(j, k) - b(j, k - 1)
    end do
    k = m
    b(j, k) = 2.0d0 * b(j, k)
  end do
end subroutine""", "t.f90", fixed_form=False).kernels[0]
    assert isinstance(k, ir.Kernel)
    text = get_renderer("kokkos", Schedule()).render(analyze(k), Schedule())
    src = text.files[text.entry]
    # the scalar k is declared where it is first assigned, outside the DO k loop, which has its own
    assert src.index("int k = 1;") < src.index("for (int k = 1; k < m; ++k)")


def test_a_value_a_host_call_returns_keeps_the_routine_on_the_host() -> None:
    mods = {k.name: k for k in parse_source("""subroutine tstop(n, elapsed, start)
  integer :: n
  real(8) :: elapsed(n), start(n), t
  call wtime(t)
  elapsed(n) = elapsed(n) + t - start(n)
end subroutine
subroutine tick(n, a)
  integer :: n, i
  real(8) :: a(n), t
  call wtime(t)
  do i = 1, n
    a(i) = 2.0d0 * a(i)
  end do
end subroutine""", "t.f90", fixed_form=False).kernels}
    # the clock's value feeds the result: no translation can compute the same
    assert isinstance(mods["tstop"], ir.Opaque) and "CALL WTIME sets" in mods["tstop"].reason
    assert isinstance(mods["tick"], ir.Kernel)  # the value is not used: the call stays on the host


def test_inlined_array_arguments_are_associated_by_storage_position() -> None:
    mods = {k.name: k for k in parse_source("""subroutine first(m, x)
  integer :: m
  real(8) :: x(m)
  x(1) = 5.0d0
end subroutine
subroutine caller(n, u)
  integer :: n
  real(8) :: u(0:n+1)
  call first(n + 2, u)
end subroutine
subroutine blk(a, b)
  real(8) :: a(5, 5), b(5)
  integer :: i
  do i = 1, 5
    b(i) = b(i) - a(i, i)
  end do
end subroutine
subroutine user(n, lhs, rhs)
  integer :: n, i
  real(8) :: lhs(5, 5, 3, n), rhs(5, n)
  do i = 1, n
    call blk(lhs(1, 1, 2, i), rhs(1, i))
  end do
end subroutine
subroutine midrow(n, lhs, rhs)
  integer :: n
  real(8) :: lhs(5, 5, 3, n), rhs(5, n)
  call blk(lhs(2, 1, 2, 1), rhs(1, 1))
end subroutine""", "a.f90", fixed_form=False).kernels}
    # x(1) is the first element of u(0:n+1): u(0), position 0
    assert lowered(mods, "caller").body[-1] == ir.Assign(ir.Load("u", (ir.Const(0, ir.DType.I32),), ir.DType.F64),
                                                         ir.Const(5.0, ir.DType.F64))
    # blk's a(i, i) is lhs(i, i, 2, i_outer), its b(i) is rhs(i, i_outer)
    k = lowered(mods, "user")
    inner = next(n for s in k.body for n in ir.walk(s) if isinstance(n, ir.Loop) and n.var == "blk1_i")
    loads = {n for n in ir.walk(inner.body[0]) if isinstance(n, ir.Load)}
    i, j = ir.Var("blk1_i", ir.DType.I32), ir.Var("i", ir.DType.I32)
    assert ir.Load("lhs", (i, i, ir.Const(1, ir.DType.I32), j), ir.DType.F64) in loads
    assert ir.Load("rhs", (i, j), ir.DType.F64) in loads
    # an element in the middle of a column: blk's columns would straddle lhs's
    assert isinstance(mods["midrow"], ir.Opaque) and "other extents" in mods["midrow"].reason


def test_a_timer_call_inside_serial_device_code_is_not_made_there() -> None:
    k = parse_source("""subroutine sweep(n, a)
  integer :: n, i
  real(8) :: a(n)
  do i = 2, n
    call timer_start(7)
    a(i) = a(i) + a(i - 1)
  end do
end subroutine""", "s.f90", fixed_form=False).kernels[0]
    assert isinstance(k, ir.Kernel)
    for target, text in (("cuda", "// CALL TIMER_START (s.f90:5): not made from device code"),
                         ("kokkos", "// CALL TIMER_START (s.f90:5): not made from device code"),
                         ("triton", "pass  # CALL TIMER_START at line 5: not made from a Triton kernel")):
        r = get_renderer(target, Schedule()).render(analyze(k), Schedule())
        assert text in r.files[r.entry], target


def test_a_unit_that_does_not_parse_costs_that_unit_only(tmp_path: Path) -> None:
    d = routines(tmp_path, {"u.f90": """module good
  real(8), parameter :: c = 2.0d0
end module good
module worse
  real(8) :: w = = 1
end module worse
subroutine fine(n, a)
  use good
  integer :: n, i
  real(8) :: a(n)
  do i = 1, n
    a(i) = c * a(i)
  end do
end subroutine
subroutine broken(n)
  integer :: n
  n = n +* 2
end subroutine
subroutine needs_worse(x)
  use worse
  real(8) :: x
  x = w
end subroutine
"""})
    assert isinstance(d["fine"], ir.Kernel)
    assert isinstance(d["broken"], ir.Opaque) and "does not parse" in d["broken"].reason
    assert d["broken"].origin == ir.Origin("u.f90", 15) and "u.f90:17" in d["broken"].reason
    assert isinstance(d["needs_worse"], ir.Opaque) and "module worse does not parse" in d["needs_worse"].reason
