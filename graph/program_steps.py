"""The whole program: the original and its migrated builds written as one CMake project,
built, run side by side and judged as the workflow's ``program:`` section says.

The migrated program is the original with each translated routine's executable part
replaced by a call of its translation (:mod:`parsers.fortran_migrate`), everything else
unchanged. Kokkos takes the routines validated for Kokkos; CUDA the routines that compiled
(it runs only where there is a GPU). Written under ``<output>/program/``::

    CMakeLists.txt     the project (targets.cmake.program_cmake)
    original/          copies of the program's sources, as they are under the workflow root
    kokkos/, cuda/     the files holding replaced routines, per target
    build/, run/       the build and one folder per run (made here, not for users to keep)
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from graph.config import Workflow, expand_glob
from graph.program_config import ProgramConfig
from parsers.base import ParseError
from parsers.fortran_migrate import migrate_file
from targets.cmake import program_cmake
from translate import ir
from validation import toolchains
from validation.program import Checks, Tol, build_program, judge, run_program

FORTRAN = (".f", ".for", ".f77", ".f90", ".f95", ".f03", ".f08")
HEADERS = (".h", ".inc", ".fh", ".fi", ".hh", ".hpp")
MIGRATED_STATUS = {"kokkos": ("validated",), "cuda": ("validated", "compiled")}


def program_files(wf: Workflow, program: ProgramConfig) -> list[Path]:
    """The program's sources: the workflow's, its build sources and the section's own."""
    found = set(wf.files()) | set(wf.build_files())
    for pattern in program.sources:
        found.update(expand_glob(wf.root, pattern))
    return sorted(found)


def _headers(wf: Workflow, files: list[Path]) -> dict[Path, str]:
    """The files INCLUDE and #include may read: those with a header's suffix in the folders of
    the program's sources and in the workflow's include folders (under its root)."""
    root = wf.root.resolve()
    folders = {f.resolve().parent for f in files} | {d.resolve() for d in wf.include_dirs()}
    return {h: h.resolve().relative_to(root).as_posix() for d in sorted(folders) if d.is_relative_to(root)
            for h in sorted(d.iterdir()) if h.is_file() and h.suffix.lower() in HEADERS}


def migrate_program(wf: Workflow, out_dir: Path, entries: list[dict[str, Any]],
                    kernel: Any, progress: Any) -> dict[str, Any]:
    """Write, build, run and judge the program; ``kernel(name)`` gives a region's analysed
    kernel (as its translation was rendered from). Returns the report's program section."""
    program = wf.program
    assert program is not None
    name = program.name or wf.name
    folder = out_dir / "program"
    files = program_files(wf, program)
    rels = {f: f.resolve().relative_to(wf.root.resolve()).as_posix() for f in files}
    for f, rel in {**_headers(wf, files), **rels}.items():
        (folder / "original" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, folder / "original" / rel)

    section: dict[str, Any] = {"name": name, "targets": {}}
    migrated: dict[str, dict[str, str]] = {}
    translations: dict[str, list[str]] = {}
    for target, statuses in MIGRATED_STATUS.items():
        if target not in wf.targets:
            continue
        ok = {e["name"].lower() for e in entries if e["targets"].get(target, {}).get("status") in statuses}
        kernels: dict[str, ir.Kernel] = {}
        for n in sorted(ok):
            k = kernel(n)
            if isinstance(k, ir.Kernel):
                kernels[n] = k
        swap, replaced, refused = _migrate_files(wf, files, rels, kernels, folder / target)
        migrated[target] = swap
        ext = {"kokkos": "cpp", "cuda": "cu"}[target]
        translations[target] = [f"../{target}/{n}_{target}.{ext}" for n in replaced] + \
            [f"../fortran/{n}_interface.f90" for n in replaced]
        section["targets"][target] = {"replaced": replaced, "refused": refused}

    b = wf.build
    (folder / "CMakeLists.txt").write_text(program_cmake(
        name, [f"original/{r}" for r in rels.values()],
        {t: {f"original/{k}": f"{t}/{v}" for k, v in s.items()} for t, s in migrated.items()}, translations,
        fflags=b.flags, cflags=b.cflags, include=[f"original/{d}" for d in wf.preprocess.include],
        defines=dict(wf.preprocess.defines), libraries=b.libraries))
    progress(f"program {name}: written to {folder}")
    _build_and_run(wf, program, name, folder, section, progress)
    return section


def _migrate_files(wf: Workflow, files: list[Path], rels: dict[Path, str], kernels: dict[str, ir.Kernel],
                   dest: Path) -> tuple[dict[str, str], list[str], dict[str, str]]:
    swap: dict[str, str] = {}
    replaced: list[str] = []
    refused: dict[str, str] = {}
    for f in files:
        if f.suffix.lower() not in FORTRAN:
            continue
        try:
            m = migrate_file(f, wf.root, kernels, wf.include_dirs(), dict(wf.preprocess.defines))
        except ParseError as err:
            refused.update({n: f"{err}" for n in kernels if n not in replaced})
            continue
        refused.update(m.refused)
        if not m.replaced:
            continue
        rel = rels[f]
        if f.suffix != f.suffix.lower():  # preprocessed already: compiled as it is
            rel = rel[: -len(f.suffix)] + f.suffix.lower()
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(m.text)
        swap[rels[f]] = rel
        replaced += m.replaced
    return swap, sorted(replaced), {n: why for n, why in refused.items() if n not in replaced}


def _build_and_run(wf: Workflow, program: ProgramConfig, name: str, folder: Path, section: dict[str, Any],
                   progress: Any) -> None:
    probe = toolchains.Probe()
    cuda = "cuda" in section["targets"] and probe.get("nvcc").available
    config = [f"-DKT_CUDA={'ON' if cuda else 'OFF'}",
              f"-DKT_KOKKOS={'ON' if 'kokkos' in section['targets'] else 'OFF'}"]
    if cuda:
        config.append(f"-DCMAKE_CUDA_COMPILER={shutil.which('nvcc')}")
    exes = [f"{name}_original", *(f"{name}_{t}" for t in section["targets"] if t != "cuda" or cuda)]
    progress(f"program {name}: building {', '.join(exes)}")
    builds = build_program(folder, folder / "build", exes, program.run.timeout, config)
    inputs = [wf.root / i for i in program.run.inputs]
    checks = Checks([(c.pattern, Tol(c.rtol, c.atol)) for c in program.check.numbers],
                    [(c.path, Tol(c.rtol, c.atol)) for c in program.check.files], program.check.expect)
    original = builds[f"{name}_original"]
    section["original"] = {"built": original.ok, "reason": original.reason}
    if not original.ok or original.executable is None:
        section["status"] = "failed"
        section["reason"] = f"the original program does not build: {original.reason}"
        return
    progress(f"program {name}: running the original")
    base = run_program(original.executable, folder / "run" / "original", program.run.args, inputs,
                       program.run.timeout)
    section["original"].update(ran=base.ok, seconds=round(base.seconds, 3), reason=base.reason)
    if not base.ok:
        section["status"] = "failed"
        section["reason"] = f"the original program failed: {base.reason}"
        return
    passed = []
    for target, info in section["targets"].items():
        b = builds.get(f"{name}_{target}")
        if b is None:
            info.update(status="not built", reason="nvcc not found")
            continue
        if not b.ok or b.executable is None:
            info.update(status="failed", reason=f"does not build: {b.reason}", log=b.log)
            continue
        if target == "cuda" and not probe.gpu():
            info.update(status="compiled", reason="built; no CUDA GPU here to run it")
            continue
        progress(f"program {name}: running the {target} build")
        got = run_program(b.executable, folder / "run" / target, program.run.args, inputs, program.run.timeout)
        if not got.ok:
            info.update(status="failed", reason=f"the run failed: {got.reason}", output=got.output[-2000:])
            continue
        verdicts = judge(base, got, checks)
        good = all(v.ok for v in verdicts)
        info.update(status="matched" if good else "differs", seconds=round(got.seconds, 3),
                    checks=[{"check": v.check, "ok": v.ok, "detail": v.detail} for v in verdicts])
        passed.append(good)
        progress(f"program {name}: {target} build {'matches' if good else 'DIFFERS from'} the original "
                 f"({got.seconds:.2f} s against {base.seconds:.2f} s)")
    section["status"] = "matched" if passed and all(passed) else "differs" if passed else "not run"
