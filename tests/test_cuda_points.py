"""targets.cuda_points: 1-D CUDA nests running several iterations per thread, a block apart,
with the loads each iteration makes before it writes issued first."""

from __future__ import annotations

from targets.base import get_renderer
from targets.cuda_points import hoisted_loads, with_registers
from tests import kt_hand_kernels as hk
from translate import ir
from translate.schedule import DeviceNest, Schedule

F64 = ir.DType.F64
i, n = hk.v("i"), hk.v("n")


def seg(*body: ir.Stmt, private: tuple[str, ...] = ()) -> DeviceNest:
    return DeviceNest("k_loop1", (hk.loop("i", hk.c(0), n, list(body)),), body, (), ("n", "s"), ("x", "y", "idx"),
                      private, 1)


def test_loads_before_the_first_write_of_their_array_are_hoisted() -> None:
    swap = seg(hk.asg(hk.v("t", F64), hk.ld("x", i)), hk.asg(hk.ld("x", i), hk.ld("y", i)),
               hk.asg(hk.ld("y", i), hk.v("t", F64)), private=("t",))
    assert hoisted_loads(swap) == [hk.ld("x", i), hk.ld("y", i)]
    # x(i) read again after x(i) is written: the second read is not the hoisted value
    again = seg(hk.asg(hk.ld("x", i), hk.b("add", hk.ld("x", i), hk.ld("y", i))),
                hk.asg(hk.ld("y", i), hk.ld("x", i)))
    assert hoisted_loads(again) == [hk.ld("x", i), hk.ld("y", i)]
    regs = {hk.ld("x", i): hk.v("x_0", F64), hk.ld("y", i): hk.v("y_0", F64)}
    first, second = with_registers(again.body, regs)
    assert first == hk.asg(hk.ld("x", i), hk.b("add", hk.v("x_0", F64), hk.v("y_0", F64)))  # the store stays a store
    assert second == hk.asg(hk.ld("y", i), hk.ld("x", i))  # x was written: read from memory


def test_loads_that_cannot_move_stay() -> None:
    gathered = seg(hk.asg(hk.ld("y", i), hk.ld("x", hk.ld("idx", i, dtype=ir.DType.I32))))
    assert hoisted_loads(gathered) == [hk.ld("idx", i, dtype=ir.DType.I32)]  # a loaded subscript: not x
    private = seg(hk.asg(hk.v("p"), hk.b("add", i, hk.c(1))), hk.asg(hk.ld("y", i), hk.ld("x", hk.v("p"))),
                  private=("p",))
    assert hoisted_loads(private) == []  # a subscript of a private scalar
    guarded = seg(ir.If(hk.b("gt", n, hk.c(0)), (hk.asg(hk.ld("y", i), hk.c(0.0)),)),
                  hk.asg(hk.ld("y", i), hk.ld("x", i)))
    assert hoisted_loads(guarded) == []  # only the leading plain assignments


def test_cuda_1d_nests_run_two_iterations_per_thread_by_default() -> None:
    src = get_renderer("cuda").render(hk.daxpy()).source
    assert "const int i_first = blockIdx.x * (2 * blockDim.x) + threadIdx.x;" in src
    assert "if (i_first + 1LL * blockDim.x < i_trip) {" in src
    assert "const double dy_1 = dy[i_1];" in src and "const double dx_1 = dx[i_1];" in src
    assert "dy[i] = dy_1 + da * dx_1;" in src
    assert "for (int i = i_first; i < i_trip; i += blockDim.x) {" in src  # the rest, bounds checked
    assert "kt_grid((i_trip + 1) / 2, 256, INT_MAX)" in src
    four = Schedule(march=4)
    assert "if (i_first + 3LL * blockDim.x < i_trip) {" in get_renderer("cuda", four).render(hk.daxpy(), four).source
    one = Schedule(march=1)
    flat = get_renderer("cuda", one).render(hk.daxpy(), one).source
    assert "i_first" not in flat and "kt_grid(i_trip, 256, INT_MAX)" in flat
    assert "blockDim.x) + threadIdx.x" not in get_renderer("cuda").render(hk.ddot()).source  # reductions: their own

