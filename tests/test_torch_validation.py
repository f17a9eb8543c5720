"""Validation of PyTorch regions (validation.torch_reference): the reference is the
Model run in a subprocess, a correct Triton candidate validates at the workflow
size and at the different size, and planted bugs fail with their reason. The
frontend is stubbed (tests/torch_stubs.py) through the worker's ``loader`` hook."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from tests import torch_stubs as stubs
from validation import golden
from validation.inputs import is_poison, poison_value
from validation.region import other_deltas
from validation.torch_reference import (
    alternate_attempts,
    apply_rule,
    module_constants,
    plan_cases,
    run_reference,
    validate_torch_region,
)
from validation.torch_worker import poisoned

os.environ.setdefault("TRITON_INTERPRET", "1")
LOADER = "tests.torch_stubs:load_program"
SIZES = {"batch_size": 5, "dim": 37}


def _project(tmp_path: Path, bug: str = "") -> tuple[Path, Path]:
    src = tmp_path / "softmax_rows.py"
    src.write_text(stubs.SOFTMAX_MODEL)
    out = tmp_path / "out"
    (out / "triton").mkdir(parents=True)
    (out / "triton" / "softmax_rows_triton.py").write_text(stubs.softmax_launcher("softmax_rows", bug))
    return src, out


def _validate(tmp_path: Path, bug: str = "", trials: int = 2):  # noqa: ANN202
    src, out = _project(tmp_path, bug)
    kernel = stubs.row_kernel("softmax_rows")
    return validate_torch_region(kernel, src, {"triton": out / "triton"}, SIZES, trials,
                                 workdir=tmp_path / "work", cache_dir=tmp_path / "cache",
                                 golden_root=out / "golden", gpu=False, loader=LOADER, timeout=120)


def test_module_constants_and_size_rules(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("import torch\nbatch_size = 16\nM, N = 64, 32\nscale = 0.5\nflag = True\ndef f():\n    k = 3\n")
    assert module_constants(f) == {"batch_size": 16, "M": 64, "N": 32}
    assert apply_rule("+3", {"n": 4}) == {"n": 7} and apply_rule("x2", {"n": 4}) == {"n": 8}
    attempts = alternate_attempts({"n": 4}, f)
    assert [a[1] for a in attempts] == [{"n": 7}, {"n": 8}, {"n": 5}]
    assert "+ 3" in attempts[0][0]
    # without workflow sizes the rules apply to the file's integer constants (> 1)
    assert alternate_attempts({}, f)[0][1] == {"batch_size": 19, "M": 67, "N": 35}
    plan = plan_cases({"n": 4}, 3, 10, f)
    assert [s for _, s in plan] == [10, 11, 12, 13] and plan[0][0] == [("workflow size", {"n": 4})]


def test_worker_poison_matches_inputs() -> None:
    for dt in ("float32", "float64", "int64", "int32"):
        a = poisoned((3,), dt)
        assert is_poison(a).all(), dt
        assert a.dtype == np.dtype(dt)
        np.testing.assert_array_equal(a.view(np.uint8)[: a.itemsize],
                                      np.asarray(poison_value(np.dtype(dt))).reshape(1).view(np.uint8))


def test_reference_cases_bind_inputs_params_dims_and_poison(tmp_path: Path) -> None:
    src = tmp_path / "swish.py"
    src.write_text(stubs.SWISH_MODEL)
    kernel = stubs.swish_kernel("swish")
    tc = run_reference(src, kernel, {"batch_size": 3, "dim": 10}, 2, 7, tmp_path / "w", loader=LOADER)
    assert tc.ok, tc.reason
    assert len(tc.cases) == 3
    first, alt = tc.cases[0], tc.cases[-1]
    assert first.scalars["d0"] == 3 and first.scalars["d1"] == 10
    d = other_deltas(7)[0]  # every size + a delta drawn from the seed
    assert alt.scalars["d0"] == 3 + d and alt.scalars["d1"] == 10 + d
    assert f"each size + {d}" in tc.labels[-1]
    assert first.arrays["x"].shape == (3, 10) and first.arrays["post_bias"].shape == (10,)
    assert is_poison(first.arrays["out"]).all()
    # the reference is the Model with the case's seed: recompute it here
    program = stubs.load_program(src, {"batch_size": 3, "dim": 10})
    model = program.make_model(first.seed)
    x = program.make_inputs(first.seed)[0]
    np.testing.assert_array_equal(first.arrays["x"], x.numpy())
    np.testing.assert_array_equal(first.arrays["post_bias"], model.post.bias.detach().numpy())
    np.testing.assert_array_equal(first.arrays["gain"], model.gain.numpy())
    np.testing.assert_allclose(tc.refs[0]["out"], model(x).detach().numpy(), rtol=0, atol=0)
    # fresh seeds: different inputs and weights per trial
    assert not np.array_equal(tc.cases[1].arrays["x"], first.arrays["x"])


def test_correct_candidate_validates_and_golden_revalidates(tmp_path: Path) -> None:
    res = _validate(tmp_path)
    tv = res.targets["triton"]
    assert tv.status == "validated", tv.reason
    assert tv.trials == 3 and tv.rel_l2_err < 1e-5
    d = other_deltas(1234)[0]  # the other size: every size + a delta drawn from the seed
    assert res.cases[-1]["sizes"] == {"batch_size": 5 + d, "dim": 37 + d}
    # golden data: RIGHT layout, bindings and KernelBench tolerance recorded; re-validates without the Model
    gdir = tmp_path / "out" / "golden" / "softmax_rows"
    meta = json.loads((gdir / "case0.json").read_text())
    params = {p["name"]: p for p in meta["signature"]["params"]}
    assert params["x"]["layout"] == "right" and params["x"]["binding"] == "input:0"
    assert params["x"]["shape"] == [5, 37] and params["d1"]["binding"] == "dim:0:1"
    assert meta["allclose"] == [1e-4, 1e-4]
    results = golden.validate_against_golden("triton", tmp_path / "out" / "triton", gdir, gpu=False,
                                             cache_dir=tmp_path / "cache")
    assert len(results) == 3 and all(r.ok for r in results), [r.reason for r in results]


@pytest.mark.parametrize(("bug", "expect"), [
    ("row_off_by_one", "beyond 0.0001 + 0.0001*|ref|"),
    ("missed_last", "left unwritten"),
    ("wrong_axis", "beyond 0.0001 + 0.0001*|ref|"),
    ("constant", "constant"),
])
def test_wrong_candidates_fail(tmp_path: Path, bug: str, expect: str) -> None:
    res = _validate(tmp_path, bug, trials=1)
    tv = res.targets["triton"]
    assert tv.status == "failed", (bug, tv.reason)
    assert expect in tv.reason, tv.reason
    assert "trial 1" in tv.reason


def test_broken_module_fails_reference_with_reason(tmp_path: Path) -> None:
    src, out = _project(tmp_path)
    src.write_text(stubs.SOFTMAX_MODEL.replace("return torch.softmax(x, dim=1)", "raise RuntimeError('boom')"))
    res = validate_torch_region(stubs.row_kernel("softmax_rows"), src, {"triton": out / "triton"}, SIZES, 1,
                                workdir=tmp_path / "w", gpu=False, loader=LOADER)
    assert not res.reference_ok
    assert "boom" in res.targets["triton"].reason or "reference failed" in res.targets["triton"].reason


def test_different_size_falls_back_when_plus_three_breaks(tmp_path: Path) -> None:
    src = tmp_path / "even.py"
    src.write_text(stubs.SOFTMAX_MODEL.replace("def forward(self, x):",
                                               "def forward(self, x):\n        assert x.shape[1] % 2 == 0"))
    odd = next(s for s in range(1, 1000) if other_deltas(s)[0] % 2)  # a seed whose first other size is odd
    tc = run_reference(src, stubs.row_kernel("even"), {"batch_size": 3, "dim": 8}, 1, odd, tmp_path / "w",
                       loader=LOADER)
    assert tc.ok, tc.reason
    assert "x 2" in tc.log[-1]["label"] and tc.log[-1]["sizes"] == {"batch_size": 6, "dim": 16}
    assert "AssertionError" in tc.log[-1]["dropped"][0]


def test_hard_coded_extent_is_reported(tmp_path: Path) -> None:
    src, out = _project(tmp_path)
    kernel = stubs.row_kernel("softmax_rows")
    fixed = tuple(p if p.name != "out" else
                  type(p)(p.name, p.dtype, (p.shape[0], stubs.ir.Const(37, stubs.I32)), p.layout, p.intent,
                          binding=p.binding) for p in kernel.params)
    kernel = type(kernel)(kernel.name, fixed, (), (), kernel.origin)
    res = validate_torch_region(kernel, src, {"triton": out / "triton"}, SIZES, 1, workdir=tmp_path / "w",
                                gpu=False, loader=LOADER)
    assert res.targets["triton"].status == "failed"
    assert "different size" in res.targets["triton"].reason and "extents" in res.targets["triton"].reason
