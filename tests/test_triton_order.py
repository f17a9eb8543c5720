"""A serial device segment launched after the parallel nest that follows it (``targets.triton_order``),
and kept in place where the move would change what either reads."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from targets.base import get_renderer  # noqa: E402
from tests.kt_modules import triton_module  # noqa: E402
from translate import ir  # noqa: E402
from translate.analysis import analyze  # noqa: E402

HEAD = "subroutine f(n, x, y, a, s)\n  integer n, i\n  real(8) x(n), y(n), a, s\n"


def _kernel(body: str) -> ir.Kernel:
    parse_source = pytest.importorskip("parsers.fortran").parse_source
    return analyze(parse_source(HEAD + body + "end\n", "f.f90", fixed_form=False).kernels[0])


def _launcher(kernel: ir.Kernel) -> str:
    src = get_renderer("triton").render(kernel).source
    return src[src.index("def f("):]


def test_a_start_value_is_launched_after_the_scan() -> None:
    """IDAMAX's ``DMAX = |DX(1)|``: launched after the pair kernel (which reads neither it nor an
    array it writes) and before the programs' pairs are joined; in the branch without the pair
    kernel too, where it is read."""
    from tests.test_argreduce import _kernel as scans

    src = get_renderer("triton").render(scans()).source
    launcher = src[src.index("def scans("):]
    serial = "scans_serial1[(1,)](dx, float(dmax), dmax_out)  # scans_serial1, held past scans_loop1"
    alloc = launcher.index("dmax_out = torch.empty(1")
    pair = launcher.index("scans_loop1[grid](")
    assert "# scans_serial1: launched after scans_loop1, which does not need it" in launcher
    assert launcher.count(serial) == 2 and alloc < pair < launcher.index(serial) < launcher.index("kt_at = ")
    assert launcher.index("else:", pair) < launcher.rindex(serial) < launcher.index("scans_loop2[grid](")


def test_a_serial_read_of_an_array_the_nest_writes_stays_first(tmp_path: Path) -> None:
    """``S = X(1) * A`` then ``X(I) = 2 * X(I)``: launched after the nest, the serial code would read
    the doubled X(1). Run in the interpreter: S is the value before."""
    kernel = _kernel("  s = x(1) * a\n  do i = 1, n\n    x(i) = 2 * x(i)\n  end do\n")
    launcher = _launcher(kernel)
    assert "launched after" not in launcher
    assert launcher.index("f_serial1[(1,)](") < launcher.index("f_loop1[grid](")
    mod = triton_module(get_renderer("triton").render(kernel), tmp_path, "kt_order_war")
    x = torch.arange(1.0, 6.0, dtype=torch.float64)
    got = mod.f(5, x, torch.zeros(5, dtype=torch.float64), 3.0, 0.0)
    assert got["s"] == 3.0 and x.tolist() == [2.0, 4.0, 6.0, 8.0, 10.0]


def test_a_serial_argument_written_before_the_nest_stays_first(tmp_path: Path) -> None:
    """``S = X(1) * A`` then ``A = 3`` on the host, then a nest over Y: moved, the launch would pass
    the new A."""
    kernel = _kernel("  s = x(1) * a\n  a = 3\n  do i = 1, n\n    y(i) = a * x(i)\n  end do\n")
    launcher = _launcher(kernel)
    assert "launched after" not in launcher
    mod = triton_module(get_renderer("triton").render(kernel), tmp_path, "kt_order_arg")
    x, y = torch.full((4,), 2.0, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)
    got = mod.f(4, x, y, 5.0, 0.0)
    assert got["s"] == 10.0 and np.allclose(y.numpy(), 6.0)


def test_an_independent_serial_segment_moves_and_still_computes(tmp_path: Path) -> None:
    """``S = X(1) * A`` then a nest writing only Y: the serial launch follows the nest's and S
    still comes back right."""
    kernel = _kernel("  s = x(1) * a\n  do i = 1, n\n    y(i) = 2 * x(i)\n  end do\n")
    launcher = _launcher(kernel)
    assert "# f_serial1: launched after f_loop1, which does not need it" in launcher
    assert launcher.index("f_loop1[grid](") < launcher.index("f_serial1[(1,)](")
    mod = triton_module(get_renderer("triton").render(kernel), tmp_path, "kt_order_free")
    x, y = torch.arange(1.0, 5.0, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)
    got = mod.f(4, x, y, 5.0, 0.0)
    assert got["s"] == 5.0 and y.tolist() == [2.0, 4.0, 6.0, 8.0]
    assert mod.f(0, x, y, 7.0, 0.0)["s"] == 7.0  # no iteration: launched in the other branch
