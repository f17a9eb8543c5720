"""A C region validated end to end: the reference is the C function built with the system
C compiler and called through ctypes; a right translation validates, a wrong one fails,
and the drop-in header the output gets compiles against the translation's entry."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from graph import c_headers
from parsers.c import parse_files, parse_source
from targets.base import get_renderer
from translate import ir
from translate.analysis import analyze
from translate.schedule import Schedule
from validation import runners
from validation.inputs import make_case
from validation.region import ReferenceSpec, ValidationPlan, validate_region

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")]

SOURCE = """#include <math.h>
void smooth(int n, int m, double a[n][m], double b[n][m], double *total)
{
  *total = 0.0;
  for (int i = 1; i < n - 1; i++)
    for (int j = 0; j < m; j++) {
      b[i][j] = 0.5 * a[i][j] + 0.25 * (a[i-1][j] + a[i+1][j]);
      *total += fabs(b[i][j]);
    }
}
"""


def _kernel(tmp_path: Path, text: str, name: str = "smooth") -> tuple[Path, ir.Kernel]:
    src = tmp_path / f"{name}_{abs(hash(text)) % 10**8}.c"
    src.write_text(text)
    (mod,) = parse_files([src], tmp_path)
    k = {k.name: k for k in mod.kernels}[name]
    assert isinstance(k, ir.Kernel)
    return src, k


def _validate(tmp_path: Path, kernel: ir.Kernel, reference_source: Path, target_dir: Path) -> object:
    plan = ValidationPlan({"n": 9, "m": 7}, trials=1,
                          reference=ReferenceSpec([reference_source], None, options={"language": "c"}))
    return validate_region(kernel, {"triton": target_dir}, plan, cache_dir=tmp_path / "cache",
                           workdir=tmp_path / "work")


def test_the_c_reference_is_the_function_itself(tmp_path: Path) -> None:
    src, k = _kernel(tmp_path, SOURCE)
    build = runners.build_reference([src], [k], tmp_path / "ref", cache_dir=tmp_path / "cache", language="c")
    assert build.ok, build.reason + build.log
    case = make_case(k, {"n": 6, "m": 4}, {}, {}, seed=5)
    r = runners.run_reference(build, k, case, tmp_path / "work")
    assert r.ok, r.reason + r.log
    a = case.arrays["a"]
    inner = 0.5 * a[1:-1] + 0.25 * (a[:-2] + a[2:])
    assert (r.outputs["b"][1:-1] == inner).all()
    assert abs(float(r.outputs["total"]) - abs(inner).sum()) < 1e-12


def test_a_right_translation_validates_and_a_wrong_one_fails(tmp_path: Path) -> None:
    src, k = _kernel(tmp_path, SOURCE)
    analysed = analyze(k)
    good = tmp_path / "good"
    get_renderer("triton", Schedule()).render(analysed, Schedule()).write(good)
    res = _validate(tmp_path, analysed, src, good / "triton")
    assert res.status("triton") == "validated", res.targets["triton"].reason  # type: ignore[attr-defined]
    # the translation of an off-by-one variant (the last interior row left out), judged against
    # the source's reference: its b differs and so does total
    _, wrong = _kernel(tmp_path, SOURCE.replace("i < n - 1", "i < n - 2"))
    bad = tmp_path / "bad"
    get_renderer("triton", Schedule()).render(analyze(wrong), Schedule()).write(bad)
    res = _validate(tmp_path, analysed, src, bad / "triton")
    tv = res.targets["triton"]  # type: ignore[attr-defined]
    assert tv.status == "failed" and "trial 1" in tv.reason


def test_the_header_and_drop_in_compile_against_the_kt_entry(tmp_path: Path) -> None:
    src, k = _kernel(tmp_path, SOURCE)
    written = c_headers.write(k, tmp_path / "out", tmp_path)
    header, dropin = written
    assert "void kt_smooth(int n, int m, const double *a, double *b, double *total);" in header.read_text()
    text = dropin.read_text()
    assert "void smooth(int n, int m, double a[n][m], double b[n][m], double *total)" in text
    # the drop-in and a stand-in for the translation's library link into one program
    stub = tmp_path / "stub.c"
    stub.write_text('#include "out/include/smooth.h"\nvoid kt_smooth(int n, int m, const double *a, double *b,'
                    ' double *total) { *total = n * m + a[0] + b[0]; }\n'
                    "void smooth(int n, int m, double a[n][m], double b[n][m], double *total);\n"
                    "int main(void) { double a[2][3] = {{1}}, b[2][3] = {{2}}, t; smooth(2, 3, a, b, &t);"
                    " return t == 9.0 ? 0 : 1; }\n")
    exe = tmp_path / "prog"
    proc = subprocess.run(["cc", "-std=gnu99", "-Wall", "-Werror", str(stub), str(dropin), "-o", str(exe)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert subprocess.run([str(exe)]).returncode == 0


def test_a_static_function_gets_no_drop_in(tmp_path: Path) -> None:
    _, k = _kernel(tmp_path, "static\nvoid twice(int n, double *a) { for (int i = 0; i < n; i++) a[i] *= 2; }\n",
                   "twice")
    written = c_headers.write(k, tmp_path / "out", tmp_path)
    assert [p.name for p in written] == ["twice.h"]


def test_the_header_names_the_shim_as_the_targets_export_it() -> None:
    # the shims export kt_<name in lower case>; a C function named in mixed case keeps its own
    # name in the drop-in, and calls the shim by the exported one
    (k,) = parse_source("void Scale2(int n, double *a) { for (int i = 0; i < n; i++) a[i] *= 2.0; }\n",
                        "scale2.c").kernels
    assert isinstance(k, ir.Kernel)
    assert "void kt_scale2(int n, double *a);" in c_headers.header(k)
    made = c_headers.dropin(k, "void Scale2(int n, double *a) {\n  return;\n}\n")
    assert made is not None and "void Scale2(int n, double *a)" in made and "kt_scale2(n, (void *)a);" in made
