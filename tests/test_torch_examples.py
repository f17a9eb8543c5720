"""examples/pytorch_ops: every module loads at its workflow sizes (and at the
different-size trial's sizes) and runs eagerly; the set spans the ops the issue
asks for; the root workflows.yaml carries the same workflow."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from graph.config import load
from graph.pytorch_steps import file_sizes
from validation.torch_reference import alternate_attempts

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "pytorch_ops"
FILES = sorted((EXAMPLE / "models").glob("*.py"))
SINGLE = {"relu", "gelu", "softmax", "log_softmax", "layer_norm", "rms_norm", "sum_dim", "mean_dims", "argmax",
          "matmul", "linear", "conv2d", "max_pool"}
FUSED = {"swish_bias", "linear_bias_relu", "matmul_scale_gelu", "conv_relu_bias", "layernorm_gelu_scale",
         "rmsnorm_silu"}


def _workflow():  # noqa: ANN202
    return load(EXAMPLE).workflow("ops")


def test_the_example_set() -> None:
    stems = {f.stem for f in FILES}
    assert stems == SINGLE | FUSED
    assert len(stems) >= 14
    wf = _workflow()
    assert wf.language == "pytorch" and wf.targets == ["triton", "cuda", "kokkos"]
    root = load(REPO).workflow("pytorch_ops")
    assert root.root == EXAMPLE and root.sizes == wf.sizes and root.files() == wf.files()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_full_size_constants_in_the_file(path: Path) -> None:
    """KernelBench convention, GPU-sized constants (nothing run at full size here)."""
    tree = ast.parse(path.read_text())
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert {"Model", "get_inputs", "get_init_inputs"} <= names
    consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
              for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
    elements = 1
    for name in ("batch_size", "dim", "features", "dim1", "dim2", "channels", "height", "width", "M", "K",
                 "in_features", "in_channels"):
        if isinstance(consts.get(name), int):
            elements *= consts[name]
    assert elements >= 4096 * 4096, f"{path.stem}: inputs of {elements} elements are not GPU-sized"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_loads_and_runs_eagerly_at_workflow_sizes(path: Path) -> None:
    from parsers.torch import load_program

    sizes = file_sizes(_workflow(), path)
    assert sizes, f"{path.stem}: the workflow shrinks none of its constants"
    outs = []
    for label, trial_sizes in [("workflow", sizes), alternate_attempts(sizes, path)[0]]:
        program = load_program(path, trial_sizes)
        model = program.make_model(0)
        inputs = program.make_inputs(0)
        n = sum(x.numel() for x in inputs if isinstance(x, torch.Tensor))
        assert 0 < n <= 20_000, f"{path.stem} ({label}): {n} input elements is too many for the interpreter"
        with torch.no_grad():
            y = model(*inputs)
        assert isinstance(y, torch.Tensor) and y.numel() > 0
        if y.is_floating_point():
            assert torch.isfinite(y).all() and float(y.std()) > 0, f"{path.stem} ({label}): degenerate output"
        outs.append(y.shape)
    assert outs[0] != outs[1], f"{path.stem}: the different-size trial has the same output shape"
