"""graph.config: a workflow's ``build:`` section (graph/build_config.py)."""

from __future__ import annotations

from pathlib import Path

from graph.config import BuildConfig, load
from tests.test_config import errors
from tests.test_config import project as config_project

FILES = ("src/a.f90", "common/wtime.c", "common/timers.f90", "lib/libfoo.a", "notes.txt")


def project(tmp_path: Path, yaml_text: str) -> Path:
    return config_project(tmp_path, yaml_text, FILES)


def test_build_section(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          w:
            language: fortran
            sources: [src/*.f90]
            build:
              sources: [common/*.c, common/timers.f90, src/*.f90]
              flags: [-std=legacy, -fdefault-real-8]
              cflags: [-O2]
              libraries: [-lm, lib/libfoo.a, -Llib, -L/opt/x/lib, -lbar, -fopenmp]
    """)
    wf = load(path).workflow("w")
    assert wf.build == BuildConfig(("common/*.c", "common/timers.f90", "src/*.f90"),
                                   ("-std=legacy", "-fdefault-real-8"), ("-O2",),
                                   ("-lm", "lib/libfoo.a", "-Llib", "-L/opt/x/lib", "-lbar", "-fopenmp"))
    root = tmp_path.resolve()
    # the workflow's own sources are not compiled twice
    assert wf.build_files() == [root / "common" / "timers.f90", root / "common" / "wtime.c"]
    assert wf.build_libraries() == ["-lm", str(root / "lib" / "libfoo.a"), f"-L{root / 'lib'}", "-L/opt/x/lib",
                                    "-lbar", "-fopenmp"]


def test_no_build_section_adds_nothing(tmp_path: Path) -> None:
    wf = load(project(tmp_path, "workflows:\n  w: {language: fortran, sources: [src/*.f90]}\n")).workflow("w")
    assert wf.build == BuildConfig() and wf.build_files() == [] and wf.build_libraries() == []


def test_build_section_errors_name_line_and_key(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          w:
            language: fortran
            sources: [src/*.f90]
            build:
              sources: [common/nope*.c, notes.txt]
              flags: -O2
              cflag: [-O2]
              cflags: [O2]
              libraries: [lib/libmissing.a, notes.txt]
    """)
    msgs = errors(path)
    assert msgs == [
        f"{path}:6: workflows.w.build.sources[0]: glob 'common/nope*.c' matches no file under {tmp_path.resolve()}",
        f"{path}:6: workflows.w.build.sources[1]: glob 'notes.txt' matches files that are neither Fortran nor C "
        "(notes.txt); give libraries and objects under build.libraries",
        f"{path}:7: workflows.w.build.flags: expected a non-empty list of compiler flags, got a string ('-O2')",
        f"{path}:8: workflows.w.build.cflag: unknown key (did you mean 'cflags'?)",
        f"{path}:9: workflows.w.build.cflags[0]: 'O2' is not a compiler flag (flags start with '-')",
        f"{path}:10: workflows.w.build.libraries[0]: library 'lib/libmissing.a' does not exist under "
        f"{tmp_path.resolve()} (a linker flag starts with '-': -lNAME, -LDIR)",
        f"{path}:10: workflows.w.build.libraries[1]: 'notes.txt' is not a library or object file (.a, .so, .o)",
    ]


def test_build_must_be_a_mapping(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          w:
            language: fortran
            sources: [src/*.f90]
            biuld: {flags: [-O1]}
    """)
    assert errors(path) == [f"{path}:5: workflows.w.biuld: unknown key (did you mean 'build'?)"]
    path.write_text("workflows:\n  w:\n    language: fortran\n    sources: [src/*.f90]\n    build: [-O1]\n")
    assert errors(path) == [f"{path}:5: workflows.w.build: expected a mapping, got a list"]
