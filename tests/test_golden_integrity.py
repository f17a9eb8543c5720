"""Golden data cannot be lost or altered unnoticed: it is recorded whole and moved into place
(a run killed while recording leaves the earlier data), and `translate check` fails, naming
the file, when a case is missing, truncated or edited (a tolerance raised by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from translate import ir
from validation import golden
from validation.inputs import make_case

N = ir.Var("n", ir.DType.I32)
KERNEL = ir.Kernel("scale", (ir.Scalar("n", ir.DType.I32), ir.Array("x", ir.DType.F64, (N,), intent=ir.Intent.INOUT)),
                   (), (), ir.Origin("scale.f", 1))


def _record(gdir: Path, seeds: range) -> None:
    cases = [make_case(KERNEL, {"n": 8}, {}, {}, s) for s in seeds]
    golden.record_all(gdir, KERNEL, [(c, {"x": c.arrays["x"] * 2}) for c in cases], reduces=False)


def _check(out: Path) -> tuple[int, str]:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = golden.main([str(out), "--targets", "kokkos"])
    return rc, buf.getvalue()


def test_recorded_data_verifies_and_each_damage_is_named(tmp_path: Path) -> None:
    gdir = tmp_path / "out" / "golden" / "scale"
    _record(gdir, range(3))
    assert golden.verify(gdir) == [] and golden.cases(gdir) == ["case0", "case1", "case2"]
    (gdir / "case1.npz").write_bytes((gdir / "case1.npz").read_bytes()[:40])  # truncated
    meta = json.loads((gdir / "case2.json").read_text())
    meta["tolerance"] = [0.5, 0.5]  # loosened by hand
    (gdir / "case2.json").write_text(json.dumps(meta))
    problems = golden.verify(gdir)
    assert problems == [f"{gdir / 'case1.npz'} was changed after it was recorded (truncated or edited)",
                        f"{gdir / 'case2.json'} was changed after it was recorded (truncated or edited)"]
    (gdir / "case0.npz").unlink()
    assert f"{gdir / 'case0.npz'} is missing" in golden.verify(gdir)
    rc, out = _check(tmp_path / "out")
    assert rc == 1 and "FAILED" in out and "case0.npz is missing" in out


def test_missing_manifest_or_cases_fail_the_check(tmp_path: Path) -> None:
    gdir = tmp_path / "out" / "golden" / "scale"
    gdir.mkdir(parents=True)
    rc, out = _check(tmp_path / "out")
    assert rc == 1 and "manifest.json is missing" in out
    _record(gdir, range(2))
    for name in ("case0.json", "case0.npz", "case1.json", "case1.npz"):
        (gdir / name).unlink()
    assert any("is missing" in p for p in golden.verify(gdir))


def test_a_recording_that_dies_leaves_the_earlier_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gdir = tmp_path / "golden" / "scale"
    _record(gdir, range(3))
    before = {p.name: p.read_bytes() for p in gdir.iterdir()}
    calls = 0
    real = golden.record

    def dies_on_the_third(*args, **kw):  # noqa: ANN002, ANN003, ANN202
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt  # the run killed mid-way
        return real(*args, **kw)

    monkeypatch.setattr(golden, "record", dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        _record(gdir, range(10, 13))
    assert {p.name: p.read_bytes() for p in gdir.iterdir()} == before
    assert golden.verify(gdir) == []
    monkeypatch.setattr(golden, "record", real)
    _record(gdir, range(10, 12))  # a later complete run replaces it whole (no stale case2)
    assert golden.cases(gdir) == ["case0", "case1"] and golden.verify(gdir) == []
    assert not any(p.name.startswith(".") for p in gdir.parent.iterdir())
    _, _, case, ref = golden.load_case(gdir, "case1")
    assert case.seed == 11 and np.array_equal(ref["x"], case.arrays["x"] * 2)
