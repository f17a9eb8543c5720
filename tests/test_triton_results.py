"""Reductions that stay on the device (targets.triton_results): a launcher that does not wait for the
GPU, results combined with their starts on the device, pending results joined across IFs, returned as
0-d tensors; the values checked against numpy on every path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.test_targets_triton import DEV, F64, I32, b, c, kern, ld, load_module, loop, rng, sc, t, v
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
