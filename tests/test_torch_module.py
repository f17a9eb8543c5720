"""targets.torch_module: the generated ModelNew is a drop-in for Model (same
constructor, same state_dict keys, load_state_dict works) whose forward runs the
Triton launcher (interpreter here) and matches Model on fresh inputs; it never
calls the original forward or torch compute ops."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from targets.torch_module import ModelNewError, classify_ops, model_path, render_model_new, write_model_new
from tests import torch_stubs as stubs
from translate import ir

os.environ.setdefault("TRITON_INTERPRET", "1")


def _import(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"kt_test_{path.stem}_{id(path)}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def generated(tmp_path: Path) -> tuple[Path, Path]:
    src = tmp_path / "proj" / "swish.py"
    src.parent.mkdir()
    src.write_text(stubs.SWISH_MODEL)
    out = tmp_path / "out"
    (out / "triton").mkdir(parents=True)
    (out / "triton" / "swish_triton.py").write_text(stubs.SWISH_LAUNCHER.format(name="swish"))
    kernel = stubs.swish_kernel("swish")
    kernel = ir.Kernel(kernel.name, kernel.params, (), (), kernel.origin,
                       notes=("fused elementwise kernel: mul, sigmoid, add, mul",))
    path = write_model_new(kernel, src, out, kernel.notes)
    assert path == out / model_path(kernel)
    return src, path


def test_model_new_is_a_drop_in(generated: tuple[Path, Path]) -> None:
    src, path = generated
    mod = _import(path)
    program = stubs.load_program(src, {"batch_size": 5, "dim": 37})
    model = program.make_model(3)
    model_new_cls = mod.model_new_class(program.model_cls)
    torch.manual_seed(99)  # ModelNew's own init differs from model's: load_state_dict must carry the weights
    new = model_new_cls(*program.init_inputs).eval()
    assert set(new.state_dict()) == set(model.state_dict()) == {"post.bias", "gain"}
    new.load_state_dict(model.state_dict())
    for seed in (1, 2):
        x = program.make_inputs(seed)[0]
        with torch.no_grad():
            want = model(x)
            got = new(x)
        assert got.shape == want.shape and got.dtype == want.dtype
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    # the file-level ModelNew subclasses the file's own Model (full-size constants)
    assert issubclass(mod.ModelNew, mod.Model) and mod.ModelNew.__name__ == "ModelNew"
    full = mod.ModelNew(*mod.get_init_inputs())
    assert full.post.bias.shape == (16384,)


def test_forward_calls_only_the_launcher(generated: tuple[Path, Path]) -> None:
    text = generated[1].read_text()
    body = text.split("        def forward(self, *inputs", 1)[1].split("ModelNew.__qualname__", 1)[0]
    assert "super()" not in body and "Model.forward" not in body
    allowed = {"torch.empty", "torch.float32", "torch.device"}
    used = set(re.findall(r"torch\.\w+", body))
    assert used <= allowed, used - allowed
    assert "_kernels(self, (" in body and "fused elementwise kernel" in text.split('"""')[0]
    # the launch helper runs the launcher, directly or as a CUDA graph, and no torch compute op
    helper = text.split("def _kernels(", 1)[1].split("\ndef ", 1)[0]
    assert "_launch(*args)" in helper and "_launch(*static)" in helper
    assert set(re.findall(r"torch\.[\w.]+", helper)) <= {"torch.Tensor", "torch.cuda.Stream", "torch.cuda.stream",
                                                          "torch.cuda.current_stream", "torch.cuda.CUDAGraph",
                                                          "torch.cuda.graph"}
    # the file carries the model file and the launcher: no path to either, nothing of this machine
    assert "proj" not in text and "swish_triton.py'" not in text and "Path(__file__)" not in text
    assert "# Inference only" in text


def test_model_new_stands_on_its_own(generated: tuple[Path, Path], tmp_path: Path) -> None:
    """Copied anywhere, or exec'd from a string as KernelBench's harness loads code, without
    the model file or the launcher beside it."""
    src, path = generated
    text = path.read_text()
    shutil.rmtree(src.parent)
    shutil.rmtree(path.parent.parent / "triton")
    elsewhere = tmp_path / "elsewhere" / "model_new.py"
    elsewhere.parent.mkdir()
    elsewhere.write_text(text)
    namespaces = [vars(_import(elsewhere)), {}]
    exec(compile(text, "<string>", "exec"), namespaces[1])
    x = torch.randn(3, 16384)
    for ns in namespaces:
        torch.manual_seed(0)
        model = ns["Model"](*ns["get_init_inputs"]())
        new = ns["ModelNew"](*ns["get_init_inputs"]())
        new.load_state_dict(model.state_dict())
        with torch.no_grad():
            torch.testing.assert_close(new(x), model(x), atol=1e-5, rtol=1e-5)


def test_dims_from_parameters_and_scalar_inputs() -> None:
    i32, f32 = ir.DType.I32, ir.DType.F32
    k = ir.Kernel("lin", (
        ir.Array("x", f32, (ir.Var("b", i32), ir.Var("k", i32)), ir.Layout.RIGHT, binding="input:0"),
        ir.Scalar("alpha", f32, binding="input:1"),
        ir.Array("fc_weight", f32, (ir.Var("n", i32), ir.Var("k", i32)), ir.Layout.RIGHT, binding="param:fc.weight"),
        ir.Array("out", f32, (ir.Var("b", i32), ir.Var("n", i32)), ir.Layout.RIGHT, ir.Intent.OUT,
                 binding="output:0"),
        ir.Scalar("b", i32, binding="dim:0:0"), ir.Scalar("k", i32, binding="dim:0:1"),
        ir.Scalar("n", i32, binding="dim:param:fc.weight:0"),
    ), (), (ir.Extern("matmul", ("x", "fc_weight"), ("out",), (("trans_b", True),)),), ir.Origin("lin.py", 3))
    text = render_model_new(k, Path("/p/lin.py"), Path("/p/out"))
    assert "d_n = int(_tensor(self, 'fc.weight').shape[0])" in text
    assert "float(inputs[1])" in text
    assert "out0 = torch.empty((d_b, d_n), dtype=torch.float32, device=inputs[0].device)" in text
    assert ("_kernels(self, (inputs[0].contiguous().reshape(-1), float(inputs[1]), "
            "_tensor(self, 'fc.weight').detach().to(inputs[0].device)") in text
    assert "outputs=(3,), kept=(2,))" in text  # out0 is written; the weight is the model's own
    ops = classify_ops(("matmul x @ fc_weight^T as a library call (cuBLAS through torch)",), k)
    assert ops == [{"op": "matmul x @ fc_weight^T as a library call (cuBLAS through torch)",
                    "runs_as": "library call"}]
    assert classify_ops((), k)[0]["op"].startswith("matmul (x, fc_weight -> out)")
    bad = ir.Kernel("z", (ir.Array("out", f32, (ir.Var("q", i32),), ir.Layout.RIGHT, ir.Intent.OUT,
                                   binding="output:0"),), (), (), ir.Origin("z.py", 1))
    with pytest.raises(ModelNewError, match="'q'"):
        render_model_new(bad, Path("/p/z.py"), Path("/p/out"))


POOL = '''\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool1d(8, stride=1, padding=4, dilation=3)

    def forward(self, x):
        return self.pool(x)


batch_size = 2
features = 3
sequence_length = 20


def get_inputs():
    return [torch.rand(batch_size, features, sequence_length)]


def get_init_inputs():
    return []
'''


def test_model_new_refuses_an_input_extent_its_kernels_were_built_for(tmp_path: Path) -> None:
    # the pooled length is a number in the kernels (KernelBench's MaxPool1d): at another input
    # length ModelNew must refuse, not return the validated length's shape
    from parsers.torch import load_program, lower_program
    from targets.base import get_renderer

    src = tmp_path / "proj" / "pool.py"
    src.parent.mkdir()
    src.write_text(POOL)
    program = load_program(src, {"batch_size": 2, "features": 3, "sequence_length": 20})
    kernel = lower_program(program)
    assert isinstance(kernel, ir.Kernel), getattr(kernel, "reason", kernel)
    x_shape = [ir.expr_str(e) for p in kernel.params if p.binding == "input:0" for e in p.shape]
    assert x_shape[-1] == "20"  # the length the kernels are built for
    out = tmp_path / "out"
    get_renderer("triton").render(kernel).write(out)
    mod = _import(write_model_new(kernel, src, out, kernel.notes))
    new = mod.model_new_class(program.model_cls)().eval()
    x = torch.rand(5, 3, 20)  # another batch and channel count: those are read from the input
    torch.testing.assert_close(new(x), program.model_cls().eval()(x))
    with pytest.raises(ValueError, match=r"dimension 2 = 20 .* got shape \(5, 3, 31\)"):
        new(torch.rand(5, 3, 31))
