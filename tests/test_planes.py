"""targets.planes: which 3-D nests are walked by planes, and which reads form register queues."""

from __future__ import annotations

from dataclasses import replace

from targets.planes import plane_walk, queues, triton_walk, unroll_short
from tests import kt_hand_kernels as hk
from translate import ir
from translate.partition import DeviceNest, device_segments, partition
from translate.schedule import Schedule

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
    assert plane_walk(seg, lap, Schedule(register_queues=False), "triton") == (2, 8)  # every plane loaded: runs of 8
    assert plane_walk(seg, lap, Schedule(run_length=8), "triton") == (2, 8)
    i, j, k = hk.v("i"), hk.v("j"), hk.v("k")
    copy3 = with_body(seg, hk.asg(hk.ld("lu", i, j, k), hk.ld("u", i, j, k)))
    assert plane_walk(copy3, lap, Schedule(), "triton") == (2, 8)  # no queue: runs of 8 planes
    assert plane_walk(seg, lap, Schedule(block_rows=8, run_length=3), "cuda") == (8, 3)
    assert plane_walk(seg, lap, Schedule(run_length=1), "cuda") is None  # a point per thread
    assert plane_walk(seg, lap, Schedule(), "kokkos") is None
    stencil = hk.stencil()
    # a 2-D stencil (its reads a(i+1, j..j+2) form a register queue) walks runs of 8 rows on CUDA
    assert plane_walk(nest(stencil), stencil, Schedule(), "cuda") == (1, 8)
    assert plane_walk(nest(stencil), stencil, Schedule(run_length=1), "cuda") is None
    copy = with_body(nest(stencil), hk.asg(hk.ld("b", hk.v("i"), hk.v("j")), hk.ld("a", hk.v("i"), hk.v("j"))))
    assert plane_walk(copy, stencil, Schedule(), "cuda") is None  # no queue: a point per thread
    assert plane_walk(nest(stencil), stencil, Schedule(block_rows=8, run_length=8), "cuda") == (1, 8)  # runs of rows
    # Triton: a 2-D stencil keeps a point per lane unless runs of rows are asked for
    assert plane_walk(nest(stencil), stencil, Schedule(), "triton") is None
    assert plane_walk(nest(stencil), stencil, Schedule(run_length=8), "triton") == (1, 8)
    # with a reduction besides the queue Triton walks runs of 16 rows (a partial per program), CUDA does not
    summed = replace(nest(stencil), reductions=(ir.Reduction("s", "add", F64),))
    assert plane_walk(summed, stencil, Schedule(), "triton") == (1, 16)
    assert plane_walk(summed, stencil, Schedule(run_length=1), "triton") is None
    assert plane_walk(summed, stencil, Schedule(register_queues=False), "triton") is None  # no queue: flat
    assert plane_walk(replace(copy, reductions=summed.reductions), stencil, Schedule(), "triton") is None
    assert plane_walk(summed, stencil, Schedule(), "cuda") is None
    assert plane_walk(replace(seg, reductions=summed.reductions), lap, Schedule(), "triton") is None  # 3-D


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


def test_queue_through_scalar_lower_bounds() -> None:
    """Subscripts shifted by a scalar lower bound (``u(i, k)`` declared from ``lo - 2``: ``k - lo + 3``)
    queue by their constant; a different scalar shift is another position."""
    seg = nest(hk.lap3d())
    i, j, k, lo, hi = hk.v("i"), hk.v("j"), hk.v("k"), hk.v("nz"), hk.v("ny")
    at = lambda base, d: hk.b("add", hk.b("sub", hk.b("add", k, hk.c(d)), base), hk.c(3))  # noqa: E731
    out = hk.ld("lu", i, j, k)
    (q,) = queues(with_body(seg, hk.asg(out, hk.b("add", u(i, j, at(lo, 0)), u(i, j, at(lo, 2))))), "k")
    assert q.first == 3 and len(q.slots) == 3 and q.names(0) == ["kt_u_kp3", "kt_u_kp4", "kt_u_kp5"]
    assert q.slots[1] == u(i, j, hk.b("add", hk.b("sub", k, lo), hk.c(4)))  # the missing middle plane
    assert not queues(with_body(seg, hk.asg(out, hk.b("add", u(i, j, at(lo, 0)), u(i, j, at(hi, 1))))), "k")
    twice = hk.b("add", hk.b("mul", hk.c(2), k), hk.c(1))  # 2k + 1: not one plane per iteration
    assert not queues(with_body(seg, hk.asg(out, hk.b("add", u(i, j, twice), u(i, j, hk.b("mul", hk.c(2), k))))), "k")


def corners(seg: DeviceNest, span: int = 2, after: tuple[ir.Stmt, ...] = ()) -> DeviceNest:
    """field_summary's squared velocities: s = sum over kv in k..k+span-1, jv in i..i+1 of u(jv, j, kv)**2."""
    i, j, k, s = hk.v("i"), hk.v("j"), hk.v("k"), hk.v("s", F64)
    kv, jv = hk.v("kv"), hk.v("jv")
    add = hk.asg(s, hk.b("add", s, hk.b("mul", u(jv, j, kv), u(jv, j, kv))))
    inner = hk.loop("jv", i, hk.b("add", i, hk.c(2)), [add])
    outer = hk.loop("kv", k, hk.b("add", k, hk.c(span)), [inner])
    return with_body(seg, hk.asg(s, hk.c(0.0)), outer, hk.asg(hk.ld("lu", i, j, k), s), *after,
                     private=("s", "kv", "jv"))


def test_short_inner_loops_unrolled_into_queues() -> None:
    """A 2 x 2 loop over a cell's corners is written out in order (kv outer), its variables leave
    the private scalars, and its reads form queues along k; a loop read after it, or longer than
    4 iterations, stays."""
    seg = nest(hk.lap3d())
    i, j, k = hk.v("i"), hk.v("j"), hk.v("k")
    cell = corners(seg)
    assert not queues(cell, "k")  # inside loops: not steady reads
    flat = unroll_short(cell)
    assert flat.private == ("s",) and not any(isinstance(x, ir.Loop) for x in flat.body)
    sums = [x for x in flat.body if isinstance(x, ir.Assign) and x.target == hk.v("s", F64)][1:]
    k1, i1 = hk.b("add", k, hk.c(1)), hk.b("add", i, hk.c(1))
    assert [x.value.rhs.lhs for x in sums] == [u(i, j, k), u(i1, j, k), u(i, j, k1), u(i1, j, k1)]
    assert [(q.first, len(q.slots)) for q in queues(flat, "k")] == [(0, 2), (0, 2)]
    assert unroll_short(corners(seg, span=5)).body[1] == corners(seg, span=5).body[1]  # 5 planes: kept
    kept = corners(seg, after=(hk.asg(hk.ld("lu", i, j, k), hk.v("kv")),))
    assert unroll_short(kept) == kept  # kv read after its loop (Fortran leaves it one past the end)


def test_triton_walks_write_out_short_loops_only_for_queues() -> None:
    """The corner loops are written out when their reads then queue (runs of 4 planes); loops whose
    reads would not queue (a SELECT's branch) stay loops, and a point per thread keeps them too."""
    lap = hk.lap3d()
    seg = nest(lap)
    cell = corners(seg)
    flat, walk = triton_walk(cell, lap, Schedule())
    assert flat == unroll_short(cell) and walk == (2, 4)
    assert triton_walk(cell, lap, Schedule(run_length=1)) == (cell, None)
    i, j, k, s = hk.v("i"), hk.v("j"), hk.v("k"), hk.v("s", F64)
    kv, jv = hk.v("kv"), hk.v("jv")
    guarded = ir.Select(hk.b("lt", kv, hk.v("nz"), ir.DType.BOOL), u(jv, j, kv), hk.c(0.0), F64)
    inner = hk.loop("jv", i, hk.b("add", i, hk.c(2)), [hk.asg(s, hk.b("add", s, guarded))])
    pool = with_body(seg, hk.asg(s, hk.c(0.0)), hk.loop("kv", k, hk.b("add", k, hk.c(2)), [inner]),
                     hk.asg(hk.ld("lu", i, j, k), s), private=("s", "kv", "jv"))
    assert triton_walk(pool, lap, Schedule()) == (pool, (2, 8))
