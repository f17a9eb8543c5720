"""The ``program:`` section of a workflow: how the original program is built, run and
judged, so that the migrated program can be run next to it (pydantic models; problems are
reported as ``file:line: key.path: message`` through :func:`graph.yamlcheck.check_model`).

Schema::

    program:
      name: heat                      # the executable (default: the workflow's name)
      sources: [src/main.f90]         # files of the program besides the workflow's sources and
                                      # build.sources (globs under the workflow's root)
      run:
        args: [input.in]              # command-line arguments
        inputs: [data/input.in]       # files copied into the folder it runs in
        timeout: 600                  # seconds of CPU time one run may take
      check:                          # at least one of numbers, files, expect
        numbers:                      # numbers in the standard output, compared in order
          - {pattern: 'energy\\s*=\\s*(\\S+)', rtol: 1.0e-10, atol: 0.0}
        files:                        # output files whose numbers are compared in order
          - {path: field.dat, rtol: 1.0e-10, atol: 1.0e-14}
        expect: [VERIFICATION SUCCESSFUL]   # text each run's output must contain
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from graph.yamlcheck import Checker, KeyPath, check_model


class Strict(BaseModel):
    """A section of the file: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Tolerance(Strict):
    rtol: float = Field(default=1e-10, ge=0)
    atol: float = Field(default=0.0, ge=0)

    @field_validator("rtol", "atol", mode="before")
    @classmethod
    def _not_a_boolean(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError(f"expected a number, got a boolean ({str(value).lower()})")
        return value


class NumberCheck(Tolerance):
    """Every match of ``pattern`` in the standard output (its first group, or the whole match)."""

    pattern: str

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from exc
        return value


class FileCheck(Tolerance):
    """An output file (relative to the folder the program runs in)."""

    path: str = Field(min_length=1)


class ProgramCheck(Strict):
    numbers: tuple[NumberCheck, ...] = ()
    files: tuple[FileCheck, ...] = ()
    expect: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _something_to_judge(self) -> ProgramCheck:
        if not (self.numbers or self.files or self.expect):
            raise ValueError("give at least one of numbers, files, expect: a run must be judged by something")
        return self


class ProgramRun(Strict):
    args: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    timeout: float = Field(default=600.0, gt=0)


class ProgramConfig(Strict):
    name: str = Field(default="", pattern=r"^([A-Za-z0-9_][A-Za-z0-9_.-]*)?$")
    sources: tuple[str, ...] = ()
    run: ProgramRun = ProgramRun()
    check: ProgramCheck


def parse_program(c: Checker, p: KeyPath, value: object, language: str, root: Path | None,
                  expand: Callable[[Path, str], list[Path]]) -> ProgramConfig | None:
    """The ``program:`` section, every problem reported through ``c``: its schema, then its
    files (``root`` None: the workflow's root is itself wrong, files are not checked;
    ``expand(root, glob)`` lists the files a glob matches)."""
    if language != "fortran":
        c.error(p, f"a program section applies to language: fortran (not {language})")
        return None
    program = check_model(c, p, value, ProgramConfig)
    if not isinstance(program, ProgramConfig) or root is None:
        return None
    for i, pattern in enumerate(program.sources):
        if not expand(root, pattern):
            c.error((*p, "sources", i), f"glob '{pattern}' matches no file under {root}")
    for i, name in enumerate(program.run.inputs):
        if not (root / name).is_file():
            c.error((*p, "run", "inputs", i), f"input file '{name}' does not exist under {root}")
    return program
