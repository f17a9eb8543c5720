"""translate.coverage: arrays a routine sets whole before reading any element, which a data
region then places on the device without copying them in (NPB MG's zero3 and zran3)."""

from __future__ import annotations

import pytest

from targets.base import get_renderer
from translate import ir
from translate.analysis import analyze
from translate.coverage import overwritten

pytest.importorskip("fparser")

from parsers.fortran import parse_source  # noqa: E402

FILL = """\
subroutine fill(n1, n2, z, w)
  integer :: n1, n2, i1, i2
  double precision :: z(n1, n2), w(n1, n2)
  {before}
  do i2 = 1, n2
    do i1 = 1, n1
      z(i1, i2) = {value}
    end do
  end do
  w(1, 1) = z(1, 1)
end subroutine fill
"""


def _whole(before: str = "", value: str = "0.0d0") -> frozenset[str]:
    src = FILL.replace("{before}", before).replace("{value}", value)
    (k,) = parse_source(src, "fill.f90", fixed_form=False).kernels
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    return overwritten(analyze(k))


def test_an_array_set_whole_before_any_read_needs_no_copy_in() -> None:
    assert _whole() == {"z"}
    k = analyze(parse_source(FILL.replace("{before}", "").replace("{value}", "0.0d0"), "fill.f90",
                             fixed_form=False).kernels[0])
    assert "kt_present(z, z_bytes, 2)" in get_renderer("cuda").render(k).source
    assert "kt_present(w, w_bytes, 1)" in get_renderer("cuda").render(k).source
    assert "kt_resident(z_v, z_h, 2)" in get_renderer("kokkos").render(k).source


@pytest.mark.parametrize("before, value, why", [
    ("", "z(i1, i2) + 1.0d0", "it reads the element it sets"),
    ("z(1, 1) = 5.0d0", "0.0d0", "an element is set (or read) before the nest"),
    ("if (n1 < 3) return", "0.0d0", "it may return before the nest"),
    ("n1 = n1 - 1", "0.0d0", "the extent changes before the nest"),
])
def test_an_array_not_set_whole_first_is_copied_in(before: str, value: str, why: str) -> None:
    assert _whole(before, value) == frozenset(), why


def test_a_nest_that_misses_elements_does_not_count() -> None:
    src = FILL.replace("{before}", "").replace("{value}", "0.0d0")
    for partial in (src.replace("do i1 = 1, n1", "do i1 = 2, n1"), src.replace("do i2 = 1, n2", "do i2 = 1, n2, 2"),
                    src.replace("z(i1, i2) =", "if (i1 > 1) z(i1, i2) =")):
        (k,) = parse_source(partial, "fill.f90", fixed_form=False).kernels
        assert isinstance(k, ir.Kernel)
        assert overwritten(analyze(k)) == frozenset(), partial
