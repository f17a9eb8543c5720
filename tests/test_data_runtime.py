"""targets.data_runtime: the present table of a migrated program, driven from C++ as the
generated shims and the Fortran update calls drive it, built with the Kokkos target's CMake."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from targets.base import Rendered
from targets.data_runtime import FORTRAN, KOKKOS
from tests.kt_apart import call_apart
from tests.kt_builds import project_library
from validation import toolchains
from validation.program import transfers

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(toolchains.find_kokkos() is None or shutil.which("cmake") is None,
                                 reason="needs Kokkos and cmake")]

# each failed expectation returns its own number, so the test names the step that went wrong
SCENARIO = """\
#include <Kokkos_Core.hpp>
#include <cstddef>

extern "C" void* kt_present(const void* host, std::size_t bytes, int writes);
extern "C" void kt_data_begin();
extern "C" void kt_data_end();
extern "C" void kt_data_end_unread();
extern "C" void kt_data_suspend();
extern "C" void kt_data_resume();
extern "C" void kt_update_host(const void* host);
extern "C" void kt_update_host_range(const void* host, std::size_t bytes);
extern "C" void kt_update_device_range(const void* host, std::size_t bytes);
extern "C" void kt_update_device_part(const void* host, std::size_t bytes);

extern "C" int scenario() {
    Kokkos::initialize();
    int failed = 0;
    {
        double a[4] = {1, 2, 3, 4};
        if (kt_present(a, sizeof a, 0) != nullptr) failed = 1;  // no region open: the shim copies itself
        kt_data_begin();
        kt_data_begin();  // a region opened inside another (a driver routine's own loop)
        double* d = static_cast<double*>(kt_present(a, sizeof a, 1));
        if (!failed && (d == nullptr || d == a || d[3] != 4)) failed = 2;
        d[0] = 10;  // a translation writes the device copy
        if (!failed && a[0] != 1) failed = 3;  // the host copy is not touched until asked
        kt_update_host(a + 2);  // an element inside the array finds the array's entry
        if (!failed && a[0] != 10) failed = 4;
        d[1] = 20;
        kt_present(a, sizeof a, 1);
        kt_data_suspend();  // host code the placement could not follow: everything written back
        if (!failed && a[1] != 20) failed = 5;
        if (!failed && kt_present(a, sizeof a, 0) != nullptr) failed = 6;  // and nothing is present
        a[2] = 30;  // that host code writes
        kt_data_resume();
        double* e = static_cast<double*>(kt_present(a, sizeof a, 1));
        if (!failed && (e == nullptr || e[2] != 30)) failed = 7;  // placed again from the host
        e[3] = 40;
        kt_data_end();  // the inner region's end: the outer one still holds the data
        if (!failed && a[3] != 4) failed = 8;
        kt_data_end();
        if (!failed && a[3] != 40) failed = 9;
        kt_data_end();  // an end without a region open does nothing
    }
    {   // parts of one array passed to translations one by one: an update of its range reaches each
        double b[6] = {0, 0, 0, 0, 0, 0};
        kt_data_begin();
        double* lo = static_cast<double*>(kt_present(b, 3 * sizeof(double), 1));
        double* hi = static_cast<double*>(kt_present(b + 3, 3 * sizeof(double), 1));
        lo[0] = 1;
        hi[0] = 2;
        kt_update_host(b);  // without a size: the entry holding b's start only
        if (!failed && (b[0] != 1 || b[3] != 0)) failed = 10;
        kt_update_host_range(b, sizeof b);
        if (!failed && b[3] != 2) failed = 11;
        b[4] = 5;  // host code writes the second part
        kt_update_device_range(b, sizeof b);
        if (!failed && hi[1] != 5) failed = 12;
        kt_data_end();
    }
    {   // one element set on the host: only it goes to the device, whose other values are newer
        double c[4] = {1, 2, 3, 4};
        kt_data_begin();
        double* d = static_cast<double*>(kt_present(c, sizeof c, 1));
        d[0] = 10;
        d[3] = 40;  // a translation wrote the device copy; the host's is stale
        c[2] = 33;  // the host sets one element, reading nothing of c
        kt_update_device_part(c + 2, sizeof(double));
        if (!failed && (d[2] != 33 || d[0] != 10 || d[3] != 40)) failed = 13;
        kt_data_end();
        if (!failed && (c[0] != 10 || c[2] != 33 || c[3] != 40)) failed = 14;
        // parts of one array in two entries and the element's bytes across both: the device's
        // newer values come to the host first, the element set is kept, then both are placed
        double e[4] = {0, 0, 0, 0};
        kt_data_begin();
        double* lo = static_cast<double*>(kt_present(e, 2 * sizeof(double), 1));
        double* hi = static_cast<double*>(kt_present(e + 2, 2 * sizeof(double), 1));
        lo[0] = 1;
        hi[1] = 4;
        e[1] = 2;
        e[2] = 3;
        kt_update_device_part(e + 1, 2 * sizeof(double));
        if (!failed && (lo[0] != 1 || lo[1] != 2 || hi[0] != 3 || hi[1] != 4)) failed = 15;
        kt_data_end();
    }
    {   // a region the program reads nothing of afterwards: its end copies nothing back
        double f[2] = {1, 2};
        kt_data_begin();
        double* d = static_cast<double*>(kt_present(f, sizeof f, 1));
        d[0] = 10;
        kt_data_end_unread();
        if (!failed && f[0] != 1) failed = 16;
        if (!failed && kt_present(f, sizeof f, 0) != nullptr) failed = 17;  // the region is over
    }
    Kokkos::finalize();
    return failed;
}
"""


def test_regions_nest_suspend_and_write_back_as_the_placement_expects(tmp_path: Path) -> None:
    rendered = [Rendered({"kokkos/kt_data_kokkos.cpp": KOKKOS}, "kokkos/kt_data_kokkos.cpp", "", "kokkos"),
                Rendered({"kokkos/scenario.cpp": SCENARIO}, "kokkos/scenario.cpp", "scenario", "kokkos")]
    assert call_apart(project_library("kokkos", rendered, tmp_path, "kt_runtime"), "scenario").value == 0


USES = """\
subroutine host(n, a, b)
  use kt_data
  implicit none
  integer, intent(in) :: n
  double precision, intent(inout) :: a(n, *)
  double precision, allocatable, intent(inout) :: b(:, :, :)
  call kt_update_host(a)
  call kt_update_host_range(b, size(b, kind=c_size_t) * storage_size(b) / 8)
  b(1, 1, 1) = a(1, 1)
  call kt_update_device_range(b, size(b, kind=c_size_t) * storage_size(b) / 8)
  a(2, 1) = 1d0
  call kt_update_device_part(a(2, 1), storage_size(a, kind=c_size_t) / 8)
  call kt_update_device(a)
end subroutine host
"""


@pytest.mark.skipif(shutil.which("gfortran") is None, reason="needs gfortran")
def test_the_fortran_interface_takes_arrays_of_any_rank_and_the_sizes_the_placement_writes(tmp_path: Path) -> None:
    (tmp_path / "kt_data.f90").write_text(FORTRAN)
    (tmp_path / "host.f90").write_text(USES)
    done = subprocess.run(["gfortran", "-fsyntax-only", "kt_data.f90", "host.f90"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


OUTSIDE = """\
#include <Kokkos_Core.hpp>

extern "C" void kt_data_begin();
extern "C" void kt_data_end();
extern "C" void kt_call_begin();
extern "C" void kt_call_end(const char* routine);

extern "C" int calls() {
    Kokkos::initialize();
    for (int k = 0; k < 3; ++k) {  // a set-up routine called outside every region
        kt_call_begin();
        kt_call_end("exact_rhs");
    }
    kt_data_begin();
    kt_call_begin();
    kt_call_end("adi");  // inside the region: counted in the region's own line
    kt_data_end();
    kt_call_begin();
    kt_call_end("error_norm");
    Kokkos::finalize();
    return 0;
}
"""


def _logged(tmp_path: Path, source: str, symbol: str) -> Path:
    """``symbol`` of ``source`` (built with the runtime) run in its own process with a transfer log,
    which its region ends and its exit write: the log's path."""
    rendered = [Rendered({"kokkos/kt_data_kokkos.cpp": KOKKOS}, "kokkos/kt_data_kokkos.cpp", "", "kokkos"),
                Rendered({f"kokkos/{symbol}.cpp": source}, f"kokkos/{symbol}.cpp", symbol, "kokkos")]
    lib = project_library("kokkos", rendered, tmp_path, "kt_runtime")
    log = tmp_path / "transfers.jsonl"
    done = subprocess.run([sys.executable, "-c", f"import ctypes; assert ctypes.CDLL({str(lib)!r}).{symbol}() == 0"],
                          env={**os.environ, "KT_TRANSFER_LOG": str(log)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return log


def test_calls_are_logged_by_routine_outside_and_inside_regions_at_exit(tmp_path: Path) -> None:
    moved = transfers(_logged(tmp_path, OUTSIDE, "calls"))
    assert moved["regions"] == 1 and moved["calls"] == 1 and moved["inside"]["adi"]["calls"] == 1
    assert set(moved["outside"]) == {"exact_rhs", "error_norm"}
    assert moved["outside"]["exact_rhs"]["calls"] == 3 and moved["outside_calls"] == 4
    assert moved["outside_kernel_seconds"] >= moved["outside"]["exact_rhs"]["kernel_seconds"] >= 0.0


CREATE = """\
#include <Kokkos_Core.hpp>
#include <cstddef>

extern "C" void* kt_present(const void* host, std::size_t bytes, int writes);
extern "C" void kt_data_begin();
extern "C" void kt_data_end();

extern "C" int create() {
    Kokkos::initialize();
    int failed = 0;
    double a[4] = {1, 2, 3, 4};
    kt_data_begin();  // the first call sets every element of a before reading any: nothing copied in
    double* d = static_cast<double*>(kt_present(a, sizeof a, 2));
    for (int k = 0; k < 4; ++k) d[k] = 10 * k;
    kt_data_end();
    if (a[3] != 30) failed = 1;  // and all of it comes back
    kt_data_begin();  // a call that reads it: copied in
    kt_present(a, sizeof a, 1);
    kt_data_end();
    Kokkos::finalize();
    return failed;
}
"""


def test_an_array_a_call_sets_whole_is_placed_without_a_copy_in(tmp_path: Path) -> None:
    log = _logged(tmp_path, CREATE, "create")
    regions = [json.loads(line) for line in log.read_text().splitlines() if '"region"' in line]
    assert [(r["h2d_bytes"], r["d2h_bytes"]) for r in regions] == [(0, 32), (32, 32)]
