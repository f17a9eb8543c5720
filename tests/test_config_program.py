"""graph.config: a workflow's ``program:`` section (graph/program_config.py, on pydantic)."""

from __future__ import annotations

from pathlib import Path

from graph.config import load
from graph.program_config import FileCheck, NumberCheck, ProgramConfig
from tests.test_config import errors
from tests.test_config import project as config_project

FILES = ("src/a.f90", "src/main.f90", "data/input.in")


def project(tmp_path: Path, yaml_text: str) -> Path:
    return config_project(tmp_path, yaml_text, FILES)


def shown(path: Path) -> list[str]:
    """The errors loading ``path`` gives, the file's folder left out."""
    return [e.removeprefix(f"{path.parent}/") for e in errors(path)]


def test_program_section(tmp_path: Path) -> None:
    path = project(tmp_path, r"""
        workflows:
          w:
            language: fortran
            sources: [src/a.f90]
            program:
              name: heat
              sources: [src/main.f90]
              run: {args: [input.in], inputs: [data/input.in], timeout: 60}
              check:
                numbers: [{pattern: 'energy\s*=\s*(\S+)', rtol: "1e-12"}]
                files: [{path: field.dat, atol: 1.0e-14}]
                expect: [VERIFICATION SUCCESSFUL]
    """)
    program = load(path).workflow("w").program
    assert isinstance(program, ProgramConfig) and program.name == "heat"
    assert program.sources == ("src/main.f90",) and program.run.args == ("input.in",)
    assert program.run.inputs == ("data/input.in",) and program.run.timeout == 60
    assert program.check.numbers == (NumberCheck(pattern=r"energy\s*=\s*(\S+)", rtol=1e-12),)
    assert program.check.files == (FileCheck(path="field.dat", rtol=1e-10, atol=1e-14),)
    assert program.check.expect == ("VERIFICATION SUCCESSFUL",)


def test_no_program_section(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          w: {language: fortran, sources: [src/a.f90]}
    """)
    assert load(path).workflow("w").program is None


def test_program_errors_name_line_and_key(tmp_path: Path) -> None:
    path = project(tmp_path, r"""
        workflows:
          w:
            language: fortran
            sources: [src/a.f90]
            program:
              nme: heat
              sources: [src/none*.f90]
              run:
                args: [1]
                inputs: [data/missing.in]
                timout: 5
                timeout: -1
              check:
                numbers: [{pattern: 'e=(\S+', rtol: true}]
                files: [{atol: 0.0}]
    """)
    got = shown(path)
    assert "workflows.yaml:6: workflows.w.program.nme: unknown key (did you mean 'name'?)" in got
    assert "workflows.yaml:11: workflows.w.program.run.timout: unknown key (did you mean 'timeout'?)" in got
    assert "workflows.yaml:9: workflows.w.program.run.args[0]: expected a valid string, got an integer (1)" in got
    assert "workflows.yaml:12: workflows.w.program.run.timeout: must be greater than 0, got an integer (-1)" in got
    assert any(line.startswith("workflows.yaml:14: workflows.w.program.check.numbers[0].pattern: not a regular "
                               "expression") for line in got)
    assert "workflows.yaml:14: workflows.w.program.check.numbers[0].rtol: expected a number, got a boolean (true)" \
        in got
    assert "workflows.yaml:15: workflows.w.program.check.files[0]: missing required key 'path'" in got


def test_program_files_are_checked_once_the_schema_holds(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          w:
            language: fortran
            sources: [src/a.f90]
            program:
              sources: [src/none*.f90]
              run: {inputs: [data/missing.in]}
              check: {expect: [done]}
    """)
    got = shown(path)
    assert any(line.startswith("workflows.yaml:6: workflows.w.program.sources[0]: glob 'src/none*.f90' matches no "
                               "file") for line in got)
    assert any(line.startswith("workflows.yaml:7: workflows.w.program.run.inputs[0]: input file 'data/missing.in' "
                               "does not exist") for line in got)


def test_a_program_must_be_judged_by_something(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          w:
            language: fortran
            sources: [src/a.f90]
            program: {run: {args: [x]}, check: {}}
    """)
    assert shown(path) == ["workflows.yaml:5: workflows.w.program.check: give at least one of numbers, files, "
                            "expect: a run must be judged by something"]
    path = project(tmp_path, """
        workflows:
          w: {language: pytorch, sources: [src/a.f90], program: {check: {expect: [ok]}}}
    """)
    assert any("program: a program section applies to language: fortran (not pytorch)" in e for e in shown(path))
