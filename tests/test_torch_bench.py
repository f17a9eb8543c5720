"""benchmarks/torch_bench.py --dry-run on this CPU: ModelNew over hand-written
Triton launchers (interpreter) at the validated sizes recorded in golden data;
a module whose output mismatches eager is reported and not timed."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from targets.torch_module import write_model_new
from tests import torch_stubs as stubs

REPO = Path(__file__).resolve().parent.parent


def _bench():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("kt_torch_bench", REPO / "benchmarks" / "torch_bench.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _region(out: Path, src_dir: Path, stem: str, model: str, launcher: str, kernel_fn) -> None:  # noqa: ANN001
    src = src_dir / f"{stem}.py"
    src.write_text(model)
    (out / "triton").mkdir(parents=True, exist_ok=True)
    (out / "triton" / f"{stem}_triton.py").write_text(launcher)
    write_model_new(kernel_fn(stem), src, out)
    (out / "golden" / stem).mkdir(parents=True)
    (out / "golden" / stem / "case0.json").write_text(json.dumps({"sizes": {"batch_size": 3, "dim": 45}}))


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    out, src = tmp_path / "out", tmp_path / "models"
    src.mkdir()
    _region(out, src, "swish", stubs.SWISH_MODEL, stubs.SWISH_LAUNCHER.format(name="swish"), stubs.swish_kernel)
    _region(out, src, "softmax_rows", stubs.SOFTMAX_MODEL, stubs.softmax_launcher("softmax_rows"), stubs.row_kernel)
    _region(out, src, "softmax_bad", stubs.SOFTMAX_MODEL, stubs.softmax_launcher("softmax_bad", "wrong_axis"),
            stubs.row_kernel)
    return out


def test_dry_run_prints_the_table(out_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench()
    rc = bench.main([str(out_dir), "--dry-run", "--quick"])
    text = capsys.readouterr().out
    assert rc == 1  # softmax_bad mismatches
    rows = {line.split()[0]: line for line in text.splitlines() if line.split() and line.split()[0] in
            ("swish", "softmax_rows", "softmax_bad")}
    assert set(rows) == {"swish", "softmax_rows", "softmax_bad"}
    for ok in ("swish", "softmax_rows"):
        cells = rows[ok].split()
        assert all(float(c) > 0 for c in cells[1:4]), rows[ok]
        assert cells[4].endswith("x") and cells[5].endswith("x") and rows[ok].rstrip().endswith("ok")
    assert "ours not timed, output mismatch" in rows["softmax_bad"]
    assert rows["softmax_bad"].split()[3] == "-"
    assert "geometric mean" in text and "DRY RUN" in text


def test_module_filter_and_missing_folder(out_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench()
    assert bench.main([str(out_dir), "--dry-run", "--quick", "--modules", "swish"]) == 0
    text = capsys.readouterr().out
    assert "swish" in text and "softmax_rows" not in text
    assert bench.main([str(out_dir / "nowhere"), "--dry-run"]) == 2
    assert bench.geomean([2.0, 8.0]) == pytest.approx(4.0) and bench.geomean([]) is None
