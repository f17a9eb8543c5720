"""What a Triton launcher does with a nest's reductions (targets.triton_results): the partials reduced on
the device in one call per dtype, combined with their starts there, pending results joined across IFs
and turned into selects, returned as 0-d tensors with no wait for the GPU; the values checked against
numpy on every path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from targets.base import get_renderer
from tests import kt_hand_kernels as hk
from tests.test_targets_triton import (
    DEV,
    F64,
    I32,
    arr,
    b,
    c,
    call,
    kern,
    ld,
    load_module,
    loop,
    reduction_kernel,
    rng,
    sc,
    t,
    v,
)
from translate import ir
from translate.ir import Intent
from translate.schedule import Schedule


def two_part_sum(start: float) -> ir.Kernel:
    """s = start; IF (m > 0) s += x(1:m) (one nest); IF (flag /= 0) RETURN; s += x(m+1:n) (another):
    BLAS's unrolled-remainder shape, the second nest starting from the first one's pending sum."""
    n, m, i, s = v("n"), v("m"), v("i"), v("s", F64)
    red = (ir.Reduction("s", "add", F64),)
    body = (
        ir.Assign(s, c(start)),
        ir.If(b("gt", m, c(0)), (loop("i", 0, m, (ir.Assign(s, b("add", s, ld("x", i))),), red=red),)),
        ir.If(b("ne", v("flag"), c(0)), (ir.Return(),)),
        loop("i", m, n, (ir.Assign(s, b("add", s, ld("x", i))),), red=red),
    )
    params = (sc("n"), sc("m"), sc("flag"), ir.Array("x", F64, (n,)), sc("s", F64, Intent.OUT))
    return kern("twopart", params, body)


@pytest.mark.parametrize("start", [0.0, 2.5])
def test_a_sum_pending_across_an_if_is_joined_on_the_device(tmp_path: Path, start: float) -> None:
    """The first nest's sum stays pending through the IF (the path that skips it puts the start in
    its tensor), the second starts from it on the device, and nothing waits for the GPU; every path
    gives numpy's sum, a start that is not 0.0 included (dropping it would fail)."""
    mod, src = load_module(two_part_sum(start), tmp_path, Schedule(row_programs=False))
    assert ".item()" not in src and ".tolist()" not in src
    assert "s_out = torch.full((), s, dtype=torch.float64, device=dev)" in src  # the IF's path without the nest
    assert "s_out = s_out + s_sum" in src  # the second nest starts from the first's tensor
    x = rng(3).standard_normal(40)
    for n, m, flag in ((40, 7, 0), (40, 0, 0), (40, 7, 1), (7, 7, 0), (0, 0, 0)):
        got = mod.twopart(n, m, flag, t(x), 0.0, block=16)["s"]
        assert isinstance(got, torch.Tensor) and got.dim() == 0 and got.device.type == DEV
        want = start + float(x[:m].sum()) + (0.0 if flag else float(x[m:n].sum()))
        assert float(got) == pytest.approx(want, rel=1e-12, abs=1e-12), (n, m, flag)


def test_a_host_read_brings_the_result_back_once(tmp_path: Path) -> None:
    """Host code that reads a pending sum where a select cannot stand in (an IF that returns) fetches
    it there, once, and the sum that follows starts from the host's value."""
    n, i, s, k = v("n"), v("i"), v("s", F64), v("k")
    red = (ir.Reduction("s", "add", F64),)
    body = (
        ir.Assign(s, c(0.0)),
        loop("i", 0, n, (ir.Assign(s, b("add", s, ld("x", i))),), red=red),
        ir.If(b("gt", s, c(0.0)), (ir.Assign(k, c(1)), ir.Return())),
        ir.Assign(k, c(-1)),
        loop("i", 0, n, (ir.Assign(s, b("add", s, ld("x", i))),), red=red),
    )
    params = (sc("n"), ir.Array("x", F64, (n,)), sc("s", F64, Intent.OUT), sc("k", I32, Intent.OUT))
    mod, src = load_module(kern("hostread", params, body), tmp_path, Schedule(row_programs=False))
    assert src.count("s = float(s_out.item())") == 1 and "s_out = s + s_sum" in src
    for sign in (1.0, -1.0):
        x = sign * (np.abs(rng(4).standard_normal(33)) + 0.1)
        got = mod.hostread(33, t(x), 0.0, 0)
        want = float(x.sum()) * (1 if sign > 0 else 2)
        assert int(got["k"]) == int(sign) and float(got["s"]) == pytest.approx(want, rel=1e-12)


def test_an_if_on_a_pending_sum_becomes_selects(tmp_path: Path) -> None:
    """IF (s > lim) THEN s = lim; k = 1 ELSE k = -1: the condition reads the pending sum and the
    branches assign scalars, so both become selects on the device and nothing waits; the ELSE's mask
    is the condition as it was before the THEN assigned s (re-evaluating it there would set k = -1)."""
    n, i, s, k, lim = v("n"), v("i"), v("s", F64), v("k"), v("lim", F64)
    red = (ir.Reduction("s", "add", F64),)
    body = (
        ir.Assign(s, c(0.0)),
        loop("i", 0, n, (ir.Assign(s, b("add", s, ld("x", i))),), red=red),
        ir.If(b("gt", s, lim), (ir.Assign(s, lim), ir.Assign(k, c(1))), (ir.Assign(k, c(-1)),)),
    )
    params = (sc("n"), sc("lim", F64), ir.Array("x", F64, (n,)), sc("s", F64, Intent.OUT), sc("k", I32, Intent.OUT))
    mod, src = load_module(kern("clipsum", params, body), tmp_path, Schedule(row_programs=False))
    assert ".item()" not in src and ".tolist()" not in src and "torch.where(" in src
    x = np.abs(rng(5).standard_normal(50)) + 0.1
    total = float(x.sum())
    for lim, want_s, want_k in ((total / 2, total / 2, 1), (2 * total, total, -1)):
        got = mod.clipsum(50, lim, t(x), 0.0, 0)
        assert int(got["k"]) == want_k and float(got["s"]) == pytest.approx(want_s, rel=1e-12), lim


def test_an_assignment_from_a_pending_sum_stays_on_the_device(tmp_path: Path) -> None:
    """R = SQRT(S) after the sum: a device operation whose result is returned as it is, with no wait."""
    n, i, s, r = v("n"), v("i"), v("s", F64), v("r", F64)
    red = (ir.Reduction("s", "add", F64),)
    body = (
        ir.Assign(s, c(0.0)),
        loop("i", 0, n, (ir.Assign(s, b("add", s, b("mul", ld("x", i), ld("x", i)))),), red=red),
        ir.Assign(r, ir.Call("sqrt", (s,), F64)),
    )
    params = (sc("n"), ir.Array("x", F64, (n,)), sc("r", F64, Intent.OUT))
    mod, src = load_module(kern("norm2", params, body), tmp_path, Schedule(row_programs=False))
    assert "r_out = torch.sqrt(s_out)" in src and ".item()" not in src
    x = rng(6).standard_normal(77)
    assert float(mod.norm2(77, t(x), 0.0)["r"]) == pytest.approx(float(np.sqrt((x * x).sum())), rel=1e-12)


def test_a_launcher_returns_once_at_its_end() -> None:
    """A routine ending in RETURN ends its launcher with that return alone; one ending in an IF
    around a RETURN still returns after it."""
    from dataclasses import replace

    k = hk.ddot()
    ends_in_return = replace(k, body=(*k.body, ir.Return()))
    ends_in_if = replace(k, body=(*k.body, ir.If(b("gt", v("n"), c(5)), (ir.Return(),))))
    # the sum stays on the device (targets.triton_results): ddot is a copy of its tensor
    for kernel, tail in ((k, ['    ddot_out = dtemp_out', '    return {"result": ddot_out.view(())}']),
                         (ends_in_return, ['    ddot_out = dtemp_out', '    return {"result": ddot_out.view(())}']),
                         (ends_in_if, ['        return {"result": ddot_out.view(())}',
                                       '    return {"result": ddot_out.view(())}'])):
        src = get_renderer("triton").render(kernel).source
        assert src.rstrip("\n").split("\n")[-2:] == tail


def test_reductions_of_one_nest_come_back_together(tmp_path: Path) -> None:
    """Three reductions over one 2-D nest, two f64 and one i32: the f64 partials are reduced in one
    call (one stack of the device-side results), the i32 one on its own; each is combined on the
    device with its start (the sum's 0.0 needs nothing); the values are right."""
    n, m, i, j = v("n"), v("m"), v("i"), v("j")
    s, q, big = v("s", F64), v("q", F64), v("big", I32)
    reds = (ir.Reduction("s", "add", F64), ir.Reduction("q", "max", F64), ir.Reduction("big", "max", I32))
    body = (
        ir.Assign(s, c(0.0)), ir.Assign(q, c(1.0)), ir.Assign(big, c(0)),
        loop("j", 0, m, (loop("i", 0, n, (
            ir.Assign(s, b("add", s, ld("a", i, j))),
            ir.Assign(q, call("max", q, ld("a", i, j))),
            ir.Assign(big, call("max", big, b("add", i, b("mul", c(100), j)), dt=I32)),
        ), red=reds),), red=reds),
    )
    params = (sc("n"), sc("m"), arr("a", n, m), sc("s", F64, Intent.OUT), sc("q", F64, Intent.OUT),
              sc("big", I32, Intent.OUT))
    mod, src = load_module(kern("sums3", params, body), tmp_path, Schedule(row_programs=False))
    # the f64 partials are the rows of one array, the i32 one alone
    assert "partials = torch.empty((2, grid[0]), dtype=torch.float64, device=dev)  # a row per reduction: s, q" in src
    assert "s_out, q_sum = torch.stack([partials[0].sum(), partials[1].max()])" in src
    assert "q_out = q_sum.clamp_min(q)" in src
    assert "big_sum = big_part.max()" in src and "big_out = big_sum.clamp_min(big)" in src
    assert ".item()" not in src and ".tolist()" not in src  # the launcher never waits for the GPU
    a = rng(8).standard_normal((7, 5))
    got = mod.sums3(7, 5, t(a.ravel(order="F")), 0.0, 0.0, 0, block=16)
    assert float(got["s"]) == pytest.approx(float(a.sum()), rel=1e-12)
    assert float(got["q"]) == max(1.0, float(a.max())) and int(got["big"]) == 6 + 100 * 4
    small = -abs(a) - 2.0  # below the start of q: q stays 1.0
    got = mod.sums3(7, 5, t(small.ravel(order="F")), 0.0, 0.0, 0, block=16)
    assert float(got["q"]) == 1.0 and float(got["s"]) == pytest.approx(float(small.sum()), rel=1e-12)


def two_sums(n: ir.Expr, m: ir.Expr, x: ir.Expr, y: ir.Expr) -> tuple[ir.Stmt, ...]:
    """s = 0; s2 = 0; then over j < m, i < n: s += x, s2 += y (one nest, two sums of one dtype)."""
    s, s2 = v("s", F64), v("s2", F64)
    reds = (ir.Reduction("s", "add", F64), ir.Reduction("s2", "add", F64))
    inner = (ir.Assign(s, b("add", s, x)), ir.Assign(s2, b("add", s2, y)))
    return (ir.Assign(s, c(0.0)), ir.Assign(s2, c(0.0)),
            loop("j", 0, m, (loop("i", 0, n, inner, red=reds),), red=reds))


def test_sums_of_one_nest_reduce_their_rows_in_one_call(tmp_path: Path) -> None:
    """Two sums of one dtype: one array of partials, its rows summed in one call."""
    n, m, i, j = v("n"), v("m"), v("i"), v("j")
    body = two_sums(n, m, ld("a", i, j), b("mul", ld("a", i, j), ld("a", i, j)))
    params = (sc("n"), sc("m"), arr("a", n, m), sc("s", F64, Intent.OUT), sc("s2", F64, Intent.OUT))
    mod, src = load_module(kern("sums2", params, body), tmp_path, Schedule(row_programs=False))
    assert "s_out, s2_out = partials.sum(dim=1)  # 0-d tensors, one per row" in src
    assert "lanes = block * 4" in src and "BLOCK=lanes, TILES=8" in src  # a reduction over two loops: wider
    # one argument for both rows, which the kernel stores to by its programs' count
    assert "partials, BLOCK=lanes" in src and "partials[0]" not in src
    assert "tl.store(partials + pid, tl.sum(s, axis=0))" in src
    assert "tl.store(partials + tl.num_programs(0) + pid, tl.sum(s2, axis=0))" in src
    a = rng(9).standard_normal((13, 6))
    got = mod.sums2(13, 6, t(a.ravel(order="F")), 0.0, 0.0, block=16)
    assert float(got["s"]) == pytest.approx(float(a.sum()), rel=1e-12)
    assert float(got["s2"]) == pytest.approx(float((a * a).sum()), rel=1e-12)


def test_names_of_the_launchers_own_locals_are_renamed(tmp_path: Path) -> None:
    """Sizes named like the launcher's locals (lanes, partials, rows, grid) keep their values."""
    lanes, partials, i, j = v("lanes"), v("partials"), v("i"), v("j")
    body = two_sums(lanes, partials, b("mul", ld("a", i, j), v("rows", F64)), b("mul", ld("a", i, j), v("grid", F64)))
    params = (sc("lanes"), sc("partials"), sc("rows", F64), sc("grid", F64), arr("a", lanes, partials),
              sc("s", F64, Intent.OUT), sc("s2", F64, Intent.OUT))
    mod, src = load_module(kern("names", params, body), tmp_path, Schedule(row_programs=False))
    assert "lanes_" in src and "partials_" in src and "rows_" in src and "grid_" in src
    a = rng(10).standard_normal((9, 7))
    got = mod.names(9, 7, 2.0, 3.0, t(a.ravel(order="F")), 0.0, 0.0, block=16)
    assert float(got["s"]) == pytest.approx(2.0 * float(a.sum()), rel=1e-12)
    assert float(got["s2"]) == pytest.approx(3.0 * float(a.sum()), rel=1e-12)


@pytest.mark.parametrize("op,init", [("max", 0.0), ("min", 1e300), ("mul", 1.0)])
def test_reductions_max_min_prod(tmp_path: Path, op: str, init: float) -> None:
    i = v("i")
    contrib = call("abs", ld("dx", i)) if op != "mul" else b("add", c(1.0), b("mul", c(0.01), ld("dx", i)))
    mod, src = load_module(reduction_kernel("red" + op, op, init, contrib, "acc"), tmp_path)
    if op == "mul":
        assert "tl.reduce(acc, 0, _kt_mul)" in src and "tl.log" not in src
    r = rng(4)
    n = 777
    x = r.standard_normal(n)
    got = mod.__dict__["red" + op](n, t(x), t(x), block=64)["result"]
    want = {"max": np.abs(x).max(), "min": np.abs(x).min(), "mul": np.prod(1 + 0.01 * x)}[op]
    assert float(got) == pytest.approx(float(want), rel=1e-12)
