"""Two things a migrated program's random-number fill and search need (NPB MG's zran3):

* an array element passed where the callee's array runs on past the element's dimension
  (``call vranlc(d1, x, a, z(2, i2, i3))``) when that is not known when translating: the
  callee is inlined and the translation checks, before the outermost loop around the call,
  that the callee stays inside the dimension, stopping with a message where it would not;
* serial code whose loops nest two deep over run-time extents runs on the host, its arrays
  copied there and the ones it writes copied back (``partition.DeviceSerial.on_host``), where
  one device thread would take far longer."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from targets.base import get_renderer
from tests.gpu import gpu_function
from tests.kt_apart import call_apart
from tests.kt_builds import kokkos_library
from translate import ir
from translate.analysis import analyze
from translate.partition import DeviceSerial, device_segments, partition

pytest.importorskip("fparser")

from parsers.fortran import parse_source  # noqa: E402

HAVE_KOKKOS = Path("/usr/include/trilinos/Kokkos_Core.hpp").exists()

ROWS = """\
subroutine fill(n, x, y)
  integer :: n, i
  double precision :: x, y(*)
  do i = 1, n
    x = x * 0.5d0 + 1.0d0
    y(i) = x
  end do
end subroutine fill
subroutine rows(n1, n2, d, z)
  integer :: n1, n2, d, j
  double precision :: z(n1, n2), x
!$omp parallel do private(x)
  do j = 1, n2
    {before}x = dble(j)
    call fill(d, x, z(2, j))
  end do
end subroutine rows
"""


def _kernels(src: str) -> dict[str, ir.Kernel | ir.Opaque]:
    return {k.name: k for k in parse_source(src, "rows.f90", fixed_form=False).kernels}


def _rows_want(n1: int, n2: int, d: int) -> np.ndarray:
    z = np.zeros((n1, n2), order="F")
    for j in range(n2):
        x = float(j + 1)
        for i in range(d):
            x = x * 0.5 + 1.0
            z[1 + i, j] = x
    return z


def test_an_element_argument_whose_room_is_known_at_run_time_is_checked_before_the_loop(tmp_path: Path) -> None:
    k = _kernels(ROWS.replace("{before}", ""))["rows"]
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    check, loop = k.body
    assert isinstance(check, ir.If) and isinstance(loop, ir.Loop)
    (stop,) = check.then
    assert isinstance(stop, ir.HostCall) and stop.kind == "stop"
    assert "FILL at rows.f90:15: y runs past dimension 1 of z" in str(stop.args[0].value)
    k = analyze(k)
    assert k.body[1].kind is ir.LoopKind.PARALLEL
    if not HAVE_KOKKOS:
        pytest.skip("Kokkos headers not found")
    lib = kokkos_library(get_renderer("kokkos").render(k), tmp_path / "kokkos")
    n1, n2 = 7, 5
    for d in (n1 - 1, 3):
        z = np.zeros((n1, n2), order="F")
        call_apart(lib, "kt_rows", n1, n2, d, z)
        np.testing.assert_array_equal(z, _rows_want(n1, n2, d))
    # one element more would write the next column's first element: the translation stops
    z = np.zeros((n1, n2), order="F")
    with pytest.raises(AssertionError, match="exit 1") as failed:
        call_apart(lib, "kt_rows", n1, n2, n1, z)
    assert "y runs past dimension 1 of z, which the translation assumes it does not" in str(failed.value)


def test_an_element_argument_whose_room_changes_in_the_loop_is_not_inlined() -> None:
    k = _kernels(ROWS.replace("{before}", "d = d + 1\n    "))["rows"]
    assert isinstance(k, ir.Opaque) and "y may run past dimension 1 of 'z'" in k.reason


SEARCH = """\
subroutine search(n1, n2, z, s)
  integer :: n1, n2, i, j
  double precision :: z(n1, n2), s(2)
  do j = 1, n2
    do i = 1, n1
      z(i, j) = 2.0d0 * z(i, j)
    end do
  end do
  do j = 1, n2
    do i = 1, n1
      if (z(i, j) > s(1)) then
        s(2) = s(1)
        s(1) = z(i, j)
      else if (z(i, j) > s(2)) then
        s(2) = z(i, j)
      end if
    end do
  end do
end subroutine search
"""


def _search_want(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    doubled = 2.0 * z
    top = np.sort(doubled.ravel(order="F"))[::-1]
    return doubled, np.array([max(top[0], 0.0), max(top[1], 0.0)])


def test_serial_loops_over_run_time_extents_run_on_the_host(tmp_path: Path) -> None:
    (raw,) = parse_source(SEARCH, "search.f90", fixed_form=False).kernels
    assert isinstance(raw, ir.Kernel), getattr(raw, "reason", raw)
    k = analyze(raw)
    (serial,) = [s for s in device_segments(partition(k)) if isinstance(s, DeviceSerial)]
    assert serial.on_host and serial.arrays == ("z", "s")
    cuda, kokkos = (get_renderer(t).render(k) for t in ("cuda", "kokkos"))
    assert "static void search_serial1(" in cuda.source and "<<<1, 1" not in cuda.source
    assert "kt_host_copy<double> z_host(" in cuda.source
    assert "cudaMemcpy(s, s_host.ptr," in cuda.source and "cudaMemcpy(z, z_host.ptr," not in cuda.source
    assert "create_mirror_view_and_copy(Kokkos::HostSpace(), z)" in kokkos.source
    assert "Kokkos::deep_copy(s, s_host);" in kokkos.source and "Kokkos::deep_copy(z, z_host)" not in kokkos.source
    rng = np.random.default_rng(5)
    z0 = np.asfortranarray(rng.standard_normal((9, 6)))
    want_z, want_s = _search_want(z0)
    if HAVE_KOKKOS:
        z, s = z0.copy(order="F"), np.zeros(2)
        call_apart(kokkos_library(kokkos, tmp_path / "kokkos"), "kt_search", 9, 6, z, s)
        np.testing.assert_array_equal(z, want_z)
        np.testing.assert_array_equal(s, want_s)
    fn = gpu_function(cuda, tmp_path / "cuda", "kt_search")  # built with nvcc here; run where a GPU is
    fn.argtypes = [ctypes.c_int] * 2 + [ctypes.c_void_p] * 2
    z, s = z0.copy(order="F"), np.zeros(2)
    fn(9, 6, z.ctypes.data, s.ctypes.data)
    np.testing.assert_array_equal(z, want_z)
    np.testing.assert_array_equal(s, want_s)


def test_serial_loops_of_constant_trip_counts_stay_on_the_device() -> None:
    src = SEARCH.replace("do j = 1, n2\n    do i = 1, n1\n      if", "do j = 1, 4\n    do i = 1, n1\n      if")
    (raw,) = parse_source(src, "search.f90", fixed_form=False).kernels
    assert isinstance(raw, ir.Kernel), getattr(raw, "reason", raw)
    (serial,) = [s for s in device_segments(partition(analyze(raw))) if isinstance(s, DeviceSerial)]
    assert not serial.on_host
    assert "<<<1, 1, 0, stream>>>" in get_renderer("cuda").render(analyze(raw)).source
