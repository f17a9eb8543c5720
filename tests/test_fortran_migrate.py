"""parsers.fortran_migrate: a routine's executable part replaced by a call of its translation."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers.fortran import parse_files
from parsers.fortran_migrate import NotMigrated, call_statement, format_statement, migrate_file
from translate import ir

FIXED = """\
      SUBROUTINE SCALE(N, A, X)
      INTEGER N
      DOUBLE PRECISION A, X(N)
      COMMON /CFG/ ALPHA
      DOUBLE PRECISION ALPHA
      INTEGER I
      DO 10 I = 1, N
         X(I) = A * ALPHA * X(I)
   10 CONTINUE
      END
"""

FREE = """\
module settings
  implicit none
  logical :: verbose = .false.
  double precision :: shift = 1.0d0
end module settings

module work
  use settings, only: shift
  implicit none
contains
  function total(n, x) result(s)
    integer, intent(in) :: n
    double precision, intent(in) :: x(n)
    double precision :: s
    integer :: i
    s = 0.0d0
    do i = 1, n
      s = s + x(i) + shift
    end do
  end function total

  subroutine flagged(n, x, done)
    integer, intent(in) :: n
    double precision, intent(inout) :: x(:)
    logical, intent(out) :: done
    integer :: i
    do i = 1, n
      x(i) = 2.0d0 * x(i)
    end do
    done = .true.
  end subroutine flagged
end module work
"""


def _kernels(path: Path) -> dict[str, ir.Kernel]:
    modules = parse_files([path], path.parent, [], {})
    return {k.name.lower(): k for m in modules for k in m.kernels if isinstance(k, ir.Kernel)}


def test_fixed_form_routine_calls_its_translation(tmp_path: Path) -> None:
    src = tmp_path / "scale.f"
    src.write_text(FIXED)
    m = migrate_file(src, tmp_path, _kernels(src))
    assert m.replaced == ("scale",) and not m.refused
    lines = m.text.splitlines()
    # the USE first in the specification part, the declarations kept, the loop gone
    assert lines[1] == "      use scale_kt, only: kt_scale"
    assert "      COMMON /CFG/ ALPHA" in lines and "DO 10" not in m.text and "CONTINUE" not in m.text
    call = next(line for line in lines if "kt_scale(" in line and "use" not in line)
    assert call.startswith("      call kt_scale(") and "alpha" in call
    assert lines[-1] == "      END" and all(len(line) <= 72 for line in lines)


def test_function_result_and_module_variables(tmp_path: Path) -> None:
    src = tmp_path / "work.f90"
    src.write_text(FREE)
    kernels = _kernels(src)
    m = migrate_file(src, tmp_path, {"total": kernels["total"]})
    assert m.replaced == ("total",)
    assert "    s = kt_total(n, x, shift)" in m.text  # the RESULT variable is assigned
    assert "    use total_kt, only: kt_total\n    use settings, only: shift\n" in m.text
    assert "s = s + x(i)" not in m.text and "end function total" in m.text
    assert "do i = 1, n\n      x(i) = 2.0d0" in m.text  # the routine not named is unchanged


def test_a_written_logical_is_refused_with_the_reason(tmp_path: Path) -> None:
    src = tmp_path / "work.f90"
    src.write_text(FREE)
    kernels = _kernels(src)
    m = migrate_file(src, tmp_path, {"flagged": kernels["flagged"]})
    assert m.replaced == () and "LOGICAL 'done' is written" in m.refused["flagged"]
    assert m.text.rstrip("\n") == FREE.rstrip("\n")


def test_extent_arguments_and_logical_values() -> None:
    n = ir.Scalar("n", ir.DType.I32)
    x = ir.Array("x", ir.DType.F64, (ir.Var("x_size1", ir.DType.I32),), intent=ir.Intent.INOUT)
    size = ir.Scalar("x_size1", ir.DType.I32, ir.Intent.IN, "extent:x:1")
    flag = ir.Scalar("verbose", ir.DType.BOOL, ir.Intent.IN, "module:settings")
    k = ir.Kernel("f", (n, x, flag, size), (), (), ir.Origin("f.f90", 1))
    assert call_statement(k) == "call kt_f(n, x, merge(1, 0, verbose), size(x, 1))"
    with pytest.raises(NotMigrated):
        call_statement(ir.Kernel("g", (ir.Scalar("h", ir.DType.F16),), (), (), ir.Origin("g.f90", 1)))


def test_long_statements_are_continued() -> None:
    text = "call kt_long(" + ", ".join(f"argument_{k}" for k in range(20)) + ")"
    fixed = format_statement(text, fixed=True)
    assert all(len(line) <= 72 for line in fixed) and all(line[5] == "&" for line in fixed[1:])
    assert "".join(line[6:] for line in fixed) == text
    free = format_statement(text, fixed=False, indent="  ")
    assert all(len(line) <= 100 for line in free) and free[0].endswith("&")
    assert "".join(line.strip().strip("&") for line in free) == text
