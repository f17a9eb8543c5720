"""Triton row programs on reductions over several trailing dims (flattened into
one lane index) and on argmax/argmin (per-lane first best, combined across lanes):
lowered from PyTorch files, run in the interpreter on inputs made to break them
(ties, NaN, -inf, one-element rows, rows longer than a block) against torch."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from parsers.torch import load_program, lower_program  # noqa: E402
from targets.base import get_renderer  # noqa: E402
from translate import ir  # noqa: E402
from translate.schedule import Schedule  # noqa: E402

HEADER = "import torch\nimport torch.nn as nn\n\n"
DEV = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"


def kernel_for(tmp: Path, name: str, forward: str, rank: int) -> ir.Kernel:
    dims = ", ".join(f"d{k}" for k in range(rank))
    consts = "\n".join(f"d{k} = {3 + k}" for k in range(rank))
    src = (HEADER + "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
           f"    def forward(self, x):\n        return {forward}\n\n\n{consts}\n\n\n"
           f"def get_inputs():\n    return [torch.randn({dims})]\n\n\ndef get_init_inputs():\n    return []\n")
    path = tmp / f"{name}.py"
    path.write_text(src)
    kernel = lower_program(load_program(path, None), root=tmp)
    assert isinstance(kernel, ir.Kernel), getattr(kernel, "reason", kernel)
    return kernel


def launcher(tmp: Path, kernel: ir.Kernel, schedule: Schedule) -> tuple[ModuleType, str, str]:
    rendered = get_renderer("triton").render(kernel, schedule)
    path = tmp / f"{kernel.name}_{len(list(tmp.iterdir()))}.py"
    path.write_text(rendered.source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod, rendered.symbol, rendered.source


def call(mod: ModuleType, symbol: str, kernel: ir.Kernel, x: torch.Tensor, out_shape: tuple[int, ...],
         out_dtype: torch.dtype) -> torch.Tensor:
    arrays = [p for p in kernel.params if isinstance(p, ir.Array)]
    assert len(arrays) == 2, [p.name for p in kernel.params]
    out = torch.full(out_shape, -7, dtype=out_dtype, device=DEV).reshape(-1)
    args: dict[str, object] = {arrays[0].name: x.contiguous().reshape(-1).to(DEV), arrays[1].name: out}
    for p in kernel.params:
        if isinstance(p, ir.Scalar):
            m = re.fullmatch(r".*_d(\d+)", p.name)
            assert m, p.name
            args[p.name] = x.shape[int(m.group(1))]
    getattr(mod, symbol)(**args)
    return out.reshape(out_shape).cpu()


def test_mean_over_trailing_dims_is_one_flattened_row(tmp_path: Path) -> None:
    kernel = kernel_for(tmp_path, "mean_hw", "torch.mean(x, dim=(2, 3))", 4)
    mod, sym, src = launcher(tmp_path, kernel, Schedule())
    assert "row program" in src.lower() and "_flat" in src  # not one lane per output
    for shape in ((2, 3, 5, 7), (1, 2, 70, 65), (3, 1, 1, 1)):  # 4550 elements: chunked (block <= 4096)
        x = torch.randn(shape)
        got = call(mod, sym, kernel, x, shape[:2], torch.float32)
        torch.testing.assert_close(got, x.mean(dim=(2, 3)), atol=1e-5, rtol=1e-5)


def test_layer_norm_over_two_dims(tmp_path: Path) -> None:
    kernel = kernel_for(tmp_path, "ln2", "torch.nn.functional.layer_norm(x, x.shape[1:])", 3)
    mod, sym, src = launcher(tmp_path, kernel, Schedule())
    assert "_flat" in src
    for shape in ((2, 5, 7), (2, 70, 65)):
        x = torch.randn(shape) * 3 + 1
        got = call(mod, sym, kernel, x, shape, torch.float32)
        torch.testing.assert_close(got, torch.nn.functional.layer_norm(x, shape[1:]), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("fn", ["argmax", "argmin"])
def test_arg_reductions_pick_the_first_best(tmp_path: Path, fn: str) -> None:
    kernel = kernel_for(tmp_path, fn, f"torch.{fn}(x, dim=1)", 2)
    mod, sym, src = launcher(tmp_path, kernel, Schedule())
    assert "_take" in src and "_first" in src  # lane-parallel, not one lane per row
    g = torch.Generator().manual_seed(5)
    for n in (700, 5000):  # one chunk, and chunked (rows longer than the 4096 block)
        rows = [
            torch.randint(0, 3, (n,), generator=g).float(),  # many ties: the first one counts
            torch.full((n,), -float("inf")),  # nothing beats the initial value: index 0
            torch.randn(n, generator=g),
        ]
        nan_row = torch.randn(n, generator=g)
        nan_row[[300, 9, 650]] = float("nan")  # the first NaN wins, wherever the lanes see it
        rows.append(nan_row)
        inf_row = torch.randn(n, generator=g)
        inf_row[[513, 2]] = float("inf") if fn == "argmax" else -float("inf")
        rows.append(inf_row)
        for k, row in enumerate(rows):
            x = row.reshape(1, -1).repeat(3, 1)
            x[1] = x[1].flip(0)
            got = call(mod, sym, kernel, x, (3,), torch.int64)
            want = getattr(torch, fn)(x, dim=1)
            assert torch.equal(got, want), (n, k, got, want)
    x = torch.randn(4, 1)
    assert torch.equal(call(mod, sym, kernel, x, (4,), torch.int64), getattr(torch, fn)(x, dim=1))


def test_arg_reduction_row_program_fails_when_the_combine_is_wrong(tmp_path: Path) -> None:
    """The tie test above can fail: the same kernel with the lanes combined by the
    last lane instead of the first gives another index on a row of ties."""
    kernel = kernel_for(tmp_path, "argmax_bad", "torch.argmax(x, dim=1)", 2)
    mod, sym, src = launcher(tmp_path, kernel, Schedule())
    bad = src.replace("_first = tl.min(", "_first = tl.max(").replace(", 4611686018427387904)", ", -1)")
    assert bad != src
    path = tmp_path / "argmax_bad_mutant.py"
    path.write_text(bad)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    mutant = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mutant
    spec.loader.exec_module(mutant)
    x = torch.ones(2, 300)
    got = call(mutant, sym, kernel, x, (2,), torch.int64)
    assert not torch.equal(got, torch.argmax(x, dim=1))
