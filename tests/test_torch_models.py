"""Whole models: recurrent layers lower to a host time loop (library GEMM + one fused step
kernel) that matches torch at sizes other than the captured ones; tensors a forward
updates are state outputs; random draws in forward are inputs the caller draws; sizes the
kernel is built for are held. Checked with the IR interpreter against the model itself."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import torch

from parsers.torch import load_program, lower_program
from parsers.torch_load import HELD_SEARCH_CPU_S, held_sizes
from parsers.torch_random import DrawRecorder
from parsers.torch_state import snapshot
from tests.test_torch_frontend import check, lower, module, write
from tests.test_torch_module import _import
from tests.torch_ir_eval import evaluate
from translate import ir

RNN_SIZES = {"B": 3, "T": 9, "I": 10, "H": 12}
OTHER_SIZES = {"B": 2, "T": 13, "I": 7, "H": 5}

RECURRENT = {
    "lstm_batch_first": ("nn.LSTM(I, H, 2, batch_first=True)", """
        out, (hn, cn) = self.rnn(x, (rest[0], rest[1]))
        return out, hn, cn""", "[torch.randn(B, T, I), torch.randn(2, B, H), torch.randn(2, B, H)]"),
    "gru_bidirectional": ("nn.GRU(I, H, 2, bidirectional=True)", """
        out, hn = self.rnn(x, rest[0])
        return out, hn""", "[torch.randn(T, B, I), torch.randn(4, B, H)]"),
    "rnn_relu_no_bias": ("nn.RNN(I, H, 1, nonlinearity='relu', bias=False)", """
        out, hn = self.rnn(x)
        return out[-1] * 2.0""", "[torch.randn(T, B, I)]"),
}


def _walk_loops(stmts: tuple[ir.Stmt, ...]) -> list[ir.Loop]:
    return [n for s in stmts for n in ir.walk(s) if isinstance(n, ir.Loop)]


@pytest.mark.parametrize("name", sorted(RECURRENT))
def test_recurrent_layer_is_a_host_loop_and_matches_torch(tmp_path: Path, name: str) -> None:
    layer, forward, inputs = RECURRENT[name]
    consts = "\n".join(f"{k} = {v}" for k, v in RNN_SIZES.items())
    path = write(tmp_path, name, module(forward, consts, inputs, init=f"self.rnn = {layer}"))
    kernel = lower(path, RNN_SIZES)
    steps = [lp for lp in _walk_loops(kernel.body) if lp.kind is ir.LoopKind.SERIAL
             and any(isinstance(s, ir.Extern) for s in lp.body)]
    assert steps, "no host time loop around a library matmul"
    for lp in steps:
        nests = [s for s in lp.body if isinstance(s, ir.Loop)]
        assert len(nests) == 1 and nests[0].kind is ir.LoopKind.PARALLEL  # one fused step kernel
    check(path, kernel, RNN_SIZES, rtol=1e-4)
    check(path, kernel, OTHER_SIZES, rtol=1e-4)  # the sequence length and every extent are symbolic


STATEFUL = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n_in, n_hidden):
        super().__init__()
        self.hidden = torch.randn(B, n_hidden)
        self.steps = torch.zeros(1)
        self.i2h = nn.Linear(n_in + n_hidden, n_hidden)

    def forward(self, x, h0):
        if h0 is not None:
            self.hidden.copy_(h0 * 0.5)
        self.steps.add_(1.0)
        self.hidden = torch.tanh(self.i2h(torch.cat((x, self.hidden), dim=1)))
        return self.hidden.sum(dim=1) + torch.randn(x.size(0)) * 0.0 + torch.rand(x.size(0))


B = 4
N_IN = 6
N_HIDDEN = 5


def get_inputs():
    return [torch.randn(B, N_IN), torch.randn(B, N_HIDDEN)]


def get_init_inputs():
    return [N_IN, N_HIDDEN]
'''


def _run_model(path: Path, sizes: dict[str, int] | None) -> tuple[object, list[torch.Tensor], list[object], dict,
                                                                    dict, list[torch.Tensor]]:
    program = load_program(path, sizes)
    model = program.make_model(0)
    inputs = program.make_inputs(1)
    before = snapshot(model)
    with torch.no_grad(), DrawRecorder() as rec:
        out = model(*inputs)
    return program, [out], inputs, before, snapshot(model), rec.draws


def test_state_and_draws_are_kernel_inputs_and_outputs(tmp_path: Path) -> None:
    path = write(tmp_path, "stateful", STATEFUL)
    kernel = lower_program(load_program(path, None), root=path.parent)
    assert isinstance(kernel, ir.Kernel), getattr(kernel, "reason", kernel)
    bindings = [p.binding for p in kernel.params]
    assert "param:hidden" in bindings and "state:hidden" in bindings and "state:steps" in bindings
    assert [b for b in bindings if (b or "").startswith("random:")] == ["random:0:randn", "random:1:rand"]
    for sizes in (None, {"B": 7, "N_IN": 3, "N_HIDDEN": 9}):
        _, outs, inputs, before, after, draws = _run_model(path, sizes)
        assert len(draws) == 2
        got = evaluate(kernel, inputs, before, draws)
        want = [outs[0], after["hidden"], after["steps"]]
        assert len(got) == 3
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w.double().numpy(), rtol=1e-5, atol=1e-6)
        # other draws give other numbers: the kernel reads the draws it is given
        wrong = evaluate(kernel, inputs, before, [torch.zeros_like(d) for d in draws])
        assert not np.allclose(wrong[0], want[0].double().numpy(), rtol=1e-5, atol=1e-6)


def test_forward_that_updates_an_input_in_place_is_refused(tmp_path: Path) -> None:
    text = module("x.mul_(2.0)\nreturn x + 1.0", "B = 4", "[torch.randn(B, 3)]")
    path = write(tmp_path, "inplace_input", text)
    kernel = lower_program(load_program(path, None), root=path.parent)
    assert isinstance(kernel, ir.Opaque)
    assert "in place" in kernel.reason


def test_held_sizes_find_the_layer_count_only(tmp_path: Path) -> None:
    layer, forward, inputs = RECURRENT["lstm_batch_first"]
    consts = "\n".join(f"{k} = {v}" for k, v in RNN_SIZES.items()) + "\nL = 2"
    text = module(forward, consts, inputs.replace("2, B, H", "L, B, H"),
                  init=f"self.rnn = {layer.replace('H, 2,', 'H, L,')}")
    path = write(tmp_path, "lstm_layers", text)
    sizes = {**RNN_SIZES, "L": 2}
    # the search's budget is the loading process's CPU time (a process of its own in the tool);
    # this test process has used some already
    budget = time.process_time() + HELD_SEARCH_CPU_S
    program = load_program(path, sizes)
    assert held_sizes(program, lower_program(program), budget) == {"L": 2}
    program = load_program(path, RNN_SIZES)  # L not a size: nothing to hold
    assert held_sizes(program, lower_program(program), budget) == {}


MODELS = Path(__file__).resolve().parent.parent / "examples" / "pytorch_models" / "models"
SMALL = {"batch_size": 3, "seq_len": 9, "input_size": 7, "hidden_size": 6, "num_classes": 4, "output_size": 5}


@pytest.mark.slow
def test_model_new_carries_state_and_draws_like_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through `translate run`: the stateful RNN and the LSTM drawing its initial states
    validate, and their ModelNew, called twice under the same seeds as Model, returns
    Model's results both times (the state is stored back, the draws come in Model's order)."""
    import os
    import shutil
    import textwrap

    from graph.cli import main

    os.environ.setdefault("TRITON_INTERPRET", "1")
    (tmp_path / "models").mkdir()
    for stem in ("rnn_state", "lstm"):
        shutil.copy(MODELS / f"{stem}.py", tmp_path / "models")
    (tmp_path / "workflows.yaml").write_text(textwrap.dedent(f"""\
        workflows:
          m:
            language: pytorch
            sources: [models/*.py]
            targets: [triton]
            sizes: {SMALL}
            values: {{num_layers: 2}}
            validate: {{trials: 2}}
        """))
    assert main(["run", str(tmp_path)]) == 0
    said = capsys.readouterr().err  # progress lines go to stderr
    assert "loading models/lstm.py (1/2)" in said and "loading models/rnn_state.py (2/2)" in said
    out = tmp_path / "out" / "m"
    for stem in ("rnn_state", "lstm"):
        path = out / "pytorch" / f"{stem}_model.py"
        text = path.read_text()
        mod = _import(path)
        for k, v in {**SMALL, "num_layers": 2}.items():
            if hasattr(mod.source, k):
                setattr(mod.source, k, v)
        torch.manual_seed(0)
        model = mod.Model(*mod._INIT_INPUTS).eval()
        torch.manual_seed(0)
        new = mod.ModelNew(*mod._INIT_INPUTS).eval()
        torch.manual_seed(5)
        inputs = mod.get_inputs()
        for call in range(2):
            torch.manual_seed(100 + call)
            want = model(*inputs)
            torch.manual_seed(100 + call)
            got = new(*inputs)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        if stem == "rnn_state":
            assert "_store(self, 'hidden'" in text
            torch.testing.assert_close(new.hidden, model.hidden, rtol=1e-4, atol=1e-5)
        else:
            assert text.count("torch.randn(") >= 2 and "drawn by the caller" in text


def test_the_whole_model_example_set() -> None:
    from graph.config import load

    repo = MODELS.parent.parent.parent
    stems = {f.stem for f in MODELS.glob("*.py")}
    assert stems == {"mlp", "residual_block", "gpt_block", "lstm", "gru", "rnn_state"}
    wf = load(MODELS.parent).workflow("models")
    root = load(repo).workflow("pytorch_models")
    assert root.root == MODELS.parent and root.sizes == wf.sizes and root.files() == wf.files()
    assert root.region("lstm").values == wf.region("lstm").values
    assert root.region("lstm").values["num_layers"] == 3 and root.region("gru").values["num_layers"] == 2


ATTENTION = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, q, k, v):
        att = torch.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1)
        return att @ v


B, H, T, D = 2, 3, 9, 8


def get_inputs():
    return [torch.randn(B, H, T, D), torch.randn(B, H, T, D), torch.randn(B, H, T, D)]


def get_init_inputs():
    return []
'''


@pytest.mark.slow
def test_batched_matmul_over_two_batch_dims_validates_with_kokkos(tmp_path: Path) -> None:
    """Attention's (batch, head) matrix products run in the C++ targets too (flattened batch)."""
    import json
    import textwrap

    from graph.cli import main

    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "attention.py").write_text(ATTENTION)
    (tmp_path / "workflows.yaml").write_text(textwrap.dedent("""\
        workflows:
          a:
            language: pytorch
            sources: [models/*.py]
            targets: [kokkos, cuda]
            validate: {trials: 2}
        """))
    assert main(["run", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "out" / "a" / "report.json").read_text())
    targets = doc["regions"][0]["targets"]
    assert targets["kokkos"]["status"] == "validated", targets["kokkos"]
    assert targets["cuda"]["status"] in ("compiled", "validated"), targets["cuda"]


def test_host_plan_and_the_report_say_how_a_model_runs(tmp_path: Path) -> None:
    from graph.report import render_markdown
    from targets.torch_module import host_plan

    path = write(tmp_path, "stateful", STATEFUL)
    kernel = lower_program(load_program(path, None), root=path.parent)
    assert isinstance(kernel, ir.Kernel)
    plan = host_plan(kernel, "")  # draws and state stay outside the graph: it is still on
    assert "one CUDA graph per input shape" in plan and "Random draws and the model's state" in plan
    layer, forward, inputs = RECURRENT["gru_bidirectional"]
    consts = "\n".join(f"{k} = {v}" for k, v in RNN_SIZES.items())
    gru = lower(write(tmp_path, "gru", module(forward, consts, inputs, init=f"self.rnn = {layer}")), RNN_SIZES)
    assert "one CUDA graph per input shape" in host_plan(gru, "def gru(x):\n    pass\n")
    assert "CUDA graphs off" in host_plan(gru, "n = int(flag.item())\n")  # a host read-back
    region = {"name": "gru", "source": "models/gru.py", "line": 3, "status": "translated", "reason": None,
              "targets": {"triton": {"status": "validated", "rel_l2_err": 1e-7, "trials": 4}},
              "loops": [{"var": "step1", "line": 3, "kind": "serial", "reason": "time steps"}],
              "ops": [{"op": "generated kernel: fused copy -> out (nest 1)", "runs_as": "generated kernel"},
                      {"op": "recurrent: gru at models/gru.py:3 ...", "runs_as": "host loop"},
                      {"op": "capture: torch.export", "runs_as": "note"}],
              "model_new": "pytorch/gru_model.py", "host_plan": "on a GPU the forward is one CUDA graph"}
    text = render_markdown("w", [region], [])
    assert "- generated kernel: fused copy -> out (nest 1)" in text
    assert "- host loop: gru at models/gru.py:3" in text
    assert "ModelNew: `pytorch/gru_model.py`; host plan: on a GPU" in text
    assert "loop `step1`" not in text and "capture: torch.export" not in text
