"""targets.planes: which 3-D nests are walked by planes, and which reads form register queues."""

from __future__ import annotations

from targets.planes import plane_walk, queues
from tests import kt_hand_kernels as hk
from translate import ir
from translate.schedule import DeviceNest, Schedule, device_segments, partition

F64 = ir.DType.F64


def nest(kernel: ir.Kernel) -> DeviceNest:
    (seg,) = [s for s in device_segments(partition(kernel)) if isinstance(s, DeviceNest)][:1]
    return seg


def u(i: ir.Expr, j: ir.Expr, k: ir.Expr) -> ir.Load:
    return hk.ld("u", i, j, k)


def with_body(seg: DeviceNest, *body: ir.Stmt, private: tuple[str, ...] = ()) -> DeviceNest:
    return DeviceNest(seg.name, seg.loops, body, (), seg.scalars_in, seg.arrays, private, seg.line)


def test_which_nests_walk_planes() -> None:
    lap = hk.lap3d()
    seg = nest(lap)
    assert plane_walk(seg, lap, Schedule(), "cuda") == (4, 4)
    assert plane_walk(seg, lap, Schedule(), "triton") == (2, 4)  # its queue: runs of 4 planes
    assert plane_walk(seg, lap, Schedule(queues=-1), "triton") == (2, 8)  # every plane loaded: runs of 8
    assert plane_walk(seg, lap, Schedule(march=8), "triton") == (2, 8)
    i, j, k = hk.v("i"), hk.v("j"), hk.v("k")
    copy3 = with_body(seg, hk.asg(hk.ld("lu", i, j, k), hk.ld("u", i, j, k)))
    assert plane_walk(copy3, lap, Schedule(), "triton") == (2, 8)  # no queue: runs of 8 planes
    assert plane_walk(seg, lap, Schedule(block_rows=8, march=3), "cuda") == (8, 3)
    assert plane_walk(seg, lap, Schedule(march=1), "cuda") is None  # a point per thread
    assert plane_walk(seg, lap, Schedule(), "kokkos") is None
    stencil = hk.stencil()
    # a 2-D stencil (its reads a(i+1, j..j+2) form a register queue) walks runs of 8 rows on CUDA
    assert plane_walk(nest(stencil), stencil, Schedule(), "cuda") == (1, 8)
    assert plane_walk(nest(stencil), stencil, Schedule(march=1), "cuda") is None
    copy = with_body(nest(stencil), hk.asg(hk.ld("b", hk.v("i"), hk.v("j")), hk.ld("a", hk.v("i"), hk.v("j"))))
    assert plane_walk(copy, stencil, Schedule(), "cuda") is None  # no queue: a point per thread
    assert plane_walk(nest(stencil), stencil, Schedule(block_rows=8, march=8), "cuda") == (1, 8)  # runs of rows
    assert plane_walk(nest(stencil), stencil, Schedule(march=8), "triton") is None


def test_queue_of_the_laplacian() -> None:
    (q,) = queues(nest(hk.lap3d()), "k")
    i, j, k = hk.v("i"), hk.v("j"), hk.v("k")
    p = hk.b("add", i, hk.c(1)), hk.b("add", j, hk.c(1))
    assert q.array == "u" and q.first == 0 and len(q.slots) == 3
    assert q.slots[0] == u(*p, k) and q.slots[2] == u(*p, hk.b("add", k, hk.c(2)))
    assert q.names(0) == ["kt_u_k0", "kt_u_kp1", "kt_u_kp2"]


def test_reads_that_cannot_be_queued() -> None:
    """Written arrays, reads under a SELECT branch, subscripts with a per-iteration scalar or
    a load, and single planes are left as loads."""
    seg = nest(hk.lap3d())
    i, j, k, t = hk.v("i"), hk.v("j"), hk.v("k"), hk.v("t")
    k1 = hk.b("add", k, hk.c(1))
    out = hk.ld("lu", i, j, k)
    two = hk.b("add", u(i, j, k), u(i, j, k1))
    assert queues(with_body(seg, hk.asg(out, two)), "k")  # the base case queues
    assert not queues(with_body(seg, hk.asg(out, two), hk.asg(u(i, j, k), hk.c(0.0))), "k")  # u written
    sel = ir.Select(hk.b("lt", k, hk.v("nz"), ir.DType.BOOL), u(i, j, k), u(i, j, k1), F64)
    assert not queues(with_body(seg, hk.asg(out, sel)), "k")
    via = hk.b("add", u(t, j, k), u(t, j, k1))
    assert not queues(with_body(seg, hk.asg(t, i), hk.asg(out, via), private=("t",)), "k")
    loaded = hk.ld("idx", i, dtype=ir.DType.I32)
    assert not queues(with_body(seg, hk.asg(out, hk.b("add", u(loaded, j, k), u(loaded, j, k1)))), "k")
    assert not queues(with_body(seg, hk.asg(out, hk.b("add", u(i, j, k), u(hk.b("add", i, hk.c(1)), j, k1)))), "k")
