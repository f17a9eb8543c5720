"""The Fortran reference build on project-shaped sources (validation.fsources,
validation.refbuild, runners.build_reference): units found with fparser, main programs
compiled as kt_host_ modules, files compiled in USE order, a file that does not compile
costing only its own routines, and what a workflow's ``build:`` section links in."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from parsers.fortran import parse_files
from translate import ir
from validation import runners, toolchains
from validation.fsources import compile_order, home_of, homes, scan
from validation.inputs import make_case

needs_f2py = pytest.mark.skipif(not (toolchains.gfortran().available and toolchains.f2py().available),
                                reason="needs gfortran and numpy.f2py (meson, ninja)")


def write(folder: Path, files: dict[str, str]) -> list[Path]:
    out = []
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.lstrip("\n"))  # as written: fixed form keeps its columns
        out.append(path)
    return out


def kernels(paths: list[Path], root: Path) -> dict[str, ir.Kernel]:
    """The routines of ``paths`` as the frontend gives them (an Opaque's signature where it
    has one: the reference only needs the signature)."""
    out: dict[str, ir.Kernel] = {}
    for module in parse_files(paths, root):
        for k in module.kernels:
            if isinstance(k, ir.Opaque):
                if k.signature is not None:
                    out[k.name] = k.signature
            else:
                out[k.name] = k
    return out


def run(build: runners.ReferenceBuild, kernel: ir.Kernel, sizes: dict[str, int], tmp: Path,
        seed: int = 5) -> tuple[dict[str, np.ndarray], runners.RunResult]:
    case = make_case(kernel, sizes, {}, {}, seed)
    return case.arrays | case.scalars, runners.run_reference(build, kernel, case, tmp / "work")


PROGRAM_FREE = """
program demo
  implicit none
  integer, parameter :: n = 8
  real(8) :: scale
  real(8) :: buf(n)
  integer :: i
10 format(8f6.1)
  scale = 2.0d0
  do i = 1, n
    buf(i) = i
  end do
  call apply(buf, n)
  print 10, buf
contains
  subroutine apply(x, m)
    integer, intent(in) :: m
    real(8), intent(inout) :: x(m)
    integer :: j
    do j = 1, m
      x(j) = x(j) * scale + buf(j)
    end do
  end subroutine apply
end program demo
"""

# fixed form: the module line the build writes must start in column 7
PROGRAM_FIXED = """
      program fixp
      implicit none
      double precision shift
      double precision y(4)
      shift = 1.5d0
      y = 0
      call addsh(y, 4)
      write(*, *) y
      contains
      subroutine addsh(y, k)
      integer k
      double precision y(k)
      integer i
      do i = 1, k
         y(i) = y(i) + shift
      end do
      end subroutine addsh
      end program fixp
"""

MAIN_ONLY = """
program only
  print *, 'a main program without contained procedures'
end program only
"""

# the module is defined in a file that sorts after its user; the first procedure
# ends with a bare END SUBROUTINE, right before the next one
USER = """
subroutine use_it(x, n)
  use zmod, only: factor
  implicit none
  integer, intent(in) :: n
  real(8), intent(inout) :: x(n)
  integer :: i
  do i = 1, n
    x(i) = x(i) * factor
  end do
end subroutine use_it
"""

ZMOD = """
module zmod
  implicit none
  real(8) :: factor = 3.0d0
contains
  subroutine first(x, n)
    integer, intent(in) :: n
    real(8), intent(inout) :: x(n)
    integer :: i
    do i = 1, n
      x(i) = x(i) + 1.0d0
    end do
  end subroutine
  subroutine second(x, n)
    integer, intent(in) :: n
    real(8), intent(inout) :: x(n)
    integer :: i
    do i = 1, n
      x(i) = x(i) * 2.0d0
    end do
  end subroutine
end module zmod
subroutine third(x, n)
  integer, intent(in) :: n
  real(8), intent(inout) :: x(n)
  integer :: i
  do i = 1, n
    x(i) = -x(i)
  end do
end subroutine
"""


# ------------------------------------------------------------------ no compiler


def test_units_after_a_bare_end_subroutine(tmp_path: Path) -> None:
    (z,) = write(tmp_path, {"z_mod.f90": ZMOD})
    table = homes(scan([z], tmp_path, [], {}))
    assert [(h.file.rel, h.module) for h in table["first"]] == [("z_mod.f90", "zmod")]
    assert [(h.file.rel, h.module) for h in table["second"]] == [("z_mod.f90", "zmod")]
    assert [(h.file.rel, h.module) for h in table["third"]] == [("z_mod.f90", None)]


def test_compile_order_follows_uses_and_names_cycles(tmp_path: Path) -> None:
    paths = write(tmp_path, {
        "a_user.f90": USER, "z_mod.f90": ZMOD,
        "c1.f90": "module ma\n  use mb\nend module ma\n",
        "c2.f90": "module mb\n  use ma\nend module mb\n",
        "d.f90": "subroutine d()\n  use ma\nend subroutine d\n",
    })
    order, cycles = compile_order(scan(paths, tmp_path, [], {}))
    assert [f.rel for f in order] == ["z_mod.f90", "a_user.f90", "d.f90"]
    assert cycles == {"c1.f90": "modules USE each other in a cycle: ma -> mb -> ma",
                      "c2.f90": "modules USE each other in a cycle: ma -> mb -> ma"}


def test_main_programs_become_modules_or_are_left_out(tmp_path: Path) -> None:
    paths = write(tmp_path, {"demo.f90": PROGRAM_FREE, "fixp.f": PROGRAM_FIXED, "only.f90": MAIN_ONLY})
    demo, fixp, only = scan(paths, tmp_path, [], {})
    assert demo.defines() == ["kt_host_demo"] and demo.copy is not None
    lines = demo.copy.splitlines()
    assert lines[0] == "module kt_host_demo" and lines[-1] == "end module kt_host_demo"
    assert "  real(8) :: buf(n)" in lines and "contains" in lines
    assert not any(s in demo.copy for s in ("scale = 2.0d0", "call apply", "print", "format"))
    assert demo.where(lines.index("  subroutine apply(x, m)") + 1, copy=True) == "demo.f90:15"
    assert "10 format" in PROGRAM_FREE.split("scale = 2.0d0")[0]  # in the specification part: dropped
    assert fixp.copy is not None and fixp.copy.splitlines()[0] == "      module kt_host_fixp"
    assert "call addsh" not in fixp.copy
    assert only.copy is None and "left out" in only.left_out and only.defines() == []
    assert [(h.file.rel, h.module) for h in homes([demo, fixp, only])["apply"]] == [("demo.f90", "kt_host_demo")]


def test_main_program_without_program_statement(tmp_path: Path) -> None:
    # old fixed-form code: the main program has no PROGRAM statement
    alone, hosted = scan(write(tmp_path, {
        "old.f": "      x = 1.0\n      print *, x\n      end\n",
        "host.f90": "implicit none\nreal(8) :: q\nq = 1\ncall t()\ncontains\nsubroutine t()\n"
                    "q = q + 1\nend subroutine t\nend\n",
    }), tmp_path, [], {})
    assert "left out" in alone.left_out and alone.copy is None
    assert hosted.defines() == ["kt_host_main"] and hosted.copy is not None
    assert hosted.copy.splitlines()[:3] == ["module kt_host_main", "implicit none", "real(8) :: q"]
    assert "q = 1" not in hosted.copy and hosted.copy.splitlines()[-1] == "end module kt_host_main"


def test_home_follows_the_kernel_origin(tmp_path: Path) -> None:
    paths = write(tmp_path, {"p1/a.f90": "subroutine s()\nend subroutine s\n",
                             "p2/b.f90": "module m\ncontains\nsubroutine s()\nend subroutine s\nend module m\n"})
    table = homes(scan(paths, tmp_path, [], {}))
    assert home_of("s", ir.Origin("p2/b.f90", 3), table).module == "m"  # type: ignore[union-attr]
    assert home_of("S", ir.Origin("p1/a.f90", 1), table).module is None  # type: ignore[union-attr]
    assert home_of("nowhere", ir.Origin("x.f90", 1), table) is None


# ------------------------------------------------------------------ with gfortran


@pytest.mark.slow
@needs_f2py
def test_program_procedures_and_variables_get_a_reference(tmp_path: Path) -> None:
    paths = write(tmp_path, {"demo.f90": PROGRAM_FREE, "fixp.f": PROGRAM_FIXED, "only.f90": MAIN_ONLY})
    ks = kernels(paths, tmp_path)
    assert {p.binding for p in ks["apply"].params} == {None, "program:demo"}
    build = runners.build_reference(paths, list(ks.values()), tmp_path, cache_dir=tmp_path / "cache")
    assert build.ok and not build.failed, build.reason + build.log
    assert "only.f90: it holds only the main program only" in build.log
    given, r = run(build, ks["apply"], {"m": 6}, tmp_path)
    assert r.ok, r.reason + r.log
    want = given["x"] * given["scale"] + given["buf"][:6]
    np.testing.assert_allclose(r.outputs["x"], want, rtol=1e-15)
    given, r = run(build, ks["addsh"], {"k": 5}, tmp_path)
    assert r.ok, r.reason + r.log
    np.testing.assert_allclose(r.outputs["y"], given["y"] + given["shift"], rtol=1e-15)


@pytest.mark.slow
@needs_f2py
def test_modules_in_a_later_file_and_routines_after_a_bare_end(tmp_path: Path) -> None:
    paths = write(tmp_path, {"a_user.f90": USER, "z_mod.f90": ZMOD})
    ks = kernels(paths, tmp_path)
    build = runners.build_reference(paths, list(ks.values()), tmp_path, cache_dir=tmp_path / "cache")
    assert build.ok and not build.failed, build.reason + build.log
    given, r = run(build, ks["use_it"], {"n": 5}, tmp_path)
    assert r.ok, r.reason + r.log
    np.testing.assert_allclose(r.outputs["x"], given["x"] * given["factor"], rtol=1e-15)
    for name, want in (("first", lambda x: x + 1), ("second", lambda x: 2 * x), ("third", lambda x: -x)):
        given, r = run(build, ks[name], {"n": 4}, tmp_path)
        assert r.ok, f"{name}: {r.reason}{r.log}"
        np.testing.assert_allclose(r.outputs["x"], want(given["x"]), rtol=1e-15)


BAD = """
module badmod
  implicit none
  real(8) :: w = 0.5d0
end module badmod

subroutine bad_scale(x, n)
  implicit none
  integer, intent(in) :: n
  real(8), intent(inout) :: x(n)
  integer :: i
  do i = 1, n
    x(i) = 3.0d0 * x(i)
  end do
end subroutine bad_scale

subroutine oops(k)
  implicit none
  integer, intent(out) :: k
  k = 'abc'
end subroutine oops
"""

DEP = """
subroutine dep_add(x, n)
  use badmod, only: w
  implicit none
  integer, intent(in) :: n
  real(8), intent(inout) :: x(n)
  integer :: i
  do i = 1, n
    x(i) = x(i) + w
  end do
end subroutine dep_add
"""

GOOD = """
subroutine good_scale(x, n)
  implicit none
  integer, intent(in) :: n
  real(8), intent(inout) :: x(n)
  integer :: i
  do i = 1, n
    x(i) = 2.0d0 * x(i)
  end do
end subroutine good_scale
"""


@pytest.mark.slow
@needs_f2py
def test_a_file_that_does_not_compile_costs_only_its_routines(tmp_path: Path) -> None:
    paths = write(tmp_path, {"src/bad.f90": BAD, "src/dep.f90": DEP, "src/good.f90": GOOD})
    ks = kernels(paths, tmp_path)
    build = runners.build_reference(paths, list(ks.values()), tmp_path, cache_dir=tmp_path / "cache")
    assert build.ok, build.reason + build.log
    given, r = run(build, ks["good_scale"], {"n": 5}, tmp_path)
    assert r.ok, r.reason + r.log
    np.testing.assert_allclose(r.outputs["x"], 2 * given["x"], rtol=1e-15)
    _, r = run(build, ks["bad_scale"], {"n": 5}, tmp_path)
    assert not r.ok and "gfortran bad.f90 failed: bad.f90:19: Error: Cannot convert" in r.reason
    _, r = run(build, ks["dep_add"], {"n": 5}, tmp_path)
    assert not r.ok and "dep.f90 USEs module badmod, and gfortran bad.f90 failed: bad.f90:19" in r.reason
    again = runners.build_reference(paths, list(ks.values()), tmp_path, cache_dir=tmp_path / "cache")
    assert again.cached and again.failed == build.failed  # the reasons survive the cache


CALLS = """
subroutine stamp(t, n)
  implicit none
  integer, intent(in) :: n
  real(8), intent(inout) :: t(n)
  real(8), external :: kt_helper
  integer :: i
  do i = 1, n
    t(i) = kt_helper(t(i))
  end do
end subroutine stamp
"""

HELPER = "double kt_helper_(double *x) { return 3.0 * *x + 1.0; }\n"


@pytest.mark.slow
@needs_f2py
def test_c_helper_linked_from_build_sources_and_libraries(tmp_path: Path) -> None:
    calls, good = write(tmp_path, {"calls.f90": CALLS, "good.f90": GOOD})
    (helper,) = write(tmp_path, {"common/helper.c": HELPER})
    ks = kernels([calls, good], tmp_path)
    stamp = ks["stamp"]
    built = runners.build_reference([calls, good], [stamp, ks["good_scale"]], tmp_path, cache_dir=tmp_path / "c",
                                    extra_sources=[helper], cflags=["-O1"])
    assert built.ok and not built.failed, built.reason + built.log
    given, r = run(built, stamp, {"n": 6}, tmp_path)
    assert r.ok, r.reason + r.log
    np.testing.assert_allclose(r.outputs["t"], 3 * given["t"] + 1, rtol=1e-15)
    # the same helper from an archive given under build.libraries
    subprocess.run(["cc", "-c", "-fPIC", str(helper), "-o", str(tmp_path / "helper.o")], check=True)
    subprocess.run(["ar", "rcs", str(tmp_path / "libhelp.a"), str(tmp_path / "helper.o")], check=True)
    archived = runners.build_reference([calls, good], [stamp, ks["good_scale"]], tmp_path, cache_dir=tmp_path / "c",
                                       libraries=[str(tmp_path / "libhelp.a"), "-lm"])
    assert archived.ok and archived.lib_dir != built.lib_dir, archived.reason + archived.log
    given, r = run(archived, stamp, {"n": 3}, tmp_path)
    assert r.ok, r.reason + r.log
    np.testing.assert_allclose(r.outputs["t"], 3 * given["t"] + 1, rtol=1e-15)
    # without it the call is unresolved: only the case making it fails, not the import
    bare = runners.build_reference([calls, good], [stamp, ks["good_scale"]], tmp_path, cache_dir=tmp_path / "c")
    assert bare.ok, bare.reason + bare.log
    _, r = run(bare, stamp, {"n": 3}, tmp_path)
    assert not r.ok and "undefined symbol: kt_helper_" in r.reason
    given, r = run(bare, ks["good_scale"], {"n": 3}, tmp_path)
    assert r.ok, r.reason + r.log
    np.testing.assert_allclose(r.outputs["x"], 2 * given["x"], rtol=1e-15)


FIELDS = """
module fields
  implicit none
  integer, parameter :: nx = 6
  real(8), allocatable :: density_field_values(:, :)
  real(8) :: coefficient_number_one, coefficient_number_two, coefficient_number_three
  real(8) :: coefficient_number_four, coefficient_number_five
contains
  subroutine alloc_fields()
    allocate(density_field_values(nx, 3))
  end subroutine alloc_fields
end module fields

subroutine blend(out, n)
  use fields
  implicit none
  integer, intent(in) :: n
  real(8), intent(out) :: out(n)
  integer :: i
  do i = 1, n
    out(i) = density_field_values(i, 2) * coefficient_number_one + coefficient_number_two &
      + coefficient_number_three + coefficient_number_four + coefficient_number_five
  end do
end subroutine blend
"""


@pytest.mark.slow
@needs_f2py
def test_unallocated_module_array_and_a_long_use_list(tmp_path: Path) -> None:
    # the wrapper's USE line names more than a standard free-form line holds (f2py compiles
    # at that length), and the module array is ALLOCATABLE and not allocated before the call
    paths = write(tmp_path, {"fields.f90": FIELDS})
    ks = kernels(paths, tmp_path)
    build = runners.build_reference(paths, [ks["blend"]], tmp_path, cache_dir=tmp_path / "cache")
    assert build.ok and not build.failed, build.reason + build.log
    given, r = run(build, ks["blend"], {"n": 6}, tmp_path)
    assert r.ok, r.reason + r.log
    c = [given[f"coefficient_number_{w}"] for w in ("one", "two", "three", "four", "five")]
    want = given["density_field_values"][:, 1] * c[0] + sum(c[1:])
    np.testing.assert_allclose(r.outputs["out"], want, rtol=1e-14)


OMP = """
subroutine par_scale(x, n)
  implicit none
  integer, intent(in) :: n
  real(8), intent(inout) :: x(n)
  integer :: i
!$omp parallel do
  do i = 1, n
    x(i) = 2.0d0 * x(i)
  end do
!$omp end parallel do
end subroutine par_scale
"""


@pytest.mark.slow
@needs_f2py
def test_openmp_flag_links_its_runtime(tmp_path: Path) -> None:
    # build.flags: [-fopenmp] without -fopenmp under libraries: GOMP_* must still resolve
    paths = write(tmp_path, {"omp.f90": OMP})
    ks = kernels(paths, tmp_path)
    build = runners.build_reference(paths, [ks["par_scale"]], tmp_path, cache_dir=tmp_path / "cache",
                                    fflags=["-fopenmp"])
    assert build.ok and not build.failed, build.reason + build.log
    given, r = run(build, ks["par_scale"], {"n": 7}, tmp_path)
    assert r.ok, r.reason + r.log
    np.testing.assert_allclose(r.outputs["x"], 2 * given["x"], rtol=1e-15)


SHAPES = """
module shapes
  implicit none
contains
  subroutine shift_copy(a, b)
    real(8), intent(in) :: a(0:, :)
    real(8), intent(out) :: b(:, :)
    integer :: i, j
    do j = 1, size(b, 2)
      do i = 1, size(b, 1)
        b(i, j) = a(i - 1, j) + 10 * i
      end do
    end do
  end subroutine shift_copy
end module shapes

module grid
  implicit none
  real(8), allocatable :: u(:, :)
end module grid

subroutine bump(n, m)
  use grid, only: u
  implicit none
  integer, intent(in) :: n, m
  integer :: i, j
  do j = 1, m
    do i = 1, n
      u(i, j) = u(i, j) + 1.0d0
    end do
  end do
end subroutine bump
"""


@pytest.mark.slow
@needs_f2py
def test_assumed_shape_arrays_with_their_extents(tmp_path: Path) -> None:
    # the extents are the wrapper's arguments (bound "extent:<array>:<k>"), the arrays reach
    # the routine with their rank, a(0:, :) keeps its lower bound, and a module's ALLOCATABLE
    # that nothing in the sources allocates is allocated at the extents the case gives
    paths = write(tmp_path, {"shapes.f90": SHAPES})
    ks = kernels(paths, tmp_path)
    assert {p.binding for p in ks["shift_copy"].params} >= {"extent:a:1", "extent:b:2"}
    build = runners.build_reference(paths, [ks["shift_copy"], ks["bump"]], tmp_path, cache_dir=tmp_path / "cache")
    assert build.ok and not build.failed, build.reason + build.log
    given, r = run(build, ks["shift_copy"], {"a_size1": 5, "a_size2": 3, "b_size1": 4, "b_size2": 3}, tmp_path)
    assert r.ok, r.reason + r.log
    want = given["a"][:4, :] + 10 * np.arange(1, 5)[:, None]
    np.testing.assert_allclose(r.outputs["b"], want, rtol=1e-15)
    given, r = run(build, ks["bump"], {"n": 3, "m": 2, "u_size1": 4, "u_size2": 2}, tmp_path)
    assert r.ok, r.reason + r.log
    np.testing.assert_allclose(r.outputs["u"][:3], given["u"][:3] + 1, rtol=1e-15)
    np.testing.assert_array_equal(r.outputs["u"][3], given["u"][3])  # row 4: not the routine's


ZERO_BASED = """module grid
  implicit none
  integer, parameter :: nx = 4
  real(8), allocatable :: u(:, :)
contains
  subroutine setup()
    allocate(u(0:nx, 2))
  end subroutine
  subroutine edge(s)
    real(8) :: s
    integer :: i
    do i = 1, nx
      u(i, 1) = u(i - 1, 2) + s
    end do
  end subroutine
end module
"""


@pytest.mark.slow
@needs_f2py
def test_module_allocatable_gets_the_bounds_of_its_allocate(tmp_path: Path) -> None:
    # u(0:nx, 2): the wrapper allocates it with lower bound 0 (an assignment would make it 1 and
    # shift every element the routine reads)
    paths = write(tmp_path, {"grid.f90": ZERO_BASED})
    ks = kernels(paths, tmp_path)
    u = ks["edge"].param("u")
    assert isinstance(u, ir.Array) and u.allocatable and u.lower[0] == ir.Const(0, ir.DType.I32)
    build = runners.build_reference(paths, [ks["edge"]], tmp_path, cache_dir=tmp_path / "cache")
    assert build.ok and not build.failed, build.reason + build.log
    given, r = run(build, ks["edge"], {}, tmp_path)
    assert r.ok, r.reason + r.log
    s = float(given["s"])
    want = given["u"].copy()
    want[1:, 0] = given["u"][:-1, 1] + s
    np.testing.assert_allclose(r.outputs["u"], want, rtol=1e-15)
