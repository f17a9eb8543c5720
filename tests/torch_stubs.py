"""Test helpers for the PyTorch side without the frontend: a minimal
``load_program`` (the frontend's API: module constants overridden by ``sizes``,
seeded ``make_model`` / ``make_inputs``), hand-written kernels' signatures and
hand-written Triton launchers, correct and deliberately wrong."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from translate import ir

F32, I32 = ir.DType.F32, ir.DType.I32
RIGHT = ir.Layout.RIGHT


@dataclass
class StubProgram:
    namespace: dict[str, Any]

    @property
    def model_cls(self) -> type:
        return self.namespace["Model"]

    @property
    def init_inputs(self) -> list[Any]:
        return list(self.namespace["get_init_inputs"]())

    def make_model(self, seed: int) -> torch.nn.Module:
        torch.manual_seed(seed)
        return self.model_cls(*self.init_inputs).eval()

    def make_inputs(self, seed: int) -> list[Any]:
        torch.manual_seed(seed + 1_000_003)
        return list(self.namespace["get_inputs"]())


def load_program(path: Path, sizes: Mapping[str, int] | None = None) -> StubProgram:
    """Run the file with its module-level ``NAME = <int>`` constants replaced by ``sizes``."""
    tree = ast.parse(Path(path).read_text(), str(path))
    sizes = dict(sizes or {})
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in sizes):
            node.value = ast.copy_location(ast.Constant(int(sizes[node.targets[0].id])), node.value)
    module = ModuleType(Path(path).stem)
    module.__file__ = str(path)
    exec(compile(tree, str(path), "exec"), module.__dict__)  # noqa: S102 - the test's own file
    return StubProgram(module.__dict__)


def v(name: str) -> ir.Var:
    return ir.Var(name, I32)


def row_kernel(name: str, params: tuple[ir.Decl, ...] = ()) -> ir.Kernel:
    """x (d0, d1) [+ params] -> out (d0, d1), dims from input 0 (body not needed here)."""
    shape = (v("d0"), v("d1"))
    decls: list[ir.Decl] = [ir.Array("x", F32, shape, RIGHT, ir.Intent.IN, binding="input:0"), *params,
                            ir.Array("out", F32, shape, RIGHT, ir.Intent.OUT, binding="output:0"),
                            ir.Scalar("d0", I32, binding="dim:0:0"), ir.Scalar("d1", I32, binding="dim:0:1")]
    return ir.Kernel(name, tuple(decls), (), (), ir.Origin("model.py", 1))


SOFTMAX_MODEL = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 16384
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

# A Triton row softmax; {row}, {mask} and {axis_note} are patched to plant bugs.
SOFTMAX_LAUNCHER = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_rows(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = {mask}
    src = {row}
    x = tl.load(x_ptr + src * n_cols + cols, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    e = tl.where(mask, e, 0.0)
    s = tl.sum(e, axis=0)
    tl.store(out_ptr + r * n_cols + cols, e / s, mask=mask)


def {name}(x, out, d0, d1):
    block = triton.next_power_of_2(max(d1, 1))
    _softmax_rows[(d0,)](x, out, d0, d1, BLOCK=block)
    return {{}}
'''

SOFTMAX_WRONG_AXIS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_cols(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    c = tl.program_id(0)
    rows = tl.arange(0, BLOCK)
    mask = rows < n_rows
    x = tl.load(x_ptr + rows * n_cols + c, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    e = tl.where(mask, tl.exp(x - m), 0.0)
    tl.store(out_ptr + rows * n_cols + c, e / tl.sum(e, axis=0), mask=mask)


def {name}(x, out, d0, d1):
    _softmax_cols[(d1,)](x, out, d0, d1, BLOCK=triton.next_power_of_2(max(d0, 1)))
    return {{}}
'''

CONSTANT_LAUNCHER = '''
def {name}(x, out, d0, d1):
    out.fill_(1.0 / d1)   # the mean of a softmax row: right on average, computes nothing
    return {{}}
'''


def softmax_launcher(name: str, bug: str = "") -> str:
    if bug == "wrong_axis":
        return SOFTMAX_WRONG_AXIS.format(name=name)
    if bug == "constant":
        return CONSTANT_LAUNCHER.format(name=name)
    row = "tl.minimum(r + 1, n_rows - 1)" if bug == "row_off_by_one" else "r"
    mask = "cols < n_cols - 1" if bug == "missed_last" else "cols < n_cols"
    return SOFTMAX_LAUNCHER.format(name=name, row=row, mask=mask)


SWISH_MODEL = '''
import torch
import torch.nn as nn


class Post(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))


class Model(nn.Module):
    """(x * sigmoid(x) + post.bias) * gain; a nested parameter and a buffer."""

    def __init__(self, dim):
        super().__init__()
        self.post = Post(dim)
        self.register_buffer("gain", torch.rand(dim) + 0.5)

    def forward(self, x):
        return (x * torch.sigmoid(x) + self.post.bias) * self.gain


batch_size = 4096
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
'''

SWISH_LAUNCHER = '''
import triton
import triton.language as tl


@triton.jit
def _swish(x_ptr, b_ptr, g_ptr, out_ptr, n, n_cols, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    col = i % n_cols
    x = tl.load(x_ptr + i, mask=mask)
    b = tl.load(b_ptr + col, mask=mask)
    g = tl.load(g_ptr + col, mask=mask)
    tl.store(out_ptr + i, (x * tl.sigmoid(x) + b) * g, mask=mask)


def {name}(x, post_bias, gain, out, d0, d1):
    n = d0 * d1
    _swish[(triton.cdiv(n, 128),)](x, post_bias, gain, out, n, d1, BLOCK=128)
    return {{}}
'''


def swish_kernel(name: str) -> ir.Kernel:
    return row_kernel(name, (ir.Array("post_bias", F32, (v("d1"),), RIGHT, binding="param:post.bias"),
                             ir.Array("gain", F32, (v("d1"),), RIGHT, binding="param:gain")))
