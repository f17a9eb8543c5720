"""parsers.fortran_regions: where a migrated program's data stays on the device, and where not."""

from __future__ import annotations

import re
from pathlib import Path

from fparser.two import Fortran2003 as F
from fparser.two.utils import walk

from parsers.fortran_calltree import procedure_facts
from parsers.fortran_regions import RegionPlan, place_regions, plan_regions
from parsers.fortran_touch import external_write
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
  subroutine drive(n, a, b)
    integer, intent(in) :: n
    double precision, intent(inout) :: a(n), b(n)
    integer :: i
    call step(n, a, b, 1.0d0)
    do i = 1, n
      b(i) = b(i) + a(i)
    end do
    call step(n, a, b, 2.0d0)
  end subroutine drive
  subroutine scratch(n, a)
    integer, intent(in) :: n
    double precision, intent(inout) :: a(n)
    double precision :: w(n)
    w = a
    call step(n, a, w, 1.0d0)
  end subroutine scratch
  subroutine fence(n, v)
    integer, intent(in) :: n
    double precision, intent(in) :: v(n)
    print *, n
  end subroutine fence
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

SIZED = r"_range\((\w+), size\((\w+), kind=c_size_t\) \* storage_size\((\w+)\) / 8\)"
STEP = {"step": frozenset({1, 2})}  # step's array arguments: a and b (positions 1 and 2)


def _plan(tmp_path: Path, files: tuple[str, ...], translated: dict[str, frozenset[int]] = STEP,
          globals_: frozenset[str] = frozenset()) -> RegionPlan:
    """The region plan of the program made of ``files`` (names under ``tmp_path``)."""
    units = [u for f in files for u in top_units(read(tmp_path / f, tmp_path, make_parser(), [], {})[1])]
    return plan_regions(procedure_facts(units), translated, globals_)


def _place(tmp_path: Path, main: str, translated: dict[str, frozenset[int]] = STEP, file: str = "p.f90"):  # noqa: ANN202
    (tmp_path / "k.f90").write_text(KERNELS)
    (tmp_path / "p.f90").write_text(main)
    plan = _plan(tmp_path, ("k.f90", "p.f90"), translated)
    placed = place_regions(tmp_path / file, tmp_path, (tmp_path / file).read_text(), plan)
    # each update names the array's bytes (none here is assumed-size); the tests read them as kt_update_host(a)
    sized = list(re.finditer(SIZED, placed.text))
    parts = placed.text.count("call kt_update_device_part(")
    assert len(sized) + parts == placed.text.count("call kt_update") and all(m[1] == m[2] == m[3] for m in sized)
    placed.text = re.sub(SIZED, r"(\1)", placed.text)
    return placed


def test_a_region_around_the_loop_with_updates_only_where_host_code_touches_arrays(tmp_path: Path) -> None:
    placed = _place(tmp_path, MAIN)
    assert placed.regions == ["p.f90:10"] and not placed.refused
    text = placed.text
    assert "program p\n  use kt_data\n" in text
    assert "  call kt_data_begin()\n  do it = 1, 5\n" in text and "  end do\n  call kt_data_end()\n" in text
    # s is a scalar passed by value: never mapped; b(1) = a(2) reads a and sets one element of b
    assert "kt_update_host(s)" not in text
    assert ("      call kt_update_host(a)\n      b(1) = a(2)\n"
            "      call kt_update_device_part(b(1), storage_size(b, kind=c_size_t) / 8)\n") in text
    # show is host code of the program that reads a: the host copy is brought up to date first
    assert "    call kt_update_host(a)\n    call show(n, a)\n    call kt_update_device(a)\n" in text
    assert placed.updates == 4


def test_a_region_stays_open_through_a_driver_routine_and_its_host_loop_is_one_piece(tmp_path: Path) -> None:
    main = MAIN.replace("    call show(n, a)\n", "    call drive(n, a, b)\n")
    placed = _place(tmp_path, main)
    assert "kt_data_suspend" not in placed.text and "    call drive(n, a, b)\n  end do\n" in placed.text
    # drive's own host code gets the updates (nothing happens where its arrays are not mapped),
    # around its host loop as a whole rather than each statement in it
    drive = _place(tmp_path, main, file="k.f90").text
    assert ("  subroutine drive(n, a, b)\n    use kt_data\n" in drive and
            "    call kt_update_host(a)\n    call kt_update_host(b)\n    do i = 1, n\n      b(i) = b(i) + a(i)\n"
            "    end do\n    call kt_update_device(b)\n" in drive)
    assert drive.count("kt_update") == 3 and "subroutine both(n, a, b)\n    integer" in drive


def test_a_routine_passing_a_local_array_to_a_translation_suspends_the_region(tmp_path: Path) -> None:
    placed = _place(tmp_path, MAIN.replace("    call show(n, a)\n", "    call scratch(n, a)\n"))
    assert "    call kt_data_suspend()\n    call scratch(n, a)\n    call kt_data_resume()\n" in placed.text
    assert "scratch: regions are suspended" not in placed.refused  # the plan says why, not the file
    plan = _plan(tmp_path, ("k.f90",))
    assert plan.opaque == {"scratch": "it passes its local array w to step"}
    assert set(plan.transparent) == {"both", "drive"} and plan.transparent["drive"] == frozenset({1, 2})


def test_a_convergence_jump_ends_the_region_after_the_loop_and_untouched_arguments_cost_nothing(
        tmp_path: Path) -> None:
    main = (MAIN.replace("    call show(n, a)\n", "    call fence(n, a)\n    if (a(1) > 1.0d2) go to 900\n")
            .replace("  print *, a(1)\n", "900 continue\n  print *, a(1)\n"))
    placed = _place(tmp_path, main)
    assert placed.regions == ["p.f90:10"]
    assert "  end do\n900 continue\n  call kt_data_end()\n  print *, a(1)\n" in placed.text
    # fence never touches its array argument: no copies around it; the test reads a
    assert "    call fence(n, a)\n    call kt_update_host(a)\n    if (a(1) > 1.0d2) go to 900\n" in placed.text
    elsewhere = _place(tmp_path, main.replace("900 continue\n", "  print *, 0\n900 continue\n"))
    assert elsewhere.regions == [] and "can leave early" in elsewhere.refused[0]


def test_unsafe_loops_get_no_region_and_say_why(tmp_path: Path) -> None:
    early = _place(tmp_path, MAIN.replace("    s = s * 0.9d0\n", "    if (s < 0.0d0) stop\n"))
    assert early.regions == [] and "can leave early" in early.refused[0] and "kt_data" not in early.text
    section = _place(tmp_path, MAIN.replace("call step(n, a, b, s)", "call step(n, a(1:n), b, s)"))
    assert section.regions == [] and "array section" in section.refused[0]
    boxed = MAIN.replace("  integer :: it\n", "  integer :: it\n  type :: box\n    double precision :: v(n)\n"
                         "  end type box\n  type(box) :: c\n")
    component = _place(tmp_path, boxed.replace("call step(n, a, b, s)", "call step(n, c%v, b, s)"))
    assert component.regions == [] and "component of a derived type (c % v)" in component.refused[0]
    labelled = _place(tmp_path, MAIN.replace("      b(1) = a(2)\n", "   20 b(1) = a(2)\n"))
    assert labelled.regions == [] and "label" in labelled.refused[0]
    none = _place(tmp_path, MAIN, {"other": frozenset()})
    assert none.regions == [] and none.text == MAIN


STATE = """\
module state
  implicit none
  double precision :: g(10)
end module state
subroutine bump()
  use state
  implicit none
  g = g + 1.0d0
end subroutine bump
"""


def test_host_code_touching_module_arrays_the_caller_cannot_name_suspends_the_region(tmp_path: Path) -> None:
    """``bump`` writes the module array ``g`` a translation takes; where the main program does not
    USE that module it cannot name ``g`` in an update, so the region is suspended around the call."""
    (tmp_path / "state.f90").write_text(STATE)
    (tmp_path / "k.f90").write_text(KERNELS)
    main = MAIN.replace("    call show(n, a)\n", "    call bump()\n")
    seen = main.replace("  use k\n", "  use k\n  use state\n")
    placed = {}
    for name, text in (("unseen", main), ("seen", seen)):
        (tmp_path / "p.f90").write_text(text)
        plan = _plan(tmp_path, ("state.f90", "k.f90", "p.f90"), globals_=frozenset({"g"}))
        placed[name] = place_regions(tmp_path / "p.f90", tmp_path, text, plan).text
    assert "    call kt_data_suspend()\n    call bump()\n    call kt_data_resume()\n" in placed["unseen"]
    assert "kt_data_suspend" not in placed["seen"]
    assert re.search(r"call kt_update_host_range\(g, .*\n    call bump\(\)\n    call kt_update_device_range\(g, ",
                     placed["seen"])


def test_a_variable_named_size_keeps_the_updates_to_the_entry_form(tmp_path: Path) -> None:
    """NPB EP declares ``character*15 size``: the sized form would not compile there."""
    (tmp_path / "k.f90").write_text(KERNELS)
    main = MAIN.replace("  integer :: it\n", "  integer :: it\n  character(len=15) :: size\n")
    (tmp_path / "p.f90").write_text(main)
    text = place_regions(tmp_path / "p.f90", tmp_path, main, _plan(tmp_path, ("k.f90", "p.f90"))).text
    assert "    call kt_update_host(a)\n    call show(n, a)\n" in text and "_range" not in text


def test_setting_one_element_on_the_host_copies_only_that_element(tmp_path: Path) -> None:
    """A probe reset (``b(1) = 2.0``): the host needs nothing of b, the device keeps the rest of
    it; a statement that reads b, sets a section or subscripts with an array still copies it
    whole."""
    part = "call kt_update_device_part({0}, storage_size(b, kind=c_size_t) / 8)"
    (tmp_path / "k.f90").write_text(KERNELS)
    for stmt, element in (("b(1) = 2.0d0", "b(1)"), ("b(it) = s * 2", "b(it)"), ("b(1) = b(2)", None),
                          ("b(1:2) = 0d0", None), ("b(int(a(1))) = 1d0", None)):
        (tmp_path / "p.f90").write_text(MAIN.replace("      b(1) = a(2)\n", f"      {stmt}\n"))
        plan = _plan(tmp_path, ("k.f90", "p.f90"))
        text = place_regions(tmp_path / "p.f90", tmp_path, (tmp_path / "p.f90").read_text(), plan).text
        if element:
            assert f"      {stmt}\n      {part.format(element)}\n" in text, text
            assert "kt_update_host_range(b" not in text and "kt_update_device_range(b" not in text
        else:
            assert "kt_update_device_part" not in text
            assert "call kt_update_host_range(b, " in text and "call kt_update_device_range(b, " in text


SEQUENCE = MAIN[:MAIN.index("  do it = 1, 5\n")] + """\
  call step(n, a, b, s)
  print *, a(1)
  do it = 1, 5
    call step(n, a, b, s)
  end do
  call step(n, a, b, s)
  print *, b(1)
end program p
"""


def test_a_main_program_calling_translations_in_a_row_keeps_one_region_from_the_first_to_the_last(
        tmp_path: Path) -> None:
    placed = _place(tmp_path, SEQUENCE)
    assert placed.regions == ["p.f90:10"] and not placed.refused
    text = placed.text
    assert "  s = 0.5d0\n  call kt_data_begin()\n  call step(n, a, b, s)\n" in text
    # what the program reads after the region (b) is copied back at its end, nothing else (a)
    assert "  call step(n, a, b, s)\n  call kt_update_host(b)\n  call kt_data_end_unread()\n  print *, b(1)\n" in text
    # the host code between the calls reads a from the device's copy; the loop opens no region of its own
    assert "  call kt_update_host(a)\n  print *, a(1)\n  do it = 1, 5\n" in text
    assert text.count("kt_data_begin") == 1 and placed.updates == 2
    # a mapped array allocated between the calls: the span cannot be a region, the loop still is
    alloc = (SEQUENCE.replace("double precision :: a(n), b(n), s", "double precision :: a(n), s\n"
                              "  double precision, allocatable :: b(:)")
             .replace("  print *, a(1)\n", "  print *, a(1)\n  deallocate(b)\n  allocate(b(n))\n  b = 2.0d0\n")
             .replace("  b = 2.0d0\n  s = 0.5d0\n", "  allocate(b(n))\n  b = 2.0d0\n  s = 0.5d0\n"))
    fallback = _place(tmp_path, alloc)
    assert fallback.regions == ["p.f90:17"] and "allocated or deallocated" in fallback.refused[0]
    assert "  call kt_data_begin()\n  do it = 1, 5\n" in fallback.text


def test_an_element_passed_where_a_translation_takes_a_scalar_is_read_from_the_device_first(tmp_path: Path) -> None:
    """NPB MG: ``setup`` (translated) sets ``m1`` on the device; ``call rprj3(r, m1(k), ...)`` reads
    ``m1(k)`` on the host as a scalar argument, so the host copy is brought up to date first."""
    placed = _place(tmp_path, SEQUENCE.replace("  call step(n, a, b, s)\n  print *, b(1)\n",
                                               "  call step(n, a, b, b(2))\n  print *, b(1)\n"))
    assert "  call kt_update_host(b)\n  call step(n, a, b, b(2))\n  call kt_update_host(b)\n" in placed.text


def test_an_element_a_translation_writes_as_a_scalar_argument_goes_back_to_the_device(tmp_path: Path) -> None:
    """Where the translation may write the scalar (intent out or inout), the shim writes the host's
    element; that element alone is copied to the device after the call."""
    (tmp_path / "k.f90").write_text(KERNELS)
    (tmp_path / "p.f90").write_text(SEQUENCE.replace("  call step(n, a, b, s)\n  print *, b(1)\n",
                                                     "  call step(n, a, b, b(2))\n  print *, b(1)\n"))
    for out, want in ((frozenset({3}), True), (frozenset(), False)):
        plan = plan_regions(procedure_facts([u for f in ("k.f90", "p.f90") for u in top_units(
            read(tmp_path / f, tmp_path, make_parser(), [], {})[1])]), STEP, frozenset(), {"step": out})
        text = place_regions(tmp_path / "p.f90", tmp_path, (tmp_path / "p.f90").read_text(), plan).text
        after = "  call step(n, a, b, b(2))\n  call kt_update_device_part(b(2), storage_size(b, kind=c_size_t) / 8)\n"
        assert (after in text) is want, text


def test_a_main_program_region_copies_back_only_what_the_program_reads_after_it(tmp_path: Path) -> None:
    """After the last call, NPB's main programs print scalars and a report: nothing is copied back
    (the run's largest copies otherwise, inside its timed section). A jump from there back before
    the region keeps the whole write-back."""
    scalars = _place(tmp_path, SEQUENCE.replace("  print *, b(1)\nend program", "  print *, s\n"
                                                "  if (s > 0) goto 10\n  print *, n\n10 continue\nend program"))
    assert "  call step(n, a, b, s)\n  call kt_data_end_unread()\n  print *, s\n" in scalars.text
    assert scalars.updates == 1  # a, read between the calls
    back = _place(tmp_path, SEQUENCE.replace("  a = 1.0d0\n", "10 a = 1.0d0\n")
                  .replace("  print *, b(1)\nend program", "  if (s > 0) goto 10\nend program"))
    assert "  call step(n, a, b, s)\n  call kt_data_end()\n" in back.text and "end_unread" not in back.text


def test_a_write_to_an_output_unit_only_reads_an_internal_write_writes(tmp_path: Path) -> None:
    writes = "  write (*, *) a(1)\n  write (6, '(f8.3)') b(1)\n  do it"
    text = _place(tmp_path, SEQUENCE.replace("  print *, a(1)\n  do it", writes)).text
    assert "  call kt_update_host(a)\n  write (*, *) a(1)\n  call kt_update_host(b)\n  write (6, '(f8.3)') b(1)\n" \
        "  do it" in text and "kt_update_device" not in text
    program = "program w\n  integer :: u\n  character(len=9) :: s\n  write (*, *) 1\n  write (unit=6, fmt=*) 2\n" \
              "  write (s, *) 3\n  write (u, *) 4\nend program w\n"
    (tmp_path / "w.f90").write_text(program)
    tree = read(tmp_path / "w.f90", tmp_path, make_parser(), [], {})[1]
    assert [external_write(w) for w in walk(tree, F.Write_Stmt)] == [True, True, False, False]
