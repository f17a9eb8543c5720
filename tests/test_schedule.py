"""Schedules and the host/device partition, on hand-built kernels."""

from __future__ import annotations

import pytest

from tests import kt_hand_kernels as hk
from translate import ir
from translate.partition import (
    DeviceNest,
    DeviceSerial,
    HostBlock,
    HostIf,
    HostLoop,
    PartitionError,
    device_segments,
    fastest_first,
    host_scalars,
    partition,
    walk_segments,
)
from translate.schedule import Schedule, apply_schedule


def kinds(segs: tuple) -> list[str]:
    return [type(s).__name__ for s in segs]


def loops(kernel: ir.Kernel) -> list[ir.Loop]:
    return [n for s in kernel.body for n in ir.walk(s) if isinstance(n, ir.Loop)]


def test_daxpy_partition() -> None:
    segs = partition(hk.daxpy())
    assert kinds(segs) == ["HostBlock", "HostIf"]
    assert all(isinstance(s, ir.If) for s in segs[0].stmts)  # the two quick returns
    branch = segs[1]
    assert isinstance(branch, HostIf)
    (nest,) = branch.then
    assert isinstance(nest, DeviceNest) and nest.name == "daxpy_loop1" and nest.line == 20
    assert nest.scalars_in == ("n", "da") and nest.arrays == ("dx", "dy") and nest.reductions == ()
    assert kinds(branch.orelse) == ["HostBlock", "DeviceSerial"]
    serial = branch.orelse[1]
    assert serial.name == "daxpy_serial1" and serial.line == 30
    assert set(serial.scalars_in) == {"n", "da", "incx", "incy", "ix", "iy"} and serial.scalars_out == ()


def test_ddot_reduction_into_host_scalar() -> None:
    k = hk.ddot()
    segs = partition(k)
    assert kinds(segs) == ["HostBlock", "DeviceNest", "HostBlock"]
    nest = segs[1]
    assert nest.reductions == (ir.Reduction("dtemp", "add", ir.DType.F64),)
    assert "dtemp" not in nest.scalars_in and nest.private == ()
    assert host_scalars(k, segs) == ("dtemp", "ddot")


def test_collapse_and_contiguous_order() -> None:
    k = hk.stencil()
    (nest,) = partition(k)
    assert [lp.var for lp in nest.loops] == ["j", "i"]
    assert fastest_first(nest, k) == (1, 0)  # i walks the first (contiguous) index
    assert nest.loops[0].body == ()  # only the innermost keeps its body
    assert nest.scalars_in == ("n", "m")
    k3 = hk.axpy3d()
    segs = partition(k3)
    assert kinds(segs) == ["HostBlock", "DeviceNest", "DeviceNest"]
    assert [lp.var for lp in segs[1].loops] == ["k", "j", "i"]
    assert [segs[1].loops[i].var for i in fastest_first(segs[1], k3)] == ["i", "j", "k"]
    assert segs[2].reductions[0].op == "max" and len(segs[2].loops) == 3
    assert [s.name for s in device_segments(segs)] == ["axpy3d_loop1", "axpy3d_loop2"]


def test_stride_scalars_in() -> None:
    segs = partition(hk.dgemv())
    nests = device_segments(segs)
    assert all("lda" in n.scalars_in for n in nests)  # a(i, j) linearises with lda


def test_recurrence_is_device_serial_with_scalar_out() -> None:
    segs = partition(hk.recur())
    assert kinds(segs) == ["HostBlock", "DeviceSerial", "HostBlock"]
    serial = segs[1]
    assert isinstance(serial, DeviceSerial)
    assert len(serial.stmts) == 2  # consecutive serial loops merged
    assert serial.scalars_out == ("t",) and serial.scalars_in == ("n", "c")
    assert serial.arrays == ("x", "y") and serial.line == 6


def test_negative_and_strided_steps_are_nests() -> None:
    segs = partition(hk.reverse())
    assert kinds(segs) == ["DeviceNest", "DeviceNest"]
    assert segs[0].loops[0].step == hk.c(-1) and segs[1].loops[0].step == hk.c(2)
    assert [s.name for s in segs] == ["reverse_loop1", "reverse_loop2"]


def test_dgemv_host_if_host_loop_and_sinking() -> None:
    segs = partition(hk.dgemv())
    assert kinds(segs) == ["HostBlock", "HostIf"]
    branch = segs[1]
    assert isinstance(branch.cond, ir.Call) and branch.cond.fn == "lsame"
    (hl,) = branch.then
    assert isinstance(hl, HostLoop) and hl.var == "j"
    (nest,) = hl.body
    assert isinstance(nest, DeviceNest)
    assert isinstance(nest.body[0], ir.Assign) and nest.body[0].target.name == "temp"  # sunk
    assert nest.private == ("temp",) and "j" in nest.scalars_in
    (dotform,) = branch.orelse
    assert isinstance(dotform, DeviceNest) and dotform.private == ("temp",)
    assert [lp.var for lp in dotform.loops] == ["j"]  # inner serial i loop stays in the body


def test_no_sinking_when_scalar_used_after_the_nest() -> None:
    k = hk.dgemv()
    notrans = k.body[-1].then[0]
    use_temp = ir.Assign(hk.v("info"), ir.Cast(ir.DType.I32, hk.v("temp", ir.DType.F64)))
    changed = ir.If(k.body[-1].cond, (ir.Loop(**{**notrans.__dict__, "body": notrans.body + (use_temp,)}),),
                    k.body[-1].orelse)
    k2 = ir.Kernel(k.name, k.params, k.locals, k.body[:-1] + (changed,), k.origin)
    then = partition(k2)[1].then
    assert kinds(then) == ["DeviceSerial"]  # the whole loop runs on the device, serially
    assert "info" in then[0].scalars_in or "info" in then[0].scalars_out


def test_no_sinking_when_nest_writes_what_the_scalar_reads() -> None:
    n, i, j, t = hk.v("n"), hk.v("i"), hk.v("j"), hk.v("t", ir.DType.F64)
    inner = hk.loop("i", hk.c(0), n, [hk.asg(hk.ld("x", i), hk.b("mul", hk.ld("x", i), t))])
    outer = hk.loop("j", hk.c(0), n, [hk.asg(t, hk.ld("x", j)), inner], kind=ir.LoopKind.SERIAL)
    k = ir.Kernel("scale", (ir.Scalar("n", ir.DType.I32), ir.Array("x", ir.DType.F64, (n,), intent=ir.Intent.INOUT)),
                  (ir.Scalar("t", ir.DType.F64),), (outer,), hk.origin(1))
    assert kinds(partition(k)) == ["DeviceSerial"]


def test_return_inside_device_code_is_an_error() -> None:
    n, i = hk.v("n"), hk.v("i")
    body = (hk.loop("i", hk.c(0), n, [ir.If(hk.b("lt", hk.ld("x", i), hk.c(0.0)), (ir.Return(),))],
                    kind=ir.LoopKind.SERIAL),)
    k = ir.Kernel("early", (ir.Scalar("n", ir.DType.I32), ir.Array("x", ir.DType.F64, (n,))), (), body, hk.origin(1))
    with pytest.raises(PartitionError):
        partition(k)


def test_host_only_kernel() -> None:
    n = hk.v("n")
    k = ir.Kernel("host", (ir.Scalar("n", ir.DType.I32, ir.Intent.INOUT),), (),
                  (hk.asg(n, hk.b("add", n, hk.c(1))),), hk.origin(1))
    assert partition(k) == (HostBlock(k.body),)


@pytest.mark.parametrize("make", hk.ALL, ids=lambda f: f.__name__)
def test_apply_schedule_levels(make) -> None:  # type: ignore[no-untyped-def]
    k = make()
    assert apply_schedule(k, Schedule(0, scan=False)) is k
    # level 0 only marks the linear recurrences (translate.scan): recur's x(i) = c*x(i-1) + y(i)
    marked = [lp.line for lp in loops(apply_schedule(k, Schedule(0))) if lp.scan]
    assert marked == ([6] if k.name == "recur" else [])
    l1 = apply_schedule(k, Schedule(1))
    for top in (s for s in walk_all(l1) if isinstance(s, ir.Loop) and s.kind is ir.LoopKind.PARALLEL):
        inner = [n for b in top.body for n in ir.walk(b) if isinstance(n, ir.Loop)]
        assert all(lp.kind is ir.LoopKind.SERIAL for lp in inner)
    l2 = apply_schedule(k, Schedule(2))
    assert all(lp.kind is ir.LoopKind.SERIAL for lp in loops(l2))
    assert not any(isinstance(s, DeviceNest) for s in walk_segments(partition(l2)))


def walk_all(k: ir.Kernel) -> list[object]:
    return [n for s in k.body for n in ir.walk(s)]


def test_level1_keeps_outermost_parallel_only() -> None:
    segs = partition(apply_schedule(hk.stencil(), Schedule(1)))
    (nest,) = segs
    assert [lp.var for lp in nest.loops] == ["j"]
    assert isinstance(nest.body[0], ir.Loop) and nest.body[0].kind is ir.LoopKind.SERIAL
    with pytest.raises(ValueError):
        apply_schedule(hk.stencil(), Schedule(3))
    assert Schedule(1).describe() == "outermost loop parallel only"


# ------------------------------------------- branches on array values inside host loops


def test_guarded_nest_keeps_the_column_loop_on_the_host() -> None:
    k = hk.gemvn()
    segs = partition(k)
    assert kinds(segs) == ["HostBlock", "HostLoop"]
    hl = segs[1]
    assert isinstance(hl, HostLoop) and hl.var == "j"
    (nest,) = hl.body
    assert isinstance(nest, DeviceNest) and nest.name == "gemvn_loop1"
    assert [lp.var for lp in nest.loops] == ["i"] and nest.reductions == ()
    (guard,) = nest.body  # every thread evaluates the condition and guards its body with it
    assert isinstance(guard, ir.If) and guard.orelse == ()
    assert isinstance(guard.cond, ir.BinOp) and guard.cond.op == "ne"
    assert isinstance(guard.cond.lhs, ir.Load) and guard.cond.lhs.array == "x"
    temp, store = guard.then
    assert isinstance(temp, ir.Assign) and temp.target == ir.Var("temp", ir.DType.F64)
    assert isinstance(store, ir.Assign) and isinstance(store.target, ir.Load) and store.target.array == "y"
    assert nest.private == ("temp",)
    assert {"alpha", "incx", "jx", "j", "m", "lda"} <= set(nest.scalars_in)
    assert nest.arrays == ("a", "x", "y")
    assert not any(isinstance(s, DeviceSerial) for s in walk_segments(segs))


def _serial_j_loop(k: ir.Kernel) -> DeviceSerial:
    (serial,) = [s for s in walk_segments(partition(k)) if isinstance(s, DeviceSerial)]
    assert any(isinstance(st, ir.Loop) and st.var == "j" for st in serial.stmts)
    assert not any(isinstance(s, HostLoop) for s in walk_segments(partition(k)))
    return serial


def test_no_guard_when_the_condition_reads_what_the_nest_writes() -> None:
    branch = hk.GEMVN_BRANCH.replace("IF (X(JX).NE.ZERO)", "IF (Y(J).NE.ZERO)")
    _serial_j_loop(hk.gemvn(branch))


def test_no_guard_with_array_work_in_the_else_branch() -> None:
    branch = hk.GEMVN_BRANCH.replace("          END IF", "          ELSE\n              W(J) = ZERO\n          END IF")
    k = hk.gemvn(branch, args=",W", decls="      DOUBLE PRECISION W(*)")
    _serial_j_loop(k)


def test_no_guard_when_a_branch_scalar_is_read_after_the_loop() -> None:
    k = hk.gemvn(args=",LAST", decls="      DOUBLE PRECISION LAST", tail="      LAST = TEMP")
    serial = _serial_j_loop(k)
    assert "temp" in serial.scalars_out


def _host_loop_kernel(body: list[ir.Stmt], extra: tuple[ir.Decl, ...] = ()) -> ir.Kernel:
    n, m = hk.v("n"), hk.v("m")
    params = (ir.Scalar("m", ir.DType.I32), ir.Scalar("n", ir.DType.I32), ir.Scalar("alpha", ir.DType.F64),
              ir.Array("a", ir.DType.F64, (m, n)), ir.Array("x", ir.DType.F64, (n,)),
              ir.Scalar("incx", ir.DType.I32), ir.Array("y", ir.DType.F64, (m,), intent=ir.Intent.INOUT))
    locals_ = (ir.Scalar("jx", ir.DType.I32), ir.Scalar("temp", ir.DType.F64), *extra)
    outer = hk.loop("j", hk.c(0), n, body, kind=ir.LoopKind.SERIAL, line=5)
    return ir.Kernel("colloop", params, locals_, (hk.asg(hk.v("jx"), hk.c(0)), outer), hk.origin(1))


def _update(value: ir.Expr) -> ir.Loop:
    i, j = hk.v("i"), hk.v("j")
    y = hk.asg(hk.ld("y", i), hk.b("add", hk.ld("y", i), hk.b("mul", value, hk.ld("a", i, j))))
    return hk.loop("i", hk.c(0), hk.v("m"), [y], line=7)


def test_guard_with_the_induction_update_on_the_host() -> None:
    jx, temp, alpha = hk.v("jx"), hk.v("temp", ir.DType.F64), hk.v("alpha", ir.DType.F64)
    branch = ir.If(hk.b("ne", hk.ld("x", jx), hk.c(0.0)),
                   (hk.asg(temp, hk.b("mul", alpha, hk.ld("x", jx))), _update(temp)))
    step = hk.asg(jx, hk.b("add", jx, hk.v("incx")))
    (_, hl) = partition(_host_loop_kernel([branch, step]))
    assert isinstance(hl, HostLoop)
    assert kinds(hl.body) == ["DeviceNest", "HostBlock"] and hl.body[1].stmts == (step,)
    assert isinstance(hl.body[0].body[0], ir.If) and "jx" in hl.body[0].scalars_in


def test_sunk_scalar_feeds_the_guard() -> None:
    # t = x(j) sinks before the guard that reads it: body = (t = ..., If(t != 0, ...))
    j, t = hk.v("j"), hk.v("t", ir.DType.F64)
    branch = ir.If(hk.b("ne", t, hk.c(0.0)), (_update(t),))
    k = _host_loop_kernel([hk.asg(t, hk.ld("x", j)), branch], extra=(ir.Scalar("t", ir.DType.F64),))
    (_, hl) = partition(k)
    (nest,) = hl.body
    assert isinstance(nest, DeviceNest) and nest.private == ("t",)
    assert isinstance(nest.body[0], ir.Assign) and isinstance(nest.body[1], ir.If)


def test_no_guard_or_sinking_across_iterations() -> None:
    j, temp = hk.v("j"), hk.v("temp", ir.DType.F64)
    # the branch reads temp before setting it: the previous iteration's value
    carried = ir.If(hk.b("ne", hk.ld("x", j), hk.c(0.0)),
                    (hk.asg(temp, hk.b("add", temp, hk.ld("x", j))), _update(temp)))
    assert kinds(partition(_host_loop_kernel([carried]))) == ["HostBlock", "DeviceSerial"]
    # the same recurrence as a plain sunk scalar (each thread's private would start undefined)
    sunk = hk.asg(temp, hk.b("mul", temp, hk.ld("x", j)))
    assert kinds(partition(_host_loop_kernel([sunk, _update(temp)]))) == ["HostBlock", "DeviceSerial"]
    # the condition reads a scalar the branch sets
    cond_reads = ir.If(hk.b("ne", temp, hk.ld("x", j)), (hk.asg(temp, hk.ld("x", j)), _update(temp)))
    assert kinds(partition(_host_loop_kernel([cond_reads]))) == ["HostBlock", "DeviceSerial"]


def test_no_guard_around_a_reduction() -> None:
    i, j, s = hk.v("i"), hk.v("j"), hk.v("s", ir.DType.F64)
    red = hk.loop("i", hk.c(0), hk.v("m"), [hk.asg(s, hk.b("add", s, hk.ld("a", i, j)))],
                  reductions=(ir.Reduction("s", "add", ir.DType.F64),))
    branch = ir.If(hk.b("ne", hk.ld("x", j), hk.c(0.0)), (red,))
    k = _host_loop_kernel([branch], extra=(ir.Scalar("s", ir.DType.F64),))
    assert kinds(partition(k)) == ["HostBlock", "DeviceSerial"]
