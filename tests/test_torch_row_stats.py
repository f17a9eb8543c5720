"""Row statistics of a normalization over a middle dim (RMSNorm over channels, softmax
over dim 1, a layer norm over all but the batch dim, group norms) are computed once per
kept index: the nest runs in parallel over the kept dims only, the statistic's reduction
loop first and then a serial row loop over the reduced dims writing the outputs; no
reduction runs inside that row loop. With 4-D and 5-D outputs the leading dims used to be
merged into one parallel loop before the nest builder looked at which dims a statistic
depends on, so RMSNorm's mean over C (keyed by (b, h, w)) looked dependent on the merged
b*C+c index and was recomputed for every channel (C times the loads; 0.14x of eager on an
H100). A group norm's statistics, keyed by (n, c // (C/G)), were computed once per
channel; the nest's channel dim is now split into a parallel loop over the groups and a
serial one over the channels of a group. Checked with the IR interpreter and the Triton one."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import torch

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

from parsers.torch import load_program  # noqa: E402
from targets.base import get_renderer  # noqa: E402
from tests.test_targets_torch import load  # noqa: E402
from tests.test_torch_frontend import check, lower, module, write  # noqa: E402
from translate import ir  # noqa: E402

GN_INIT = """
        self.gn = nn.GroupNorm(4, c)
        with torch.no_grad():
            self.gn.weight.normal_(1.0, 0.1)
            self.gn.bias.normal_(0.0, 0.1)"""
RMS = "return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)"
DIMS4 = "batch, chans, h, w = 2, 8, 5, 6"
X4 = "[torch.randn(batch, chans, h, w)]"
OTHER4 = {"batch": 3, "chans": 5, "h": 4, "w": 7}

CASES: dict[str, tuple[str, str, str, str, str, str, int, dict[str, int]]] = {
    # name: (forward, consts, inputs, init, init_inputs, params, parallel loops, other sizes)
    "rms_norm_channels": (RMS, DIMS4, X4, "", "[]", "", 3, OTHER4),
    "softmax_channels": ("return torch.softmax(x * 2.0, dim=1) + x", DIMS4, X4, "", "[]", "", 3, OTHER4),
    "layer_norm_chw": ("return self.ln(x)", DIMS4, X4, "self.ln = nn.LayerNorm([c, hh, ww])", "[chans, h, w]",
                       "c, hh, ww", 1, {"batch": 3, "chans": 5}),  # the capture holds h and w
    "group_norm_3d": ("return torch.relu(self.gn(x))", "batch, chans, d, h, w = 2, 8, 3, 4, 5",
                      "[torch.randn(batch, chans, d, h, w)]", GN_INIT, "[chans]", "c", 2,
                      {"batch": 3, "chans": 12, "d": 2, "h": 3, "w": 6}),
    "group_norm_sigmoid": ("return self.gn(torch.sigmoid(x) * 2.0) + 1.0", DIMS4, X4, GN_INIT, "[chans]", "c", 2,
                           {"batch": 3, "chans": 4, "h": 3, "w": 7}),
}
GROUPS = 4


def _nest(name: str, tmp_path: Path) -> tuple[Path, ir.Kernel, ir.Loop]:
    fwd, consts, inputs, init, ii, params, _, _ = CASES[name]
    path = write(tmp_path, name, module(fwd, consts, inputs, init, ii, params))
    kernel = lower(path)
    loops = [s for s in kernel.body if isinstance(s, ir.Loop)]
    assert len(loops) == 1, kernel.body  # one fused nest, no local for the statistic
    return path, kernel, loops[0]


def _is_row_loop(s: ir.Stmt) -> bool:
    return isinstance(s, ir.Loop) and s.reason.startswith("row loop")


@pytest.mark.parametrize("name", sorted(CASES))
def test_statistic_is_computed_once_per_kept_index(tmp_path: Path, name: str) -> None:
    path, kernel, nest = _nest(name, tmp_path)
    chain = [nest]
    while len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], ir.Loop) \
            and chain[-1].body[0].kind is ir.LoopKind.PARALLEL:
        chain.append(chain[-1].body[0])
    assert chain[0].kind is ir.LoopKind.PARALLEL and len(chain) == CASES[name][6], [lp.var for lp in chain]
    body = chain[-1].body
    rows = [s for s in body if _is_row_loop(s)]
    assert len(rows) == 1, body  # the outputs are written by one serial row loop (nest)...
    assert body[-1] is rows[0]  # ...after the statistics
    reductions = [s for s in body if isinstance(s, ir.Loop) and s.reason == "reduction loop"]
    assert reductions  # computed once per parallel iteration, before the row loop
    inside = [n for n in ir.walk(rows[0]) if isinstance(n, ir.Loop) and n.reason == "reduction loop"]
    assert not inside  # nothing is reduced per output element
    check(path, kernel, None, rtol=1e-5)
    check(path, kernel, CASES[name][7], rtol=1e-5)


def _run_triton(kernel: ir.Kernel, tmp_path: Path, x: torch.Tensor, state: dict[str, torch.Tensor]
                ) -> tuple[str, torch.Tensor]:
    """Renders ``kernel`` for Triton, runs it (the interpreter on a CPU) on ``x`` with the
    parameters ``state``; returns the source and the output."""
    rendered = get_renderer("triton").render(kernel)
    mod = load(rendered, tmp_path, kernel.name)
    out = torch.full(tuple(x.shape), float("nan"))
    args: list[object] = []
    for p in kernel.params:
        binding = p.binding or ""
        if binding.startswith("input:"):
            args.append(x.contiguous().reshape(-1))
        elif binding.startswith("param:"):
            args.append(state[binding.split(":", 1)[1]].detach().contiguous().reshape(-1))
        elif binding.startswith("output:"):
            args.append(out.view(-1))
        else:
            args.append(int(x.shape[int(binding.rsplit(":", 1)[1])]))
    getattr(mod, Path(rendered.entry).stem.removesuffix("_triton"))(*args)
    return rendered.source, out


def _model_and_triton(name: str, tmp_path: Path, sizes: dict[str, int] | None = None
                      ) -> tuple[str, torch.Tensor, torch.Tensor]:
    """The generated Triton source, its output and eager's on the case's inputs (at ``sizes``)."""
    path, kernel, _ = _nest(name, tmp_path)
    program = load_program(path, sizes)
    model = program.make_model(0)
    x = program.make_inputs(1)[0]
    source, got = _run_triton(kernel, tmp_path, x, dict(model.named_parameters()))
    with torch.no_grad():
        want = model(x)
    return source, got, want


def test_triton_rms_norm_reduces_before_the_row_loop_and_matches_eager(tmp_path: Path) -> None:
    source, got, want = _model_and_triton("rms_norm_channels", tmp_path)
    assert "i1 in [0, x_d0), i2 in [0, x_d2), i3 in [0, x_d3)" in source  # lanes over (b, h, w), not b*C+c
    lines = source.splitlines()
    row = next(k for k, line in enumerate(lines) if re.match(r"\s*for j\d+ in range\(0, x_d1\)", line))
    indent = len(lines[row]) - len(lines[row].lstrip())
    assert any(re.match(r"\s*for r\d+ in range\(0, x_d1\)", line) for line in lines[:row])  # the statistic
    inner = []
    for line in lines[row + 1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        inner.append(line)
    assert inner and not any(re.match(r"\s*for ", line) for line in inner)  # nothing reduced per output
    assert any("tl.store(out" in line for line in inner)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["group_norm_3d", "group_norm_sigmoid"])
def test_group_norm_nest_runs_over_groups(tmp_path: Path, name: str) -> None:
    """Parallel over (n, group), the row: the channels of the group (a serial loop over
    C / G first) and the spatial dims; the weights are read per channel inside the row."""
    _, kernel, nest = _nest(name, tmp_path)
    groups = nest.body[0]
    assert isinstance(groups, ir.Loop) and groups.kind is ir.LoopKind.PARALLEL
    assert groups.stop == ir.Const(GROUPS, ir.DType.I32)
    row = groups.body[-1]
    assert _is_row_loop(row) and isinstance(row, ir.Loop)
    assert isinstance(row.stop, ir.BinOp) and row.stop.op == "div"  # C // G channels
    assert any("split" in n for n in kernel.notes)


@pytest.mark.parametrize(("name", "sizes"), [("group_norm_3d", None), ("group_norm_sigmoid", None),
                                             ("group_norm_3d", {"chans": 8, "d": 8, "h": 16, "w": 20})])
def test_triton_group_norm_is_a_row_program_per_group_and_matches_eager(
        tmp_path: Path, name: str, sizes: dict[str, int] | None) -> None:
    """One program per (n, group); the last size has rows of 2 * 8 * 16 * 20 = 5120 elements,
    longer than a block: the chunked form."""
    source, got, want = _model_and_triton(name, tmp_path, sizes)
    assert "one program per (i1, i2)" in source and f"i2_trip = max(0, {GROUPS})" in source
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # masked-off lanes keep a zero sum
@pytest.mark.parametrize("name", ["softmax_channels", "layer_norm_chw"])
def test_triton_row_loops_match_eager(tmp_path: Path, name: str) -> None:
    _, got, want = _model_and_triton(name, tmp_path)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
