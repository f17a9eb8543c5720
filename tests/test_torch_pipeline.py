"""`translate run` on a small PyTorch project through the real graph: every file
is a region, validated against its Model (Triton interpreter, Kokkos Serial);
report.json keeps its shape and adds ``ops`` and ``model_new``; the emitted
ModelNew is a drop-in; a file that fails to load is reported, the rest goes on."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from graph.cli import main
from validation.region import other_deltas

pytestmark = pytest.mark.slow
os.environ.setdefault("TRITON_INTERPRET", "1")
MODELS = Path(__file__).resolve().parent.parent / "examples" / "pytorch_ops" / "models"


def test_pytorch_workflow_end_to_end(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    for stem in ("swish_bias", "linear_bias_relu"):
        shutil.copy(MODELS / f"{stem}.py", tmp_path / "models")
    (tmp_path / "models" / "broken.py").write_text("import torch\nclass Model(:\n")
    (tmp_path / "workflows.yaml").write_text(textwrap.dedent("""\
        workflows:
          small:
            language: pytorch
            sources: [models/*.py]
            targets: [triton, kokkos]
            sizes: {batch_size: 3, dim: 50, in_features: 20, out_features: 12}
            validate: {trials: 2}
        """))
    assert main(["run", str(tmp_path)]) == 0
    out = tmp_path / "out" / "small"
    doc = json.loads((out / "report.json").read_text())
    assert any("broken.py" in n for n in doc.get("notes", []))
    regions = {r["name"]: r for r in doc["regions"]}
    assert set(regions) == {"swish_bias", "linear_bias_relu"}
    for name, r in regions.items():
        assert r["status"] == "translated"
        for t in ("triton", "kokkos"):
            e = r["targets"][t]
            assert e["status"] == "validated", (name, t, e["reason"])
            assert e["trials"] == 3 and e["rel_l2_err"] < 1e-5  # 2 trials + the different size
        assert any(o["runs_as"] == "generated kernel" for o in r["ops"]), r["ops"]
        assert r["model_new"] == f"pytorch/{name}_model.py"
        assert len(list((out / "golden" / name).glob("case*.npz"))) == 3
    meta = json.loads((out / "golden" / "swish_bias" / "case2.json").read_text())
    d = other_deltas(1234)[0]  # the other size: every size + a delta drawn from the seed
    assert meta["sizes"] == {"batch_size": 3 + d, "dim": 50 + d} and meta["allclose"] == [1e-4, 1e-4]
    # ModelNew from the run is a drop-in for Model at these sizes
    from parsers.torch import load_program

    spec = importlib.util.spec_from_file_location("kt_e2e_lbr", out / "pytorch" / "linear_bias_relu_model.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    program = load_program(tmp_path / "models" / "linear_bias_relu.py", {"batch_size": 5, "in_features": 20,
                                                                        "out_features": 12})
    model = program.make_model(4)
    new = mod.model_new_class(program.model_cls)(*program.init_inputs)
    new.load_state_dict(model.state_dict())
    x = program.make_inputs(9)[0]
    with torch.no_grad():
        torch.testing.assert_close(new(x), model(x), atol=1e-4, rtol=1e-4)
