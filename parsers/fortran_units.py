"""The program units of Fortran files, found with fparser2.

Reads a file (through the C preprocessor where it needs one), parses it, and lists
what it defines: modules, main programs, external subroutines and functions, and
the procedures inside modules and programs, each with the lines it spans and the
modules it USEs. The frontend lowers these units; the reference build uses the
same table to know which module holds a routine and to compile files in the order
of their USEs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from fparser.common.readfortran import FortranStringReader
from fparser.common.sourceinfo import FortranFormat
from fparser.two import Fortran2003 as F
from fparser.two.parser import ParserFactory
from fparser.two.utils import FortranSyntaxError, walk

from parsers.base import ParseError, Preprocessed, expand_includes, needs_cpp, run_cpp

FIXED_SUFFIXES = (".f", ".for", ".f77", ".ftn")
FREE_SUFFIXES = (".f90", ".f95", ".f03", ".f08")
INTRINSIC_MODULES = ("iso_fortran_env", "iso_c_binding", "omp_lib", "omp_lib_kinds", "ieee_arithmetic",
                     "ieee_exceptions", "ieee_features")
PROCEDURES = (F.Subroutine_Subprogram, F.Function_Subprogram)


@dataclass(frozen=True)
class BadUnit:
    """A program unit of a file that fparser could not parse, parsed apart from the rest."""

    kind: str  # subroutine | function | program | module
    name: str
    first: int  # its lines in the preprocessed text
    last: int
    reason: str


@dataclass
class SourceFile:
    """One source file as the parser saw it: its (preprocessed) lines and where each came from;
    ``bad``: the units that did not parse when the file as a whole did not."""

    rel: str
    pp: Preprocessed
    lines: list[str]
    root: Path
    fixed: bool = False
    bad: list[BadUnit] = field(default_factory=list)

    def rel_of(self, name: str) -> str:
        p = Path(name)
        try:
            return str(p.resolve().relative_to(self.root.resolve()))
        except (ValueError, OSError):
            return self.rel if p.name == Path(self.rel).name else name

    def origin(self, line: int) -> tuple[str, int]:
        name, orig = self.pp.origin(line)
        return self.rel_of(name), orig

    def where(self, line: int) -> str:
        name, orig = self.origin(line)
        return f"{name}:{orig}"


@dataclass(frozen=True)
class UnitInfo:
    """A program unit: ``kind`` is module, program, subroutine or function; ``host`` the
    module or program it is contained in (None for an external procedure); ``first`` and
    ``last`` its lines in the preprocessed text; ``uses`` the modules its specification
    part USEs."""

    kind: str
    name: str
    first: int
    last: int
    host: str | None = None
    host_kind: str | None = None
    uses: tuple[str, ...] = ()


def make_parser() -> object:
    return ParserFactory().create(std="f2008")


def read(path: Path, root: Path, parser: object, include: list[Path], defines: dict[str, str],
         text: str | None = None, fixed: bool | None = None) -> tuple[SourceFile, object]:
    """Preprocess (where needed) and parse one file; ``ParseError`` names the file and line."""
    try:
        rel = str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        rel = str(path)
    if text is None:
        try:
            text = path.read_text(errors="replace")
        except OSError as err:
            raise ParseError(rel, 0, f"cannot read: {err}") from err
    if fixed is None:
        fixed = path.suffix.lower() in FIXED_SUFFIXES
    if needs_cpp(path, text):
        try:
            pp = run_cpp(path.resolve() if path.exists() else path, text, include, defines)
        except ParseError as err:
            raise ParseError(rel, err.line, err.message) from err
    else:
        pp = Preprocessed(text, tuple((str(path), i + 1) for i in range(text.count("\n") + 1)))
    try:
        pp = expand_includes(path.resolve() if path.exists() else path, pp, include)
    except ParseError as err:
        raise ParseError(rel if err.path == str(path.resolve()) else err.path, err.line, err.message) from err
    f = SourceFile(rel, pp, pp.text.splitlines(), root, fixed)
    try:
        return f, _parse(parser, pp.text, fixed, f)
    except ParseError:
        chunks = split_units(f.lines, fixed)
        if len(chunks) < 2:
            raise
    # a bad unit costs that unit only: each unit parsed on its own (the others' lines blank, so
    # every line keeps its number)
    units: list[object] = []
    for kind, name, first, last in chunks:
        text = "\n".join(line if first <= k + 1 <= last else "" for k, line in enumerate(f.lines)) + "\n"
        try:
            units += top_units(_parse(parser, text, fixed, f))
        except ParseError as err:
            f.bad.append(BadUnit(kind, name, first, last, f"{err.path}:{err.line}: {err.message}"))
    return f, ParsedUnits(units)


@dataclass
class ParsedUnits:
    """The units of a file parsed one by one."""

    children: list[object]


def _parse(parser: object, text: str, fixed: bool, f: SourceFile) -> object:
    reader = FortranStringReader(text, ignore_comments=False)
    reader.set_format(FortranFormat(not fixed, False))
    try:
        tree = parser(reader)  # type: ignore[operator]
    except FortranSyntaxError as err:
        m = re.search(r"at line (\d+)", str(err))
        line = int(m.group(1)) if m else 0
        name, orig = f.origin(line) if line else (f.rel, 0)
        detail = str(err).split("\n", 1)[-1].strip().lstrip(">").strip()
        raise ParseError(name, orig, f"Fortran syntax error: {detail}") from err
    except Exception as err:  # fparser raises assorted internal errors on bad input
        raise ParseError(f.rel, 0, f"fparser could not parse the file: {err}") from err
    if tree is None:
        raise ParseError(f.rel, 0, "empty or unparsable file")
    return tree


_PREFIX = r"(?:(?:recursive|pure|elemental|impure|module)\s+)*"
_TYPE = r"(?:(?:integer|real|double\s*precision|logical|complex|character)(?:\s*\*\s*\d+|\s*\([^)]*\))?\s+)?"
_HEADER = re.compile(rf"^\s*{_PREFIX}{_TYPE}(subroutine|function)\s+(\w+)|^\s*(program)\s+(\w+)"
                     r"|^\s*(module)\s+(?!procedure\b)(\w+)\s*$", re.I)
_END = re.compile(r"^\s*end\s*(?:(subroutine|function|program|module)(?:\s+\w+)?)?\s*$", re.I)


def split_units(lines: list[str], fixed: bool) -> list[tuple[str, str, int, int]]:
    """The top-level program units of a file's lines (kind, name, first and last line, 1-based),
    found from their first and END statements: how a file fparser cannot parse is cut into
    units that it may."""
    out: list[tuple[str, str, int, int]] = []
    depth, start, kind, name = 0, 0, "", ""
    for k, raw in enumerate(lines, start=1):
        if fixed and (raw[:1] in ("c", "C", "*", "!") or (len(raw) > 5 and raw[5] not in (" ", "0"))):
            continue  # a comment or a continuation line
        text = (raw[6:] if fixed else raw).split("!", 1)[0]
        head = _HEADER.match(text)
        if head is not None:
            if depth == 0:
                groups = [g for g in head.groups() if g]
                start, kind, name = k, groups[0].lower(), groups[1].lower()
            depth += 1
            continue
        end = _END.match(text)
        if end is not None and depth > 0:
            depth -= 1
            if depth == 0:
                out.append((kind, name, start, k))
    return out


def head(unit: object) -> object:
    return next(c for c in unit.children if not isinstance(c, F.Comment))  # type: ignore[attr-defined]


def unit_name(unit: object) -> str:
    names = [c for c in getattr(head(unit), "items", ()) if isinstance(c, F.Name)]
    return str(names[0]).lower() if names else "main"


def first_line(unit: object) -> int:
    return head(unit).item.span[0]  # type: ignore[attr-defined]


def last_line(unit: object) -> int:
    for c in reversed(unit.children):  # type: ignore[attr-defined]
        item = getattr(c, "item", None)
        if item is not None and getattr(item, "span", None):
            return item.span[1]
    return first_line(unit)


def spec_part(unit: object) -> object | None:
    return next((c for c in unit.children if isinstance(c, F.Specification_Part)), None)  # type: ignore[attr-defined]


def contained(unit: object) -> list[object]:
    """The procedures a module (MODULE ... CONTAINS) or a main program or procedure
    (internal procedures) contains."""
    out: list[object] = []
    for part in unit.children:  # type: ignore[attr-defined]
        if isinstance(part, (F.Module_Subprogram_Part, F.Internal_Subprogram_Part)):
            out.extend(c for c in part.children if isinstance(c, PROCEDURES))
    return out


def used_modules(node: object | None) -> list[str]:
    """The modules the USE statements directly in ``node`` (a specification part) name."""
    if node is None:
        return []
    out: list[str] = []
    for stmt in getattr(node, "children", ()):
        if isinstance(stmt, F.Use_Stmt):
            name = str(stmt.items[2]).lower()
            if name not in out:
                out.append(name)
    return out


def all_used_modules(unit: object) -> list[str]:
    """Every module a unit or anything inside it USEs (its compile-time dependencies)."""
    out: list[str] = []
    for stmt in walk(unit, F.Use_Stmt):
        name = str(stmt.items[2]).lower()
        if name not in out:
            out.append(name)
    return out


def top_units(tree: object) -> list[object]:
    return [u for u in getattr(tree, "children", ())
            if isinstance(u, (F.Module, F.Main_Program, *PROCEDURES))]


def unit_table(tree: object) -> list[UnitInfo]:
    """Every unit of a parsed file, the procedures inside modules and programs included."""
    out: list[UnitInfo] = []
    for u in top_units(tree):
        kind = ("module" if isinstance(u, F.Module) else "program" if isinstance(u, F.Main_Program)
                else "subroutine" if isinstance(u, F.Subroutine_Subprogram) else "function")
        name = unit_name(u)
        uses = tuple(all_used_modules(u))
        out.append(UnitInfo(kind, name, first_line(u), last_line(u), uses=uses))
        if kind in ("module", "program"):
            for p in contained(u):
                pk = "subroutine" if isinstance(p, F.Subroutine_Subprogram) else "function"
                out.append(UnitInfo(pk, unit_name(p), first_line(p), last_line(p), name, kind,
                                    tuple(used_modules(spec_part(p)))))
    return out
