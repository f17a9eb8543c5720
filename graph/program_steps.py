"""The whole program: the original and its migrated builds written as one CMake project,
built, run side by side and judged as the workflow's ``program:`` section says.

The migrated program is the original with each translated routine's executable part
replaced by a call of its translation (:mod:`parsers.fortran_migrate`), everything else
unchanged. Kokkos takes the routines validated for Kokkos; CUDA the routines that compiled
(it runs only where there is a GPU); a routine whose translation is serial device code only
stays the original (:func:`serial_only`). Written under ``<output>/program/``::

    CMakeLists.txt     the project (targets.cmake.program_cmake)
    original/          copies of the program's sources, as they are under the workflow root
    kokkos/, cuda/     the files holding replaced routines, per target
    runtime/           the data region runtime (targets.data_runtime)
    program.json, inputs/   how to run and judge it: ``python -m validation.program <folder>``
    build/, run/       the build and one folder per run (made here, not for users to keep)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from graph.config import Workflow, expand_glob
from graph.program_config import ProgramConfig
from parsers.base import ParseError
from parsers.fortran_calltree import ProcedureFacts, procedure_facts
from parsers.fortran_migrate import migrate_file
from parsers.fortran_regions import place_regions, plan_regions
from parsers.fortran_units import SourceFile, make_parser, read, top_units
from targets.base import C_ABI_TARGETS, TARGETS
from targets.cmake import program_cmake
from targets.data_runtime import runtime_files
from translate import ir, scan
from translate.irquery import has_parallel
from validation import toolchains
from validation.program import (
    Checks,
    ProgramRun,
    build_program,
    checks_of,
    judge,
    program_options,
    run_migrated,
    run_program,
)

FORTRAN = (".f", ".for", ".f77", ".f90", ".f95", ".f03", ".f08")
HEADERS = (".h", ".inc", ".fh", ".fi", ".hh", ".hpp")


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

    for rel, text in runtime_files().items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    parsed, unread = _parse(wf, files)
    facts = procedure_facts(u for _, tree in parsed.values() for u in top_units(tree))
    section: dict[str, Any] = {"name": name, "targets": {}}
    migrated: dict[str, dict[str, str]] = {}
    translations: dict[str, list[str]] = {}
    for target in (t for t in C_ABI_TARGETS if t in wf.targets):
        usable = TARGETS[target].usable
        ok = {e["name"].lower() for e in entries if e["targets"].get(target, {}).get("status") in usable}
        kernels: dict[str, ir.Kernel] = {}
        kept: dict[str, str] = {}
        for n in sorted(ok):
            k = kernel(n)
            if isinstance(k, ir.Kernel) and serial_only(k):
                kept[n] = "its translation is serial device code only (one device thread per call)"
            elif isinstance(k, ir.Kernel):
                kernels[n] = k
        texts, replaced, refused = _migrate_files(wf, parsed, unread, kernels)
        refused = {**kept, **refused}
        placed = _place_regions(wf, parsed, texts, {n: kernels[n] for n in replaced}, facts)
        migrated[target] = _write(wf, rels, texts, folder / target)
        ext = TARGETS[target].extension
        translations[target] = [f"../{target}/{n}_{target}.{ext}" for n in replaced] + \
            [f"../fortran/{n}_interface.f90" for n in replaced] + \
            ([f"runtime/kt_data_{target}.{ext}", "runtime/kt_data.f90"] if placed["regions"] else [])
        section["targets"][target] = {"replaced": replaced, "refused": refused, "data": placed}

    b = wf.build
    (folder / "CMakeLists.txt").write_text(program_cmake(
        name, [f"original/{r}" for r in rels.values()],
        {t: {f"original/{k}": f"{t}/{v}" for k, v in sw.items()} for t, sw in migrated.items()}, translations,
        fflags=b.flags, cflags=b.cflags, include=[f"original/{d}" for d in wf.preprocess.include],
        defines=dict(wf.preprocess.defines), libraries=b.libraries))
    for i in program.run.inputs:
        (folder / "inputs").mkdir(exist_ok=True)
        shutil.copy(wf.root / i, folder / "inputs" / Path(i).name)
    (folder / "program.json").write_text(json.dumps({
        "name": name, "args": list(program.run.args), "inputs": [Path(i).name for i in program.run.inputs],
        "timeout": program.run.timeout, "check": program.check.model_dump(mode="json"),
        "targets": list(section["targets"])}, indent=2) + "\n")
    progress(f"program {name}: written to {folder}")
    _build_and_run(wf, program, name, folder, section, progress)
    return section


def serial_only(kernel: ir.Kernel) -> bool:
    """Whether a translation holds no parallel loop, scan or library operation: it would run as one
    device thread, slower than the original on the host, and a host loop calling it (NPB MG's
    zran3 calls vranlc once per grid row) would pay a launch and copies each time."""
    body = scan.recognise(kernel.body, kernel)  # a linear recurrence runs as a parallel scan
    return not any(has_parallel(s) or any(isinstance(n, ir.Loop) and n.scan for n in ir.walk(s)) for s in body)


def _parse(wf: Workflow, files: list[Path]) -> tuple[dict[Path, tuple[SourceFile, object]], list[ParseError]]:
    """Every Fortran file of the program read once (migration and region placement use the
    same trees), and the errors of those that could not be."""
    parsed: dict[Path, tuple[SourceFile, object]] = {}
    errors: list[ParseError] = []
    parser = make_parser()
    for f in files:
        if f.suffix.lower() in FORTRAN:
            try:
                parsed[f] = read(f, wf.root, parser, wf.include_dirs(), dict(wf.preprocess.defines))
            except ParseError as err:
                errors.append(err)
    return parsed, errors


def _migrate_files(wf: Workflow, parsed: dict[Path, tuple[SourceFile, object]], unread: list[ParseError],
                   kernels: dict[str, ir.Kernel]) -> tuple[dict[Path, str], list[str], dict[str, str]]:
    """The Fortran files holding translated routines, migrated: their texts, the routines
    replaced and those refused with why (a file that could not be read refuses those not
    replaced elsewhere)."""
    texts: dict[Path, str] = {}
    replaced: list[str] = []
    refused: dict[str, str] = {n: f"{err}" for err in unread for n in kernels}
    for f, read_ in parsed.items():
        m = migrate_file(f, wf.root, kernels, parsed=read_)
        refused.update(m.refused)
        if m.replaced:
            texts[f] = m.text
            replaced += m.replaced
    return texts, sorted(replaced), {n: why for n, why in refused.items() if n not in replaced}


def _place_regions(wf: Workflow, parsed: dict[Path, tuple[SourceFile, object]], texts: dict[Path, str],
                   kernels: dict[str, ir.Kernel], facts: ProcedureFacts) -> dict[str, Any]:
    """Data regions in the program's routines (``texts`` updated): where they are, the update
    calls made, the routines a region stays open through, and the loops and routines it cannot."""
    dummies = {n: list(enumerate(p for p in kern.params if not p.binding)) for n, kern in kernels.items()}
    translated = {n: frozenset(k for k, p in ps if isinstance(p, ir.Array)) for n, ps in dummies.items()}
    globals_ = {p.name.lower() for kern in kernels.values() for p in kern.params
                if isinstance(p, ir.Array) and (p.binding or "").split(":")[0] in ("module", "common", "program")}
    out: dict[str, Any] = {"regions": [], "updates": 0, "through": [], "refused": []}
    if not translated:
        return out
    written = {n: frozenset(k for k, p in ps if isinstance(p, ir.Scalar) and p.intent is not ir.Intent.IN)
               for n, ps in dummies.items()}
    plan = plan_regions(facts, translated, globals_, written)
    for f, (source, tree) in parsed.items():
        text = texts.get(f)
        try:  # a migrated file is read again; one left as it was keeps its tree
            placed = place_regions(f, wf.root, text or source.pp.text, plan, parsed=None if text else (source, tree))
        except ParseError as err:
            out["refused"].append(f"{err}")
            continue
        if placed.text != (text or source.pp.text):
            texts[f] = placed.text
        out["regions"] += placed.regions
        out["updates"] += placed.updates
        out["refused"] += placed.refused
    out["through"] = sorted(plan.transparent)
    out["refused"] += [f"{n}: regions are suspended around its calls: {why}" for n, why in sorted(plan.opaque.items())]
    return out


def _write(wf: Workflow, rels: dict[Path, str], texts: dict[Path, str], dest: Path) -> dict[str, str]:
    """The migrated files written under ``dest``: original path -> their path in the project."""
    swap = {}
    for f, text in texts.items():
        rel = rels[f]
        if f.suffix != f.suffix.lower():  # preprocessed already: compiled as it is
            rel = rel[: -len(f.suffix)] + f.suffix.lower()
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(text)
        swap[rels[f]] = rel
    return swap


def _build_and_run(wf: Workflow, program: ProgramConfig, name: str, folder: Path, section: dict[str, Any],
                   progress: Any) -> None:
    probe = toolchains.Probe()
    built = [t for t in section["targets"] if all(probe.get(tool).available for tool in TARGETS[t].toolchain)]
    exes = [f"{name}_original", *(f"{name}_{t}" for t in built)]
    progress(f"program {name}: building {', '.join(exes)}")
    builds = build_program(folder, folder / "build", exes, program.run.timeout, program_options(built))
    inputs = [wf.root / i for i in program.run.inputs]
    checks = checks_of(program.check.model_dump(mode="json"))
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
            missing = [t for t in TARGETS[target].toolchain if not probe.get(t).available]
            info.update(status="not built", reason=f"{', '.join(missing)} not found (see translate doctor)")
            continue
        if not b.ok or b.executable is None:
            info.update(status="failed", reason=f"does not build: {b.reason}", log=b.log)
            continue
        if TARGETS[target].needs_gpu_to_run and not probe.gpu():
            info.update(status="compiled", reason="built; no CUDA GPU here to run it")
            continue
        progress(f"program {name}: running the {target} build")
        got, info["transfers"] = run_migrated(b.executable, folder / "run", target, program.run.args, inputs,
                                              program.run.timeout)
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
        if not good and info["data"]["regions"]:
            info["reason"] = blame(b.executable, folder / "run" / f"{target}-data-off", program, inputs, base, checks)
            progress(f"program {name}: {target}: {info['reason']}")
    section["status"] = "matched" if passed and all(passed) else "differs" if passed else "not run"


def blame(exe: Path, folder: Path, program: ProgramConfig, inputs: list[Path], base: ProgramRun,
          checks: Checks) -> str:
    """Why a migrated build with data regions differs: the regions' placement (it matches with
    them turned off) or a translation (it differs either way)."""
    off = run_program(exe, folder, program.run.args, inputs, program.run.timeout, {"KT_DATA": "off"})
    if off.ok and all(v.ok for v in judge(base, off, checks)):
        return ("with its data regions turned off (KT_DATA=off) it matches: host code reads or writes a mapped "
                "array where no update was placed (through an alias or a routine the analysis did not see)")
    return "it differs with its data regions turned off too: a translation is at fault"
