"""The portable regression suite's Python side: one pytest file that runs each region's
Triton launcher on the golden cases (the format of validation.golden_export) and judges the
outputs as validation does. It needs torch, triton and pytest, not kernel-translate.
"""

from __future__ import annotations

from collections.abc import Iterable

TEMPLATE = '''"""Regression tests of the Triton translations of workflow {workflow} on the golden cases
recorded by kernel-translate (cases/<region>/: the format validation/golden_export.py
documents). Needs torch, triton and pytest: ``pytest test_triton.py`` (on a CPU set
TRITON_INTERPRET=1). Each launcher is called as validation called it (CONVENTIONS.md)."""

import importlib.util
import math
import os
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
TRITON = HERE.parent / "triton"
REGIONS = {regions}
DTYPES = {{"f64": torch.float64, "f32": torch.float32, "i32": torch.int32, "i64": torch.int64,
          "bool": torch.int32, "char": torch.int8}}
DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
if DEVICE == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"


def cases():
    for region in REGIONS:
        for case in (HERE / "cases" / region / "cases.txt").read_text().split():
            yield region, case


def launcher(region):
    spec = importlib.util.spec_from_file_location(f"{{region}}_triton", TRITON / f"{{region}}_triton.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, region)


def scalar(dtype, text):
    if dtype == "char":
        return chr(int(text))
    if dtype in ("i32", "i64"):
        return int(text)
    if dtype == "bool":
        return bool(int(text))
    return float(text)


def read(folder, dtype, count, name):
    data = torch.frombuffer(bytearray((folder / name).read_bytes()), dtype=DTYPES[dtype])
    assert data.numel() == int(count)
    return data


def judge(what, got, ref, tol, tol_l2):
    """Integers equal; floats within tol * max|ref| and tol_l2 in relative L2; unwritten stays unwritten."""
    if not ref.is_floating_point():
        assert torch.equal(got.cpu().reshape(-1).to(ref.dtype), ref.reshape(-1)), what
        return
    got, ref = got.cpu().double().reshape(-1), ref.double().reshape(-1)
    unwritten = torch.isnan(ref)
    assert torch.equal(torch.isnan(got) & unwritten, unwritten), f"{{what}}: an element left unwritten differs"
    r, g = ref[~unwritten], got[~unwritten]
    if r.numel() == 0:
        return
    scale = r.abs().max().item()
    worst = (g - r).abs().max().item() if torch.isfinite(g).all() else math.inf
    assert worst <= tol * scale, f"{{what}}: largest difference {{worst:.3g}} beyond {{tol:g}} * {{scale:.3g}}"
    norm = r.norm().item()
    assert norm == 0 or (g - r).norm().item() / norm <= tol_l2, f"{{what}}: relative L2 error beyond {{tol_l2:g}}"


@pytest.mark.parametrize(("region", "case"), list(cases()))
def test_golden_case(region, case):
    folder = HERE / "cases" / region
    args, arrays, expect, scalars_expected, tol = [], {{}}, [], {{}}, (0.0, 0.0)
    for line in (folder / f"{{case}}.txt").read_text().splitlines():
        w = line.split()
        if w[0] == "scalar":
            args.append(scalar(w[2], w[3]))
        elif w[0] == "array":
            arrays[w[1]] = read(folder, w[2], w[3], w[4]).to(DEVICE)
            args.append(arrays[w[1]])
        elif w[0] == "expect":
            expect.append((w[1], read(folder, w[2], w[3], w[4])))
        elif w[0] in ("expect_scalar", "expect_result"):
            name, dtype, value = (w[1], w[2], w[3]) if w[0] == "expect_scalar" else ("result", w[1], w[2])
            scalars_expected[name] = (dtype, value)
        elif w[0] == "tolerance":
            tol = (float(w[1]), float(w[2]))
    returned = launcher(region)(*args) or {{}}
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    for name, ref in expect:
        judge(name, arrays[name], ref.to(arrays[name].dtype), *tol)
    for name, (dtype, value) in scalars_expected.items():
        got = returned[name]
        got = got.item() if hasattr(got, "item") else got
        if dtype == "char":
            assert ord(str(got)[:1] or " ") == int(value), name
        else:
            ref = torch.tensor([scalar(dtype, value)], dtype=DTYPES[dtype])
            judge(name, torch.tensor([got], dtype=DTYPES[dtype]), ref, *tol)
'''


def triton_suite(workflow: str, regions: Iterable[str]) -> str:
    """``test_triton.py`` for the regions validated for Triton."""
    return TEMPLATE.format(workflow=workflow, regions=repr(sorted(regions)))
