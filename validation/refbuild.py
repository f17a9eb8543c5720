"""The steps of the Fortran reference build: compile, wrap, link (driven by
:func:`validation.runners.build_reference`, which runs each command through ``run``:
``run_process`` in production).

* :func:`compile_sources` compiles the project's Fortran files in the order of their
  USEs (:mod:`validation.fsources`: main programs compiled as ``kt_host_`` modules or
  left out), then the C sources a workflow declares. A file that does not compile is
  left out with its first compiler error, and so is a file that USEs a module of a
  left-out file; the rest of the build goes on.
* :func:`plan_wrappers` writes ``kt_ref_NAME`` for each kernel that can be run, and
  gives each of the others the reason it cannot (its file, or a module it needs, is
  not built; a signature the wrapper cannot express).
* :func:`check_wrappers` compiles the wrappers against the built modules and drops
  (with the compiler's error) each one that does not compile, so one bad wrapper
  costs only its own kernel.
* :func:`link_options` sorts a workflow's ``build.libraries`` into what f2py takes.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parsers.base import needs_cpp
from translate import ir
from validation import fwrapper
from validation.fsources import FortranFile, compile_order, home_of, homes, module_owners, scan
from validation.signature import ValidationError

FREE_FORM = (".f90", ".f95", ".f03", ".f08")
# "file:line:col:" (or "file:line:") alone on a line: where gfortran puts the location of a message
_LOCATION = re.compile(r"^(\S[^:]*):(\d+):(?:\d+:)?\s*$")
_MESSAGE = re.compile(r"^\s*(Fatal Error|Error):")
_GCC_ERROR = re.compile(r"^(\S[^:]*):(\d+):(?:\d+:)?\s*(?:fatal )?error:\s*(.*)$")

Run = Callable[..., Any]  # run_process(cmd, what, timeout, cwd=...) -> an object with ok, reason, output


@dataclass
class Compiled:
    """What :func:`compile_sources` built: the objects to link, the files left out
    (``failures``: the file as shown -> why), notes for the build log, every routine the
    sources define (lower case) and the compilers' output."""

    files: list[FortranFile]
    objects: list[Path] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    defined: set[str] = field(default_factory=set)
    log: list[str] = field(default_factory=list)
    compiled: int = 0  # workflow files (not stubs or extra sources) that compiled


def display_root(paths: Sequence[Path]) -> Path:
    """The folder messages name files relative to: the deepest one holding them all."""
    parents = [str(Path(p).resolve().parent) for p in paths]
    return Path(os.path.commonpath(parents)) if parents else Path.cwd()


def first_error(output: str, shown: Callable[[str, int], str]) -> str:
    """The first error in a compiler's output with its location (``shown`` maps a path and
    line of the compiled file to how a message names it), else its last line."""
    where = ""
    for line in output.splitlines():
        m = _LOCATION.match(line)
        if m:
            where = shown(m.group(1), int(m.group(2)))
        elif _MESSAGE.match(line):
            return f"{where}: {line.strip()}" if where else line.strip()
        elif (g := _GCC_ERROR.match(line)) is not None:
            return f"{shown(g.group(1), int(g.group(2)))}: error: {g.group(3).strip()}"
    lines = [ln.strip() for ln in output.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "(no output)"


def _shower(root: Path, copy: Path | None = None, f: FortranFile | None = None) -> Callable[[str, int], str]:
    """How a path and line from a compiler message are shown: a generated copy's lines as the
    original file's, other paths relative to ``root``."""
    def shown(path: str, line: int) -> str:
        if copy is not None and f is not None and Path(path).name == copy.name:
            return f.where(line, copy=True)
        p = Path(path)
        try:
            return f"{p.resolve().relative_to(root)}:{line}"
        except (ValueError, OSError):
            return f"{path}:{line}"
    return shown


def compile_sources(sources: Sequence[Path], extra: Sequence[Path], tmp: Path, include: Sequence[Path],
                    defines: dict[str, str], flags: Sequence[str], cflags: Sequence[str], timeout: float,
                    run: Run) -> Compiled:
    """Compile the workflow's Fortran ``sources`` and the ``extra`` files a workflow declares
    (Fortran and C) into objects under ``tmp/obj`` (see the module doc)."""
    fortran = [p for p in [*sources, *extra] if p.suffix != ".c"]
    root = display_root([*sources, *extra])
    objdir = tmp / "obj"
    objdir.mkdir(exist_ok=True)
    files = scan(fortran, root, include, defines)
    out = Compiled(files)
    out.notes += [f"{f.rel}: {f.note}" for f in files if f.note]
    out.notes += [f"{f.rel}: {f.left_out}" for f in files if f.left_out]
    out.defined = {u.name for f in files for u in f.units if u.kind in ("subroutine", "function")}
    for f in files:
        if not f.parsed:  # its routines are unknown: at least do not shadow an error handler it defines
            text = f.path.read_text(errors="replace").lower()
            out.defined |= {n for n in ("xerbla", "lsame") if re.search(rf"\b(subroutine|function)\s+{n}\b", text)}
    ordered, cycles = compile_order(files)
    for rel, why in cycles.items():
        out.failures[rel] = f"{rel} is left out: {why}"
    owners = module_owners(files)
    cpp = [f"-I{Path(i).resolve()}" for i in include]
    cpp_defs = [f"-D{k}={v}" if v != "" else f"-D{k}" for k, v in sorted(defines.items())]
    workflow = {Path(s).resolve() for s in sources}

    def build(k: int, f: FortranFile, final: bool) -> bool:
        for m in f.needs():
            owner = owners.get(m)
            if owner is not None and owner.rel != f.rel and owner.rel in out.failures:
                out.failures[f.rel] = f"{f.rel} USEs module {m}, and {out.failures[owner.rel]}"
                return False
        cmd = ["gfortran", "-c", "-fPIC", *flags, f"-J{objdir}", f"-I{objdir}", f"-I{f.path.parent}", *cpp]
        src, copy = f.path, None
        if f.copy is not None:  # a main program made a module: the preprocessed text, compiled as it is
            copy = tmp / "src" / f"{k}_{f.path.stem}{'.f' if f.fixed else '.f90'}"
            copy.parent.mkdir(exist_ok=True)
            copy.write_text(f.copy)
            src = copy
        elif needs_cpp(f.path, f.path.read_text(errors="replace")):
            cmd += ["-cpp", *cpp_defs]
        if src.suffix.lower() in FREE_FORM:
            cmd.append("-ffree-line-length-none")
        obj = objdir / f"{k}_{f.path.stem}.o"
        r = run([*cmd, str(src), "-o", str(obj)], f"gfortran {f.rel}", timeout, cwd=tmp)
        out.log.append(r.output)
        if r.ok:
            out.objects.append(obj)
            out.compiled += f.path.resolve() in workflow
            return True
        if final:
            reason = r.reason if "timed out" in r.reason else first_error(r.output, _shower(root, copy, f))
            out.failures[f.rel] = f"gfortran {f.rel} failed: {reason}"
        return False

    index = {f.rel: k for k, f in enumerate(files)}
    unparsed = [f for f in files if not f.parsed]
    # a file fparser could not read has unknown USEs: tried first, and again after the others
    retry = [f for f in unparsed if not build(index[f.rel], f, final=False)]
    for f in ordered:
        build(index[f.rel], f, final=True)
    for f in retry:
        build(index[f.rel], f, final=True)
    for j, (name, text) in enumerate(fwrapper.stubs_needed(out.defined).items()):
        (tmp / name).write_text(text)
        build(len(files) + j, FortranFile(tmp / name, name), final=True)
    for k, c in enumerate(p for p in extra if p.suffix == ".c"):
        _compile_c(k, c, root, objdir, cpp + cpp_defs, cflags, timeout, run, out)
    return out


def _compile_c(k: int, src: Path, root: Path, objdir: Path, cpp: list[str], cflags: Sequence[str], timeout: float,
               run: Run, out: Compiled) -> None:
    """One C source a workflow declares; one that does not compile is left out (calls into
    it then fail only the cases that make them)."""
    rel = _shower(root)(str(src), 0).rsplit(":", 1)[0]
    obj = objdir / f"c{k}_{src.stem}.o"
    r = run(["cc", "-c", "-fPIC", *cflags, f"-I{src.parent}", *cpp, str(src), "-o", str(obj)], f"cc {rel}",
            timeout, cwd=objdir)
    out.log.append(r.output)
    if r.ok:
        out.objects.append(obj)
    else:
        reason = first_error(r.output, _shower(root))
        out.failures[rel] = f"cc {rel} failed: {reason}"
        out.notes.append(f"{rel}: did not compile ({reason}): left out; a call into it fails the case making it")


def plan_wrappers(kernels: Sequence[ir.Kernel], compiled: Compiled) -> tuple[dict[str, str], dict[str, str]]:
    """``kt_ref_NAME`` for every kernel that can be run (name -> wrapper text), and for the
    others name -> why not."""
    table = homes(compiled.files)
    owners = module_owners(compiled.files)
    texts: dict[str, str] = {}
    failed: dict[str, str] = {}
    for k in kernels:
        name = k.name.lower()
        home = home_of(name, k.origin, table)
        why = ""
        if home is not None and home.file.rel in compiled.failures:
            why = compiled.failures[home.file.rel]
        for p in k.params:
            kind, _, where = (p.binding or "").partition(":")
            module = fwrapper.host_module(where) if kind == "program" else where.strip().lower()
            owner = owners.get(module) if kind in ("module", "program") else None
            if not why and owner is not None and owner.rel in compiled.failures:
                why = f"its variable {p.name} lives in module {module}, and {compiled.failures[owner.rel]}"
        if why:
            failed[name] = f"the reference cannot run {name}: {why}"
            continue
        try:
            texts[name] = fwrapper.wrapper(k, {name: home.module if home else None})
        except (ValidationError, KeyError, ValueError) as exc:
            failed[name] = f"the reference cannot wrap {name}: {exc}"
    return texts, failed


def check_wrappers(texts: dict[str, str], tmp: Path, timeout: float, run: Run) -> tuple[dict[str, str], dict[str, str]]:
    """The wrappers that compile against the built modules, and for the others name -> the
    compiler's first error. All at once first; one by one only when that fails."""
    objdir = tmp / "obj"

    def check(name: str, text: str) -> Any:
        path = tmp / "check" / f"{name}.f90"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        # as f2py compiles them (the standard line length)
        return run(["gfortran", "-fsyntax-only", f"-I{objdir}", f"-J{path.parent}", str(path)],
                   "gfortran (reference wrappers)", timeout, cwd=path.parent)

    if not texts or check("kt_all", "\n".join(texts.values())).ok:
        return texts, {}
    good: dict[str, str] = {}
    failed: dict[str, str] = {}
    for name, text in texts.items():
        r = check(f"kt_ref_{name}", text)
        if r.ok:
            good[name] = text
        else:
            shown = functools.partial(lambda kernel, _path, line: f"kt_ref_{kernel}:{line}", name)
            err = r.reason if "timed out" in r.reason else first_error(r.output, shown)
            failed[name] = f"the reference wrapper of {name} does not compile: {err}"
    return good, failed


def link_options(libraries: Sequence[str], objects: Sequence[Path]) -> tuple[list[str], list[str], str]:
    """A workflow's ``build.libraries`` as f2py takes them: ``-l``/``-L`` flags, files to
    link (objects, then archives and shared libraries, so that the objects' calls pull
    members out of an archive), and the other linker flags (``LDFLAGS``)."""
    flags: list[str] = []
    files: list[str] = [str(o) for o in objects]
    other: list[str] = []
    for lib in libraries:
        if lib.startswith(("-l", "-L")):
            flags.append(lib)
        elif lib.startswith("-"):
            other.append(lib)
        else:
            files.append(lib)
    return flags, files, " ".join(other)
