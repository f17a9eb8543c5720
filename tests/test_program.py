"""Whole programs: the judgement of two runs (validation/program.py) and the example program
migrated end to end (graph/program_steps.py), where a wrong translation must make it differ."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from graph.cli import main
from graph.config import load
from graph.program_steps import blame, serial_only
from validation import toolchains
from validation.program import (
    Checks,
    ProgramRun,
    Tol,
    build_program,
    compare,
    judge,
    matched,
    numbers,
    run_folder,
    run_program,
)

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "fortran_program"
TIGHT = Tol(1e-12, 0.0)


def _run(folder: Path, output: str, files: dict[str, str] | None = None) -> ProgramRun:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {}).items():
        (folder / name).write_text(text)
    return ProgramRun(True, folder, output)


def test_numbers_are_read_as_fortran_writes_them() -> None:
    assert numbers("x = 1.5D+02, y=-3e-1 z .5 7") == [150.0, -0.3, 0.5, 7.0]
    assert matched(r"heat =\s*(\S+)", "heat = 1.0E+00\nheat = 2.5D0\n") == [1.0, 2.5]
    assert math.isnan(matched(r"heat =\s*(\S+)", "heat = ****")[0])  # a field too narrow for its value
    assert matched(r"heat =\s*(\S+)", "") == []


def test_compare_fails_on_a_wrong_value_a_missing_one_and_nan() -> None:
    assert compare([1.0, 2.0], [1.0, 2.0], TIGHT, "n").ok
    assert compare([1.0, 2.0], [1.0, 2.0 + 1e-13], TIGHT, "n").ok
    wrong = compare([1.0, 2.0], [1.0, 2.001], TIGHT, "n")
    assert not wrong.ok and "value 2 of 2: 2.001 where the original has 2.0" in wrong.detail
    assert "1 values where the original has 2" in compare([1.0, 2.0], [1.0], TIGHT, "n").detail
    assert not compare([1.0], [math.nan], Tol(1.0, 1.0), "n").ok
    assert not compare([], [], TIGHT, "n").ok  # nothing extracted decides nothing


def test_judge_each_kind_of_check(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", "heat = 1.0\nrun complete\n", {"f.dat": "1.0 2.0\n3.0\n"})
    good = _run(tmp_path / "b", "heat = 1.0\nrun complete\n", {"f.dat": "1.0 2.0 3.0"})
    bad = _run(tmp_path / "c", "heat = 1.1\n", {"f.dat": "1.0 2.0 3.5"})
    checks = Checks([(r"heat =\s*(\S+)", TIGHT)], [("f.dat", TIGHT), ("g.dat", TIGHT)], ["run complete"])
    verdicts = {v.check: v for v in judge(a, good, checks)}
    assert verdicts["numbers[0]"].ok and verdicts["files[0]"].ok and verdicts["expect[0]"].ok
    assert not verdicts["files[1]"].ok and "the original wrote no g.dat" in verdicts["files[1]"].detail
    assert not any(v.ok for v in judge(a, bad, checks))
    missing = judge(good, a, Checks(expect=["VERIFICATION SUCCESSFUL"]))[0]
    assert not missing.ok and "does not contain 'VERIFICATION SUCCESSFUL' either" in missing.detail


needs_builds = pytest.mark.skipif(
    not (toolchains.gfortran().available and toolchains.cmake().available and toolchains.find_kokkos() is not None),
    reason="needs gfortran, cmake and Kokkos")


@pytest.mark.slow
@needs_builds
def test_the_example_program_migrates_and_a_wrong_translation_differs(tmp_path: Path) -> None:
    project = tmp_path / "fortran_program"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("out"))
    assert main(["run", str(project), "--targets", "kokkos,cuda"]) == 0
    out = project / "out" / "heat"
    program = json.loads((out / "report.json").read_text())["program"]
    assert program["status"] == "matched", program
    kokkos = program["targets"]["kokkos"]
    assert kokkos["replaced"] == ["add_source", "apply_bc", "copy_back", "diffuse", "total_heat"]
    assert {c["check"] for c in kokkos["checks"] if c["ok"]} == {"numbers[0]", "files[0]", "expect[0]"}
    assert program["targets"]["cuda"]["status"] in ("compiled", "matched", "not built")
    assert "## Program `heat`: matched" in (out / "report.md").read_text()
    # one data region around the time loop: u and unew copied in once, and the one element of u
    # the host resets (the probe, 4 of 200 steps) each time: 6 copies in, 2 out (at the end),
    # instead of copies on all 1000 calls
    assert kokkos["data"] == {"regions": ["src/heat_main.f90:26"], "updates": 1, "through": [], "refused": []}
    assert kokkos["transfers"]["regions"] == 1
    assert (kokkos["transfers"]["copies_in"], kokkos["transfers"]["copies_out"]) == (6, 2)
    assert kokkos["transfers"]["h2d_bytes"] == 2 * (64 + 2) * (48 + 2) * 8 + 4 * 8

    # the regression suite travels with the output: ctest without Python, on every region
    suite = out / "tests"
    assert sorted(p.name for p in (suite / "cases").iterdir()) == kokkos["replaced"]

    def ctest() -> subprocess.CompletedProcess[str]:
        build = str(suite / "build")
        for cmd in (["cmake", "-S", str(suite), "-B", build], ["cmake", "--build", build]):
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, done.stdout + done.stderr
        return subprocess.run(["ctest", "--output-on-failure"], cwd=suite / "build", capture_output=True, text=True,
                              timeout=900)

    passed = ctest()
    assert passed.returncode == 0 and "100% tests passed, 0 tests failed out of 5" in passed.stdout, passed.stdout

    folder = out / "program"
    # the folder rebuilds, runs and judges itself without the tool's workflow (the GPU machine's hook)
    lines: list[str] = []
    assert run_folder(folder, ["kokkos"], ["-DKT_CUDA=OFF"], lines.append) == 0
    assert lines[1].startswith("heat_kokkos: matched") and "'copies_in': 6" in lines[1]
    inputs = [project / "data" / "heat.in"]
    checks = Checks([(r"heat =\s*(\S+)", Tol(1e-10, 0.0))], [("field.dat", Tol(1e-10, 1e-12))], ["run complete"])
    original = run_program(folder / "build" / "heat_original", tmp_path / "run_a", [], inputs, 600)
    assert (tmp_path / "run_a-output.txt").read_text() == original.output and "run complete" in original.output

    def rebuilt_verdicts() -> dict[str, bool]:
        builds = build_program(folder, folder / "build", ["heat_kokkos"], 600, ["-DKT_CUDA=OFF"])
        assert builds["heat_kokkos"].ok, builds["heat_kokkos"].log
        got = run_program(builds["heat_kokkos"].executable, tmp_path / "run_b", [], inputs, 600)
        assert original.ok and got.ok
        return {v.check: v.ok for v in judge(original, got, checks)}

    # an update left out: the device keeps the old probe value, and the results must differ
    # (the region's buffers are copies even where device memory is the host's)
    main_file = folder / "kokkos" / "src" / "heat_main.f90"
    text = main_file.read_text()
    update = "call kt_update_device_part(u(1, 1), storage_size(u, kind=c_size_t) / 8)"
    assert text.count(update) == 1
    main_file.write_text(text.replace(update, "continue"))
    assert rebuilt_verdicts()["files[0]"] is False
    program_cfg = load(project / "workflows.yaml").workflow("heat").program
    assert "with its data regions turned off (KT_DATA=off) it matches" in \
        blame(folder / "build" / "heat_kokkos", tmp_path / "off", program_cfg, inputs, original, checks)
    main_file.write_text(text)

    # a wrong diffusion kernel: its results must differ from the original's
    source = out / "kokkos" / "diffuse_kokkos.cpp"
    kernel_text = source.read_text()
    assert "4.0" in kernel_text
    source.write_text(kernel_text.replace("4.0", "3.9", 1))
    verdicts = rebuilt_verdicts()
    assert not verdicts["numbers[0]"] and not verdicts["files[0]"]
    assert "a translation is at fault" in \
        blame(folder / "build" / "heat_kokkos", tmp_path / "off", program_cfg, inputs, original, checks)
    assert verdicts["expect[0]"]  # a line the run prints whatever its numbers: not enough on its own
    failed = ctest()
    assert failed.returncode != 0 and "diffuse_kokkos" in failed.stdout and "unew[" in failed.stdout


def test_the_report_names_the_regions_the_drivers_they_stay_open_through_and_the_suspensions() -> None:
    from graph.report import program_markdown

    data = {"regions": ["BT/bt.f:150"], "updates": 0, "through": ["adi"],
            "refused": ["verify: regions are suspended around its calls: it passes its local array xce to error_norm"]}
    text = program_markdown({"name": "bt", "status": "matched", "original": {"ran": True, "seconds": 0.04},
                             "targets": {"kokkos": {"status": "matched", "seconds": 0.1, "replaced": ["add"],
                                                    "data": data, "checks": []}}})
    assert "## Program `bt`: matched" in text
    assert "- kokkos: data regions at BT/bt.f:150 (0 update calls; they stay open through adi)" in text
    assert "- kokkos: verify: regions are suspended around its calls" in text


def test_a_routine_whose_translation_is_one_device_thread_stays_the_original() -> None:
    pytest.importorskip("fparser")
    from parsers.fortran import parse_source
    from translate.analysis import analyze

    src = """subroutine gen(n, x, a, y)
  integer, intent(in) :: n
  double precision, intent(inout) :: x
  double precision, intent(in) :: a
  double precision, intent(out) :: y(n)
  integer :: i
  do i = 1, n
    x = mod(a * x, 1.0d6)
    y(i) = x
  end do
end subroutine gen
subroutine scale(n, y)
  integer, intent(in) :: n
  double precision, intent(inout) :: y(n)
  integer :: i
  do i = 1, n
    y(i) = 2.0d0 * y(i)
  end do
end subroutine scale
subroutine prefix(n, y, x)
  integer, intent(in) :: n
  double precision, intent(in) :: y(n)
  double precision, intent(inout) :: x(n)
  integer :: i
  x(1) = y(1)
  do i = 2, n
    x(i) = x(i - 1) + y(i)
  end do
end subroutine prefix
"""
    kernels = {k.name: analyze(k) for k in parse_source(src, "gen.f90", fixed_form=False).kernels}
    assert serial_only(kernels["gen"])  # a recurrence through x: one device thread (NPB's vranlc)
    assert not serial_only(kernels["scale"])  # a parallel loop
    assert not serial_only(kernels["prefix"])  # a scan: parallel on the device
