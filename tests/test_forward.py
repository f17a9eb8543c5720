"""translate.forward: element values carried in scalars along long runs of assignments (the
Kokkos target's stand-in for __restrict__). Each case runs the rewritten IR against the original
(the order audit's interpreter) on data where the hazards bite: a store to an element another
index may name, an index whose scalar changes, a run too short to touch."""

from __future__ import annotations

import numpy as np

from targets.base import get_renderer
from tests.test_fortran_f90 import analyze, ir, kernel
from translate.forward import MIN_RUN, forwarded
from validation.order_audit import _execute

# a block solve's shape: a small work array read and written again and again, an element whose
# index (p, a scalar) may be any of them, and p changed in the middle of the run
BLOCK = """subroutine block(n, p, a, b)
  implicit none
  integer :: n, p, i
  real(8) :: a(4, n), b(n)
!$omp parallel do private(p)
  do i = 1, n
    a(1, i) = a(1, i) * 2d0
    a(2, i) = a(2, i) + a(1, i)
    a(3, i) = a(3, i) - a(2, i) * a(1, i)
    a(p, i) = a(p, i) + 1d0
    p = 5 - p
    b(i) = a(p, i)
    a(4, i) = a(1, i) + a(2, i) + a(3, i)
    b(i) = b(i) + a(4, i) * a(1, i)
    a(p, i) = a(p, i) * 3d0
    a(1, i) = a(1, i) + a(p, i)
    b(i) = b(i) + a(1, i) + a(4, i)
  end do
end subroutine block
"""


def _loads(k: ir.Kernel, array: str) -> int:
    return sum(1 for s in k.body for n in ir.walk(s) if isinstance(n, ir.Load) and n.array == array)


def _run(k: ir.Kernel, p: int, a: np.ndarray, b: np.ndarray) -> dict:
    out, _ = _execute(k, {"n": a.shape[1], "p": p}, {"a": a.copy(order="F"), "b": b.copy(order="F")},
                      reverse=False)
    return out


def test_a_long_run_keeps_element_values_in_scalars_and_computes_the_same() -> None:
    k = analyze(kernel(BLOCK, "block"))
    f = forwarded(k)
    assert _loads(f, "a") < _loads(k, "a")  # the loads of a after its stores are scalars now
    assert any(d.name.startswith("a_val") for d in f.locals)
    rng = np.random.default_rng(5)
    a, b = np.asfortranarray(rng.standard_normal((4, 6))), np.zeros(6)
    for p in (1, 2, 3, 4):  # p names each element in turn: the stores through it must be seen
        want, got = _run(k, p, a, b), _run(f, p, a, b)
        np.testing.assert_array_equal(got["a"], want["a"])
        np.testing.assert_array_equal(got["b"], want["b"])


def test_a_short_run_and_code_outside_parallel_loops_are_left_alone() -> None:
    short = analyze(kernel(BLOCK.replace("    a(1, i) = a(1, i) + a(p, i)\n", "").replace(
        "    b(i) = b(i) + a(1, i) + a(4, i)\n", "").replace("    b(i) = a(p, i)\n", "").replace(
        "    p = 5 - p\n", ""), "block"))
    assert sum(1 for n in ir.walk(short.body[0]) if isinstance(n, ir.Assign)) < MIN_RUN
    assert forwarded(short) == short
    serial = analyze(kernel(BLOCK.replace("!$omp parallel do private(p)\n", "").replace(
        "    p = 5 - p\n", "    p = 5 - p + b(i - 1) * 0d0\n"), "block"))
    assert all(lp.kind is ir.LoopKind.SERIAL for lp in serial.body if isinstance(lp, ir.Loop))
    assert forwarded(serial) == serial


def test_the_kokkos_translation_carries_the_values_and_cuda_keeps_its_restrict_pointers() -> None:
    k = analyze(kernel(BLOCK, "block"))
    assert "a_val" in get_renderer("kokkos").render(k).source
    assert "a_val" not in get_renderer("cuda").render(k).source
