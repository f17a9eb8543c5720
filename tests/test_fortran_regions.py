"""parsers.fortran_regions: where a migrated program's data stays on the device, and where not."""

from __future__ import annotations

from pathlib import Path

from parsers.fortran_regions import place_regions, procedure_facts
from parsers.fortran_units import make_parser, read, top_units

KERNELS = """\
module k
  implicit none
contains
  subroutine step(n, a, b, s)
    integer, intent(in) :: n
    double precision, intent(inout) :: a(n), b(n)
    double precision, intent(in) :: s
    a = a + s * b
  end subroutine step
  subroutine show(n, a)
    integer, intent(in) :: n
    double precision, intent(in) :: a(n)
    print *, sum(a)
  end subroutine show
  subroutine both(n, a, b)
    integer, intent(in) :: n
    double precision, intent(inout) :: a(n), b(n)
    call step(n, a, b, 1.0d0)
  end subroutine both
end module k
"""

MAIN = """\
program p
  use k
  implicit none
  integer, parameter :: n = 10
  double precision :: a(n), b(n), s
  integer :: it
  a = 1.0d0
  b = 2.0d0
  s = 0.5d0
  do it = 1, 5
    s = s * 0.9d0
    call step(n, a, b, s)
    if (it == 3) then
      b(1) = a(2)
    end if
    call show(n, a)
  end do
  print *, a(1)
end program p
"""

STEP = {"step": frozenset({1, 2})}  # step's array arguments: a and b (positions 1 and 2)


def _place(tmp_path: Path, main: str, translated: dict[str, frozenset[int]] = STEP):  # noqa: ANN202
    (tmp_path / "k.f90").write_text(KERNELS)
    path = tmp_path / "p.f90"
    path.write_text(main)
    units = [u for f in (tmp_path / "k.f90", path) for u in top_units(read(f, tmp_path, make_parser(), [], {})[1])]
    return place_regions(path, tmp_path, main, translated, set(), procedure_facts(units))


def test_a_region_around_the_loop_with_updates_only_where_host_code_touches_arrays(tmp_path: Path) -> None:
    placed = _place(tmp_path, MAIN)
    assert placed.regions == ["p.f90:10"] and not placed.refused
    text = placed.text
    assert "program p\n  use kt_data\n" in text
    assert "  call kt_data_begin()\n  do it = 1, 5\n" in text and "  end do\n  call kt_data_end()\n" in text
    # s is a scalar passed by value: never mapped; b(1) = a(2) reads a and b, writes b
    assert "kt_update_host(s)" not in text
    assert ("      call kt_update_host(a)\n      call kt_update_host(b)\n      b(1) = a(2)\n"
            "      call kt_update_device(b)\n") in text
    # show is host code of the program that reads a: the host copy is brought up to date first
    assert "    call kt_update_host(a)\n    call show(n, a)\n    call kt_update_device(a)\n" in text
    assert placed.updates == 5


def test_a_host_routine_reaching_a_translation_closes_the_region_around_it(tmp_path: Path) -> None:
    placed = _place(tmp_path, MAIN.replace("    call show(n, a)\n", "    call both(n, a, b)\n"))
    assert "    call kt_data_end()\n    call both(n, a, b)\n    call kt_data_begin()\n" in placed.text


def test_unsafe_loops_get_no_region_and_say_why(tmp_path: Path) -> None:
    early = _place(tmp_path, MAIN.replace("    s = s * 0.9d0\n", "    if (s < 0.0d0) stop\n"))
    assert early.regions == [] and "can leave early" in early.refused[0] and "kt_data" not in early.text
    section = _place(tmp_path, MAIN.replace("call step(n, a, b, s)", "call step(n, a(1:n), b, s)"))
    assert section.regions == [] and "array section" in section.refused[0]
    labelled = _place(tmp_path, MAIN.replace("      b(1) = a(2)\n", "   20 b(1) = a(2)\n"))
    assert labelled.regions == [] and "label" in labelled.refused[0]
    none = _place(tmp_path, MAIN, {"other": frozenset()})
    assert none.regions == [] and none.text == MAIN
