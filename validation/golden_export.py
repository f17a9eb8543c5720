"""Golden cases in a form a C++ program reads without Python: the portable regression suite's
data (``<output>/tests/cases/<region>/``, read by the drivers of :mod:`targets.check_driver`).

Layout of one region's folder::

    cases.txt            the case names, one per line
    <case>.txt           one line per item, in the kt_NAME parameter order:
                           scalar <name> <dtype> <value>          an input scalar
                           array <name> <dtype> <count> <file>    an array's contents on entry
                           expect <name> <dtype> <count> <file>   an out/inout array's reference
                           expect_scalar <name> <dtype> <value>   an out/inout scalar's reference
                           expect_result <dtype> <value>          a function's reference value
                           tolerance <elementwise> <rel_l2>       as validation judged it
    <case>.<name>.bin    raw array contents: little-endian, Fortran (column-major) order,
                         logical as 4-byte integers; unwritten outputs hold the poison NaN

Floating values are written with 17 significant digits (exact for f64); a character is its
code. The judgement the drivers make is validation's (validation.compare): integers equal,
floats within ``tolerance`` of the largest reference magnitude elementwise and in relative
L2, an element the reference left unwritten left unwritten by the candidate too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from translate import ir
from validation.compare import TOLERANCES
from validation.golden import cases, load_case

STORAGE = {"f64": np.float64, "f32": np.float32, "i32": np.int32, "i64": np.int64, "bool": np.int32, "char": np.int8}


def exportable(kernel: ir.Kernel) -> str:
    """Why a region's cases cannot be exported ("" when they can)."""
    for p in kernel.params:
        if p.dtype.value not in STORAGE:
            return f"'{p.name}' is {p.dtype.value}: no portable form"
    if kernel.result is not None and kernel.result.value not in STORAGE:
        return f"the result is {kernel.result.value}"
    return ""


def export_region(golden_dir: Path, dest: Path, reduces: bool) -> list[str]:
    """Every golden case of one region written under ``dest``; the case names."""
    dest.mkdir(parents=True, exist_ok=True)
    names = cases(golden_dir)
    for name in names:
        kernel, _meta, case, ref = load_case(golden_dir, name)
        lines = []
        for p in kernel.params:
            dt = p.dtype.value
            if isinstance(p, ir.Array):
                data = np.asarray(case.arrays[p.name])
                lines.append(f"array {p.name} {dt} {data.size} {_write(dest, name, p.name, data, dt)}")
                if p.intent.writes:
                    expect = np.asarray(ref[p.name])
                    file = _write(dest, name, p.name + ".expect", expect, dt)
                    lines.append(f"expect {p.name} {dt} {expect.size} {file}")
            else:
                lines.append(f"scalar {p.name} {dt} {_value(case.scalars[p.name], dt)}")
                if p.intent.writes:
                    lines.append(f"expect_scalar {p.name} {dt} {_value(ref[p.name], dt)}")
        if kernel.result is not None:
            lines.append(f"expect_result {kernel.result.value} {_value(ref['result'], kernel.result.value)}")
        floats = [p.dtype.value for p in kernel.params if p.dtype.is_float and p.intent.writes]
        worst = max((TOLERANCES.get(d, TOLERANCES["f64"])[1 if reduces else 0] for d in floats or ["f64"]),
                    key=lambda t: t[0])
        lines.append(f"tolerance {worst[0]:.17g} {worst[1]:.17g}")
        (dest / f"{name}.txt").write_text("\n".join(lines) + "\n")
    (dest / "cases.txt").write_text("\n".join(names) + "\n")
    return names


def _write(dest: Path, case: str, name: str, data: np.ndarray, dtype: str) -> str:
    file = f"{case}.{name}.bin"
    arr = np.asarray(data)
    if dtype == "char":
        codes = [(x.decode("latin-1") if isinstance(x, bytes) else str(x))[:1] or " " for x in arr.ravel(order="A")]
        arr = np.array([ord(c) for c in codes], dtype=np.int8)
    # the bytes the shim is handed in validation: the array's own memory order
    (dest / file).write_bytes(arr.astype(np.dtype(STORAGE[dtype]).newbyteorder("<")).tobytes(order="A"))
    return file


def _value(v: Any, dtype: str) -> str:
    if dtype == "char":
        text = v.decode("latin-1") if isinstance(v, bytes) else str(v)
        return str(ord(text[:1] or " "))
    if dtype in ("f64", "f32"):
        return f"{float(v):.17g}"
    return str(int(v))
