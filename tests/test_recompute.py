"""translate.recompute (``Schedule.recompute``): a scratch row filled in one inner loop and read at
neighbouring elements in the next is recomputed where it is read (NPB MG's resid and rprj3
shapes), and left alone where a recomputed value could differ from the stored one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from targets.base import get_renderer
from tests.kt_apart import call_apart
from tests.kt_builds import kokkos_library
from tests.test_rows_scratch import NEIGHBOURS, RESTRICT, SMOOTH, _restricted, _want
from translate import ir
from translate.analysis import analyze
from translate.partition import DeviceNest, device_segments, partition
from translate.schedule import Schedule, apply_schedule

pytest.importorskip("fparser")

from parsers.fortran import parse_source  # noqa: E402

HAVE_KOKKOS = Path("/usr/include/trilinos/Kokkos_Core.hpp").exists()
RECOMPUTE = Schedule(recompute=True)


def _kernel(src: str) -> ir.Kernel:
    (raw,) = parse_source(src, "k.f90", fixed_form=False).kernels
    assert isinstance(raw, ir.Kernel), getattr(raw, "reason", raw)
    return analyze(raw)


def _scratch(k: ir.Kernel) -> set[str]:
    return {d.name for d in k.locals if isinstance(d, ir.Array)}


def test_the_residual_becomes_one_stencil_nest_without_scratch(tmp_path: Path) -> None:
    k = _kernel(SMOOTH.replace("{second}", NEIGHBOURS))
    done = apply_schedule(k, RECOMPUTE)
    assert _scratch(k) == {"u1", "u2"} and not _scratch(done)
    (nest,) = [s for s in device_segments(partition(done)) if isinstance(s, DeviceNest)]
    assert [lp.var for lp in nest.loops] == ["i3", "i2", "i1"]
    loads = [n for s in nest.body for n in ir.walk(s) if isinstance(n, ir.Load)]
    # the store and r, then u1 (two loads) read twice and u2 (two) once
    assert {n.array for n in loads} == {"u", "r"} and len(loads) == 2 + 3 * 2
    if not HAVE_KOKKOS:
        pytest.skip("Kokkos headers not found")
    rng = np.random.default_rng(3)
    shape = (37, 6, 5)
    u = np.asfortranarray(rng.standard_normal(shape))
    r0 = np.asfortranarray(rng.standard_normal(shape))
    got = r0.copy(order="F")
    lib = kokkos_library(get_renderer("kokkos").render(k, RECOMPUTE), tmp_path / "kokkos")
    call_apart(lib, "kt_smooth", *shape, u, got)
    np.testing.assert_allclose(got, _want(u, r0), rtol=1e-13)


def test_a_restriction_by_index_temporaries_reads_the_element_two_apart(tmp_path: Path) -> None:
    k = _kernel(RESTRICT)
    done = apply_schedule(k, RECOMPUTE)
    assert _scratch(k) == {"x1", "y1"} and not _scratch(done)
    if not HAVE_KOKKOS:
        pytest.skip("Kokkos headers not found")
    rng = np.random.default_rng(4)
    r = np.asfortranarray(rng.standard_normal((17, 9, 7)))
    s0 = np.asfortranarray(rng.standard_normal((9, 5, 4)))
    got = s0.copy(order="F")
    lib = kokkos_library(get_renderer("kokkos").render(k, RECOMPUTE), tmp_path / "kokkos")
    call_apart(lib, "kt_restrict", *r.shape, r, *s0.shape, got)
    np.testing.assert_allclose(got, _restricted(r, s0), rtol=1e-13)


@pytest.mark.parametrize("change, why", [
    # the second loop reads u1 past what the first set (the original reads an older value there)
    (("do i1 = 2, n1 - 1\n        r(", "do i1 = 2, n1\n        r("), "range"),
    # the first loop reads the array the nest writes: its value may change before the read
    (("u1(i1) = u(i1, i2 - 1, i3)", "u1(i1) = r(i1, i2 - 1, i3)"), "written"),
    # the scratch row is read again after the rows (its last row's values)
    (("  end do\nend subroutine smooth", "  end do\n  r(1, 1, 1) = u1(1)\nend subroutine smooth"), "used after"),
])
def test_a_scratch_row_whose_value_could_differ_stays(change: tuple[str, str], why: str) -> None:
    k = _kernel(SMOOTH.replace("{second}", NEIGHBOURS).replace(*change))
    assert _scratch(apply_schedule(k, RECOMPUTE)) == {"u1", "u2"}, why
