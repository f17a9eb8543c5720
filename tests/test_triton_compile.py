"""Generated Triton kernels compiled for sm_90 without a GPU (``triton.compile`` with an explicit
target, in a subprocess: the interpreter the other Triton tests run in patches ``triton.language``). The
interpreter does not type-check: a variable of one type in one branch of an ``if`` and another type in
the other ran there and failed only when compiled."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from targets.base import get_renderer  # noqa: E402
from tests.test_targets_triton import fsum_kernel, lap7_kernel  # noqa: E402
from translate import ir  # noqa: E402
from translate.schedule import Schedule  # noqa: E402

POINTER = {ir.DType.F64: "*fp64", ir.DType.F32: "*fp32", ir.DType.I32: "*i32", ir.DType.I64: "*i64"}
CONSTANTS = {"BLOCK": 256, "PLANES": 4, "ROWS": 4, "TILES": 2}
# run with TRITON_INTERPRET=0: argv[1] the module, argv[2] {kernel: [signature, constexprs]}; exit 2 when
# this Triton cannot compile for sm_90 here (no CUDA backend or no ptxas)
COMPILE = """
import importlib.util, json, pathlib, sys, tempfile
import triton

def load(path):
    spec = importlib.util.spec_from_file_location(pathlib.Path(path).stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

try:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    probe = pathlib.Path(tempfile.mkdtemp()) / "kt_probe.py"
    probe.write_text("import triton\\n\\n\\n@triton.jit\\ndef nothing(x):\\n    pass\\n")
    triton.compile(ASTSource(fn=load(probe).nothing, signature={"x": "*fp64"}, constexprs={}),
                   target=GPUTarget("cuda", 90, 32))
except Exception as e:
    print(f"cannot compile for sm_90 here: {e}")
    sys.exit(2)
mod = load(sys.argv[1])
for name, (sig, consts) in json.loads(sys.argv[2]).items():
    for warps in (4, 8):
        k = triton.compile(ASTSource(fn=getattr(mod, name), signature=sig, constexprs=consts),
                           target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
        assert k.asm["cubin"]
    print("compiled", name)
"""


def signature(params: str, kernel: ir.Kernel) -> tuple[dict[str, str], dict[str, int]]:
    """Triton's signature of a generated ``@triton.jit`` parameter list: arrays from the kernel's
    declarations, a reduction's partials (``NAME_part``) and a serial segment's results (``NAME_out``)
    of their variable's type, the rows of partials several reductions share (``partials``,
    ``partials_<dtype>``) of that type, annotated fp64 scalars, other scalars int64, constexprs at
    fixed values."""
    arrays = {p.name: p.dtype for p in kernel.params if isinstance(p, ir.Array)}
    scalars = {p.name: p.dtype for p in kernel.params + kernel.locals if isinstance(p, ir.Scalar)}
    for lp in (n for n in ir.walk(kernel) if isinstance(n, ir.Loop)):
        dtypes = [r.dtype for r in lp.reductions if not r.loc]
        shared = {d for d in dtypes if dtypes.count(d) > 1}
        arrays |= {f"partials_{d.name.lower()}": d for d in shared}
        if len(shared) == 1:
            arrays["partials"] = shared.pop()
    sig: dict[str, str] = {}
    consts: dict[str, int] = {}
    for param in (p.strip() for p in params.split(",")):
        name, _, note = (x.strip() for x in param.partition(":"))
        if note == "tl.constexpr":
            sig[name], consts[name] = "constexpr", CONSTANTS[name]
        elif note == "tl.float64":
            sig[name] = "fp64"
        elif name in arrays:
            sig[name] = POINTER[arrays[name]]
        else:
            stem = name.rpartition("_")[0] if name.endswith(("_part", "_out")) else None
            sig[name] = POINTER[scalars.get(stem, ir.DType.F64)] if stem else "i64"
    return sig, consts


def compile_file(path: Path, kernels: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    return subprocess.run([sys.executable, "-c", COMPILE, str(path), json.dumps(kernels)], env=env,
                          capture_output=True, text=True, timeout=300)


def compiled(path: Path, kernels: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """:func:`compile_file`'s result; a skip where this Triton cannot compile for sm_90 here."""
    done = compile_file(path, kernels)
    if done.returncode == 2:
        pytest.skip(done.stdout.strip())
    return done


@pytest.mark.parametrize("late", [False, True])
@pytest.mark.parametrize("build", [fsum_kernel, lap7_kernel])
def test_walks_compile_for_sm90(tmp_path: Path, build: Any, late: bool) -> None:
    """The 2-D walk with reductions and the 3-D plane walk, with lane guards and with late masks (whose
    two loops, a constant and a dynamic trip count, must give their variables one type)."""
    kernel = build()
    rendered = get_renderer("triton", Schedule(masks_after_walk=late)).render(kernel, Schedule(masks_after_walk=late))
    (path,) = [p for p in rendered.write(tmp_path) if p.name.endswith("_triton.py")]
    kernels = {m.group(1): signature(m.group(2), kernel)
               for m in re.finditer(r"@triton\.jit\ndef ([^_]\w*)\((.*)\):", rendered.source)}
    assert list(kernels) == [f"{kernel.name}_loop1"] and ("if first + PLANES" in rendered.source) == late
    done = compiled(path, kernels)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["compiled", f"{kernel.name}_loop1"]


def test_the_compile_check_fails_on_mismatched_branch_types(tmp_path: Path) -> None:
    """The check can fail: a loop variable of int32 in one branch of an if and of int64 in the other."""
    path = tmp_path / "bad.py"
    path.write_text("import triton\nimport triton.language as tl\n\n\n"
                    "@triton.jit\ndef bad(x, n, BLOCK: tl.constexpr):\n"
                    "    lane = tl.arange(0, BLOCK)\n    acc = tl.zeros([BLOCK], tl.float64)\n"
                    "    if n > 4:\n        for run in range(4):\n            acc += tl.load(x + lane + run)\n"
                    "    else:\n        for run in range(0, n - 1):\n            acc += tl.load(x + lane + run)\n"
                    "    tl.store(x + lane, acc)\n")
    done = compiled(path, {"bad": [{"x": "*fp64", "n": "i64", "BLOCK": "constexpr"}, {"BLOCK": 64}]})
    assert done.returncode != 0 and "Mismatched type for run" in done.stderr


def test_max_reductions_and_first_index_scans_compile_for_sm90(tmp_path: Path) -> None:
    """vamax's conditional max and IDAMAX's pair reductions (an int32 partial of an int64 lane index)."""
    from tests.test_argreduce import scans_ir
    from tests.test_condreduce import condmax_ir
    from translate.analysis import analyze

    for kernel in (analyze(condmax_ir()), analyze(scans_ir())):
        rendered = get_renderer("triton").render(kernel)
        (path,) = [p for p in rendered.write(tmp_path) if p.name.endswith("_triton.py")]
        kernels = {m.group(1): signature(m.group(2), kernel)
                   for m in re.finditer(r"@triton\.jit\ndef ([^_]\w*)\((.*)\):", rendered.source)}
        done = compiled(path, kernels)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.split()[1::2] == list(kernels)
        loops = 1 if kernel.name == "condmax" else 2  # the max reduction; the scans' pair reductions
        assert {f"{kernel.name}_loop{k}" for k in range(1, loops + 1)} <= set(kernels)
