"""The migrated program's Fortran: a source file with each translated routine's executable
part replaced by a call of its translation (``kt_NAME`` through the generated ``NAME_kt``
interface module), its header, declarations and contained procedures unchanged.

:func:`call_statement` is the call a routine makes of its translation: every parameter of
the kernel by the name the routine knows it by (its dummy arguments, the COMMON, module and
host variables it reads), an extent of an assumed-shape array as ``size(array, k)``, a
LOGICAL passed by value as 0 or 1. :func:`migrate_file` splices those calls into a file
(read with fparser, so fixed and free form, continuation lines and preprocessing are the
frontend's own); the text it returns is the preprocessed text where the file needed cpp.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fparser.two import Fortran2003 as F
from fparser.two.utils import walk

from parsers.fortran_units import SourceFile, contained, head, make_parser, read, spec_part, top_units, unit_name
from translate import ir

FIXED_WIDTH = 72  # the last column of a fixed-form statement
FREE_WIDTH = 100  # where a free-form statement is continued


class NotMigrated(Exception):
    """A routine whose translation cannot be called in its place, and why."""


def interface_module(kernel: ir.Kernel) -> str:
    """The module of :func:`targets.fortran_interface.fortran_interface` for ``kernel``."""
    return f"{kernel.name.lower()}_kt"


def call_statement(kernel: ir.Kernel, result: str | None = None) -> str:
    """The statement that calls ``kernel``'s translation from inside the original routine
    (``result``: a function's result variable where it is not the function's name)."""
    args = []
    for p in kernel.params:
        name = p.name.lower()
        if (p.binding or "").startswith("extent:"):
            _, array, k = p.binding.split(":")
            args.append(f"size({array.lower()}, {k})")
        elif p.dtype is ir.DType.BOOL:
            if isinstance(p, ir.Array) or p.intent.writes:
                raise NotMigrated(f"LOGICAL '{name}' is written: the C interface passes it as an integer")
            args.append(f"merge(1, 0, {name})")
        elif p.dtype in (ir.DType.F16, ir.DType.BF16):
            raise NotMigrated(f"'{name}' is {p.dtype.value}: Fortran has no C-interoperable type for it")
        else:
            args.append(name)
    call = f"kt_{kernel.name.lower()}({', '.join(args)})"
    return f"{result or kernel.name.lower()} = {call}" if kernel.result is not None else f"call {call}"


def format_statement(text: str, fixed: bool, indent: str = "") -> list[str]:
    """``text`` as source lines: fixed form from column 7 with continuation marks in column 6,
    free form continued with ``&`` (lines of at most 72 or 100 columns)."""
    if fixed:
        width = FIXED_WIDTH - 6
        chunks = [text[i:i + width] for i in range(0, len(text), width)] or [""]
        return [f"      {chunks[0]}", *(f"     &{c}" for c in chunks[1:])]
    first = f"{indent}{text}"
    if len(first) <= FREE_WIDTH:
        return [first]
    width = FREE_WIDTH - len(indent) - 4
    chunks = [text[i:i + width] for i in range(0, len(text), width)]
    return [f"{indent}{chunks[0]}&", *(f"{indent}  &{c}&" for c in chunks[1:-1]), f"{indent}  &{chunks[-1]}"]


@dataclass(frozen=True)
class Migrated:
    """A file of the migrated program: its text, the routines replaced in it and those that
    could not be, with why."""

    text: str
    replaced: tuple[str, ...]
    refused: Mapping[str, str]


def migrate_file(path: Path, root: Path, kernels: Mapping[str, ir.Kernel], include: list[Path] | None = None,
                 defines: Mapping[str, str] | None = None, parsed: tuple[SourceFile, object] | None = None
                 ) -> Migrated:
    """``path`` with the executable part of every routine named in ``kernels`` (lower-case
    names) replaced by a call of its translation, and a USE of its interface module put
    first in its specification part. ``parsed``: the file as :func:`read` gave it already."""
    f, tree = parsed or read(path, root, make_parser(), list(include or []), dict(defines or {}))
    lines = list(f.lines)
    edits: list[tuple[int, int, list[str]]] = []  # (first, last) lines replaced, 1-based, inclusive
    replaced, refused = [], {}
    for unit, host in _procedures(tree):
        name = unit_name(unit)
        kernel = kernels.get(name)
        if kernel is None:
            continue
        try:
            call = call_statement(kernel, _result_name(unit))
            uses = _globals_used(kernel, unit, host)
        except NotMigrated as why:
            refused[name] = str(why)
            continue
        body = next((c for c in unit.children if isinstance(c, F.Execution_Part)), None)
        spans = [s for c in walk(body) if (s := getattr(getattr(c, "item", None), "span", None))] \
            if body is not None else []
        if not spans:
            refused[name] = "it has no executable statements to replace"
            continue
        if any(isinstance(c, F.Entry_Stmt) for c in body.children):
            refused[name] = "it has ENTRY statements"
            continue
        header_end = head(unit).item.span[1]
        first, last = min(s[0] for s in spans), max(s[1] for s in spans)
        indent = _indent(lines[first - 1])
        use = [line for stmt in [f"use {interface_module(kernel)}, only: kt_{name}", *uses]
               for line in format_statement(stmt, f.fixed, indent)]
        lead = "c " if f.fixed else f"{indent}! "
        comment = f"{name}: its translation runs here (generated by kernel-translate from {f.where(first)})"
        width = (FIXED_WIDTH if f.fixed else FREE_WIDTH) - len(lead)
        stmt = [*(lead + part for part in textwrap.wrap(comment, width)), *format_statement(call, f.fixed, indent)]
        edits += [(first, last, stmt), (header_end + 1, header_end, use)]
        replaced.append(name)
    for first, last, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        lines[first - 1:last] = new
    return Migrated("\n".join(lines) + "\n", tuple(replaced), refused)


def _procedures(tree: object) -> list[tuple[object, tuple[str, str] | None]]:
    """Every subroutine and function of a parsed file with its host (kind, name): external
    ones (no host) and those inside modules and main programs."""
    out: list[tuple[object, tuple[str, str] | None]] = []
    for unit in top_units(tree):
        if isinstance(unit, (F.Subroutine_Subprogram, F.Function_Subprogram)):
            out.append((unit, None))
        kind = "module" if isinstance(unit, F.Module) else "program"
        out.extend((p, (kind, unit_name(unit))) for p in contained(unit))
    return out


def _globals_used(kernel: ir.Kernel, unit: object, host: tuple[str, str] | None) -> list[str]:
    """USE statements that make the module variables the kernel takes visible in the routine
    (a routine it calls may have read them); a COMMON or main-program variable the routine
    cannot see by name is refused."""
    declared = {str(n).lower() for n in walk(spec_part(unit), F.Name)} if spec_part(unit) is not None else set()
    uses: dict[str, list[str]] = {}
    for p in kernel.params:
        kind, _, where = (p.binding or "").partition(":")
        where = where.strip().strip("/").lower()
        if kind == "module" and host != ("module", where):
            uses.setdefault(where, []).append(p.name.lower())
        elif kind == "common" and p.name.lower() not in declared:
            raise NotMigrated(f"'{p.name.lower()}' of COMMON /{where}/ is read by a routine it calls, and is not "
                              "declared in it")
        elif kind == "program" and host != ("program", where):
            raise NotMigrated(f"'{p.name.lower()}' is a variable of program {where}, which does not contain it")
    return [f"use {m}, only: {', '.join(names)}" for m, names in uses.items()]


def _result_name(unit: object) -> str | None:
    """The RESULT variable of a function's header, if it names one."""
    found = [str(n).lower() for r in walk(head(unit), F.Suffix) for n in walk(r, F.Name)]
    return found[0] if found else None


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())] if line.strip() else "  "
