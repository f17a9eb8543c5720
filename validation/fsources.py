"""The project's Fortran files as the reference build compiles them.

:func:`scan` reads every file with fparser (``parsers.fortran_units``): the units it
defines and the modules they USE. A file holding a main program is not compiled as
it is: a shared library has no place for ``main``, and the procedures a program
CONTAINs cannot be called from outside it. The build compiles a copy instead (made
from the preprocessed text, so it is compiled without -cpp) in which each main
program with contained procedures becomes ``module kt_host_<name>`` (the program's
specification part, ``contains``, its procedures; the executable part dropped), and a
main program without any is left out. :func:`compile_order` puts each file after
the files whose modules it USEs and names the modules of a cycle.

Imported by :func:`validation.runners.build_reference` only when it builds (it needs
fparser, which the GPU-side modules must not import).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fparser.two import Fortran2003 as F
from fparser.two.utils import walk

from parsers.base import ParseError
from parsers.fortran_units import (
    INTRINSIC_MODULES,
    SourceFile,
    UnitInfo,
    contained,
    first_line,
    last_line,
    make_parser,
    read,
    spec_part,
    unit_name,
    unit_table,
)
from translate import ir
from validation.fwrapper import host_module


@dataclass
class FortranFile:
    """One Fortran file of the build. ``units`` is empty when fparser could not read it
    (``note`` says why; the file is then compiled as it is). ``copy`` is the text compiled
    instead of the file where it holds a main program, ``copy_lines`` the line of the
    preprocessed text each of its lines came from; ``left_out`` says why nothing of the
    file is compiled (it held only a main program without contained procedures)."""

    path: Path
    rel: str
    units: tuple[UnitInfo, ...] = ()
    parsed: bool = False
    note: str = ""
    source: SourceFile | None = None
    copy: str | None = None
    copy_lines: tuple[int, ...] = ()
    left_out: str = ""
    programs: dict[str, str] = field(default_factory=dict)  # program name -> what became of it

    @property
    def fixed(self) -> bool:
        return bool(self.source and self.source.fixed)

    def defines(self) -> list[str]:
        """The modules compiling this file makes (a main program's ``kt_host_`` module too)."""
        out = [u.name for u in self.units if u.kind == "module"]
        return out + [host_module(p) for p, what in self.programs.items() if what == "module"]

    def needs(self) -> list[str]:
        """The modules this file USEs that it does not define itself (intrinsic ones aside);
        the USEs of a main program that is left out do not count."""
        own = set(self.defines())
        out: list[str] = []
        for u in self.units:
            if u.host is not None or (u.kind == "program" and self.programs.get(u.name) != "module"):
                continue
            out += [m for m in u.uses if m not in own and m not in INTRINSIC_MODULES and m not in out]
        return out

    def where(self, line: int, copy: bool = False) -> str:
        """``file:line`` of a line of the file (or of its copy, ``copy``) in the original sources."""
        if copy and self.copy_lines:
            line = self.copy_lines[line - 1] if 1 <= line <= len(self.copy_lines) else 0
        if self.source is None or line <= 0:
            return f"{self.rel}:{line}" if line > 0 else self.rel
        return self.source.where(line)


def scan(paths: Sequence[Path], root: Path, include: Sequence[Path], defines: dict[str, str]) -> list[FortranFile]:
    """Every file read and parsed; a file fparser cannot parse keeps no units and a note."""
    parser = make_parser()
    out: list[FortranFile] = []
    for path in paths:
        rel = _rel(path, root)
        try:
            source, tree = read(path, root, parser, list(include), dict(defines))
        except ParseError as err:
            out.append(FortranFile(path, rel, note=f"fparser could not parse it ({err}): it is compiled as it is, "
                                                   "and routines found nowhere else are called as external"))
            continue
        f = FortranFile(path, rel, tuple(unit_table(tree)), True, source=source)
        # Main_Program0: a main program without a PROGRAM statement (old fixed-form code)
        programs = [u for u in getattr(tree, "children", ()) if isinstance(u, (F.Main_Program, F.Main_Program0))]
        if programs:
            _host_copy(f, programs)
        out.append(f)
    return out


def _rel(path: Path, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


# ------------------------------------------------------------ main programs


def _spans(node: object) -> list[tuple[int, int]]:
    """The line spans of the statements under ``node`` (comments left aside)."""
    out = []
    for n in walk(node):
        span = getattr(getattr(n, "item", None), "span", None)
        if span and not isinstance(n, F.Comment):
            out.append((int(span[0]), int(span[1])))
    return out


def _host_copy(f: FortranFile, programs: list[object]) -> None:
    """``f.copy``: the preprocessed text with every main program rewritten (see the module doc)."""
    assert f.source is not None
    lines: list[tuple[str, int]] = [(text, k + 1) for k, text in enumerate(f.source.lines)]
    indent = " " * 6 if f.fixed else ""
    inserted: dict[int, str] = {}  # line -> a line to put before it (a PROGRAM without a PROGRAM statement)
    for prog in programs:
        named = isinstance(prog, F.Main_Program)
        name = unit_name(prog) if named else "main"
        if named:
            lo, hi = first_line(prog), last_line(prog)
        else:
            spans = _spans(prog)
            lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
        inner = contained(prog)
        if not inner:
            f.programs[name] = "left out"
            for k in range(lo, hi + 1):
                lines[k - 1] = ("", k)
            continue
        f.programs[name] = "module"
        spec = spec_part(prog)
        spec_end = max((hi_ for _, hi_ in _spans(spec)), default=lo) if spec is not None else lo
        part = next(c for c in prog.children if isinstance(c, F.Internal_Subprogram_Part))  # type: ignore[attr-defined]
        contains_line = first_line(part)
        keep = set(range(lo, spec_end + 1)) | set(range(contains_line, hi + 1))
        for stmt in walk(spec, (F.Format_Stmt, F.Stmt_Function_Stmt)) if spec is not None else ():
            # a FORMAT (only the dropped executable part can use it) or a statement function
            # (not allowed in a module) is dropped with the executable part
            s, e = stmt.item.span  # type: ignore[attr-defined]
            keep -= set(range(s, e + 1))
        for k in range(lo, hi + 1):
            if k not in keep:
                lines[k - 1] = ("", k)
        if named:
            lines[lo - 1] = (f"{indent}module {host_module(name)}", lo)
        else:
            inserted[lo] = f"{indent}module {host_module(name)}"
        lines[hi - 1] = (f"{indent}end module {host_module(name)}", hi)
    text: list[str] = []
    origin: list[int] = []
    for body, k in lines:
        if k in inserted:
            text.append(inserted[k])
            origin.append(k)
        text.append(body)
        origin.append(k)
    if all(what == "left out" for what in f.programs.values()) and all(
            u.kind == "program" for u in f.units if u.host is None):
        names = ", ".join(f.programs)
        f.left_out = f"it holds only the main program {names} (no contained procedures): left out of the reference"
        return
    f.copy = "\n".join(text) + "\n"
    f.copy_lines = tuple(origin)


# ------------------------------------------------------------ compile order


def compile_order(files: Sequence[FortranFile]) -> tuple[list[FortranFile], dict[str, str]]:
    """The parsed files, each after the files defining the modules it USEs, and for the
    files caught in a cycle of USEs (left out of the order) the cycle, by module name."""
    owner = module_owners(files)
    state: dict[str, str] = {}  # rel -> "visiting" | "done"
    order: list[FortranFile] = []
    cycles: dict[str, str] = {}

    def visit(f: FortranFile, chain: tuple[tuple[FortranFile, str], ...]) -> None:
        if state.get(f.rel) == "done":
            return
        if state.get(f.rel) == "visiting":
            at = next(k for k, (g, _) in enumerate(chain) if g.rel == f.rel)
            loop = chain[at:]
            used = [m for _, m in loop]  # used[k]: the module loop[k] USEs, defined by loop[k+1]
            names = " -> ".join([used[-1], *used])  # from the module of the file first visited
            for g, _ in loop:
                cycles.setdefault(g.rel, f"modules USE each other in a cycle: {names}")
            return
        state[f.rel] = "visiting"
        for m in f.needs():
            dep = owner.get(m)
            if dep is not None and dep.rel != f.rel:
                visit(dep, (*chain, (f, m)))
        state[f.rel] = "done"
        order.append(f)

    for f in files:
        if f.parsed and not f.left_out:
            visit(f, ())
    return [f for f in order if f.rel not in cycles], cycles


def module_owners(files: Sequence[FortranFile]) -> dict[str, FortranFile]:
    """Module name -> the (first) file defining it."""
    out: dict[str, FortranFile] = {}
    for f in files:
        for m in f.defines():
            out.setdefault(m, f)
    return out


@dataclass(frozen=True)
class Home:
    """Where a routine is defined: its file and the module a wrapper USEs for it (None:
    an external procedure)."""

    file: FortranFile
    module: str | None


def homes(files: Sequence[FortranFile]) -> dict[str, list[Home]]:
    """Every subroutine and function -> where it is defined (several places when files
    define it more than once); procedures of main programs live in their ``kt_host_`` module."""
    out: dict[str, list[Home]] = {}
    for f in files:
        for u in f.units:
            if u.kind not in ("subroutine", "function"):
                continue
            if u.host_kind == "program" and f.programs.get(u.host or "") != "module":
                continue
            module = host_module(u.host) if u.host_kind == "program" and u.host else u.host
            out.setdefault(u.name, []).append(Home(f, module))
    return out


def home_of(name: str, origin: ir.Origin | str, table: dict[str, list[Home]]) -> Home | None:
    """The home of routine ``name`` in the file ``origin`` (a kernel's origin) names, else
    its first home; None when no parsed file defines it."""
    found = table.get(name.lower(), [])
    want = origin.path if isinstance(origin, ir.Origin) else str(origin).rsplit(":", 1)[0]
    for h in found:
        if want and (h.file.rel == want or str(h.file.path).endswith("/" + want)):
            return h
    return found[0] if found else None
