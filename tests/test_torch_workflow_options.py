"""PyTorch workflow options: pinned module constants (``values:``), tuple constants
given as lists in ``sizes:``, plain modules described by ``shapes:`` / ``module:`` /
``init:``, and ModelNew's constructor guard (the arguments its kernels were captured
with). Small modules written here; the end-to-end test runs ``translate run``."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
import torch

from graph.config import ConfigError, loads
from parsers.base import ParseError
from parsers.torch import load_program
from validation.region import other_deltas
from validation.torch_reference import alternate_attempts, apply_rule, module_constants

os.environ.setdefault("TRITON_INTERPRET", "1")

SCAN = '''\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)


batch_size = 64
input_shape = (100,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape)]


def get_init_inputs():
    return [dim]
'''

GNORM = '''\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_features, num_groups):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x):
        return self.gn(x)


batch_size = 16
features = 32
num_groups = 8
dim1 = 20


def get_inputs():
    return [torch.rand(batch_size, features, dim1)]


def get_init_inputs():
    return [features, num_groups]
'''

PLAIN = '''\
import torch
import torch.nn as nn

batch_size = 64
dim = 128


class TinyNet(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2.0
'''


def _config(tmp_path: Path, body: str) -> object:
    return loads(textwrap.dedent(body), tmp_path / "workflows.yaml")


def test_config_lists_in_pytorch_sizes_and_plain_module_keys(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(PLAIN)
    cfg = _config(tmp_path, """\
        workflows:
          t:
            language: pytorch
            sources: [m.py]
            sizes: {batch_size: 4, input_shape: [12, 3]}
            values: {dim: 1}
            regions:
              m: {shapes: {x: [batch_size, 16]}, module: TinyNet, init: [dim, 10, "'relu'"]}
        """)
    wf = cfg.workflow("t")  # type: ignore[attr-defined]
    assert wf.sizes == {"batch_size": 4, "input_shape": (12, 3)}
    r = wf.region("m")
    assert r.values == {"dim": 1} and r.shapes == {"x": ("batch_size", "16")}
    assert r.module == "TinyNet" and r.init == ("dim", 10, "'relu'")


def test_config_rejects_lists_in_fortran_sizes_and_pytorch_keys_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "a.f").write_text("      subroutine a\n      end\n")
    (tmp_path / "m.py").write_text(PLAIN)
    with pytest.raises(ConfigError) as err:
        _config(tmp_path, """\
            workflows:
              f:
                language: fortran
                sources: [a.f]
                sizes: {n: [1, 2]}
                module: X
              p:
                language: pytorch
                sources: [m.py]
                sizes: {s: [1, x], e: []}
                init: {a: 1}
            """)
    text = str(err.value)
    assert "workflows.f.sizes.n: expected an integer, got a list" in text
    assert "workflows.f.module: 'module' applies to language: pytorch only" in text
    assert "workflows.p.sizes.s[1]: expected an integer" in text
    assert "workflows.p.sizes.e: expected an integer or a non-empty list of integers" in text
    assert "workflows.p.init: expected a list of constructor arguments" in text


def test_load_program_tuple_sizes_pinned_values_and_kind_mismatch(tmp_path: Path) -> None:
    src = tmp_path / "scan.py"
    src.write_text(SCAN)
    program = load_program(src, {"batch_size": 3, "input_shape": [5]}, values={"dim": 0})
    assert program.namespace["input_shape"] == (5,) and program.init_inputs == [0]
    assert program.make_inputs(1)[0].shape == (3, 5)
    assert program.options == {"values": {"dim": 0}}
    with pytest.raises(ParseError, match="binds a tuple; give a list"):
        load_program(src, {"input_shape": 5})
    with pytest.raises(ParseError, match="captured at one value"):
        load_program(src, values={"dim": (0, 1)})
    with pytest.raises(ParseError, match="both as size and as pinned value"):
        load_program(src, {"dim": 3}, values={"dim": 1})
    assert module_constants(src) == {"batch_size": 64, "input_shape": (100,), "dim": 1}


def test_different_size_trial_keeps_pinned_values_and_bumps_tuples(tmp_path: Path) -> None:
    src = tmp_path / "scan.py"
    src.write_text(SCAN)
    assert apply_rule("+3", {"n": 4, "shape": [5, 6]}) == {"n": 7, "shape": [8, 9]}
    assert apply_rule("x2", {"shape": (5,)}) == {"shape": [10]}
    # without sizes the file's constants are bumped, but never a pinned one
    attempts = alternate_attempts({}, src, pinned=["dim"])
    assert attempts[0][1] == {"batch_size": 67, "input_shape": [103]}
    assert alternate_attempts({"batch_size": 2}, src, pinned=["dim"])[0][1] == {"batch_size": 5}


def test_plain_module_inputs_from_shapes(tmp_path: Path) -> None:
    src = tmp_path / "plain.py"
    src.write_text(PLAIN)
    program = load_program(src, {"batch_size": 3, "dim": 8}, shapes={"x": ["batch_size", "dim"]},
                           init=["dim", 5])
    assert program.model_cls.__name__ == "TinyNet" and program.init_inputs == [8, 5]
    (x,) = program.make_inputs(0)
    assert x.shape == (3, 8) and x.dtype == torch.float32
    assert program.make_model(0)(x).shape == (3, 5)
    with pytest.raises(ParseError, match="give the forward's inputs under shapes"):
        load_program(src)
    with pytest.raises(ParseError, match="not a parameter of TinyNet.forward"):
        load_program(src, shapes={"y": [1]}, init=[8, 5])
    with pytest.raises(ParseError, match="defines no class 'Nope'"):
        load_program(src, shapes={"x": [1, 8]}, init=[8, 5], module="Nope")


def _import(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"kt_opts_{path.stem}_{id(path)}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_end_to_end_pinned_tuple_plain_and_guard(tmp_path: Path) -> None:
    from graph.cli import main

    (tmp_path / "models").mkdir()
    for name, text in (("scan", SCAN), ("gnorm", GNORM), ("plain", PLAIN)):
        (tmp_path / "models" / f"{name}.py").write_text(text)
    (tmp_path / "workflows.yaml").write_text(textwrap.dedent("""\
        workflows:
          t:
            language: pytorch
            sources: [models/*.py]
            targets: [triton]
            sizes: {batch_size: 4, input_shape: [12], features: 8, dim1: 6, dim: 16}
            values: {num_groups: 4}
            validate: {trials: 2}
            regions:
              scan: {values: {dim: 1}}
              plain: {shapes: {x: [batch_size, dim]}, init: [dim, 10]}
        """))
    assert main(["run", str(tmp_path)]) == 0
    out = tmp_path / "out" / "t"
    doc = json.loads((out / "report.json").read_text())
    regions = {r["name"]: r for r in doc["regions"]}
    assert set(regions) == {"scan", "gnorm", "plain"}
    for name, r in regions.items():
        e = r["targets"]["triton"]
        assert e["status"] == "validated", (name, e["reason"])
        assert e["trials"] == 3 and r["model_new"] == f"pytorch/{name}_model.py"
    meta = {n: json.loads((out / "golden" / n / "case2.json").read_text()) for n in regions}
    # the different-size trial: sizes bumped (tuples element-wise), pinned values kept
    d = other_deltas(1234)[0]  # the other size: every size + a delta drawn from the seed
    assert meta["scan"]["sizes"] == {"batch_size": 4 + d, "input_shape": [12 + d]}
    assert meta["scan"]["values"] == {"dim": 1}
    assert meta["gnorm"]["values"] == {"num_groups": 4} and meta["gnorm"]["sizes"]["features"] in (8 + d, 16)
    assert meta["plain"]["sizes"] == {"batch_size": 4 + d, "dim": 16 + d}

    # ModelNew's guard: the group count and the scan axis are baked in; the channel count is a size
    gn = _import(out / "pytorch" / "gnorm_model.py")
    with pytest.raises(ValueError, match="'num_groups' = 2 differs from 4"):
        gn.ModelNew(8, 2)
    with pytest.raises(ValueError, match="num_groups"):
        gn.ModelNew(num_features=8, num_groups=8)
    model = gn.Model(16, 4).eval()
    new = gn.ModelNew(16, 4).eval()
    new.load_state_dict(model.state_dict())
    x = torch.rand(3, 16, 5)
    with torch.no_grad():
        torch.testing.assert_close(new(x), model(x), atol=1e-4, rtol=1e-4)
    scan = _import(out / "pytorch" / "scan_model.py")
    with pytest.raises(ValueError, match="'dim' = 0 differs from 1"):
        scan.ModelNew(0)
    assert scan.ModelNew(1) is not None
    # the plain module: its class, inputs from the shapes, the recorded constructor arguments
    plain = _import(out / "pytorch" / "plain_model.py")
    assert plain.Model.__name__ == "TinyNet" and plain.get_init_inputs() == [16, 10]
    with pytest.raises(ValueError, match="'d_out' = 7 differs from 10"):
        plain.ModelNew(16, 7)
    model = plain.Model(32, 10).eval()
    new = plain.ModelNew(32, 10).eval()  # d_in only sizes the weight: any value
    new.load_state_dict(model.state_dict())
    x = torch.randn(5, 32)
    with torch.no_grad():
        torch.testing.assert_close(new(x), model(x), atol=1e-4, rtol=1e-4)
    (x0,) = plain.get_inputs()
    assert x0.shape == (4, 16)
