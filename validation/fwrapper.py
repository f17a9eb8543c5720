"""Fortran wrappers that make any routine callable through f2py.

For each kernel a subroutine ``kt_ref_NAME`` takes every parameter
explicitly: arrays flat (``dimension(ktn_X)``, passed in place, Fortran
order), out/inout scalars as 1-element arrays, CHARACTER*1 flags as
``character(len=1)``, COMMON-block and module variables (``binding``) as
extra arguments ``kv_X`` that are copied in before the call and out after it,
and a function's value stored into ``kt_result(1)``. Only the wrappers are
given to f2py (through a generated ``.pyf``), so f2py never has to parse the
project's own sources.
"""

from __future__ import annotations

import re
from pathlib import Path

from translate import ir
from validation.signature import ValidationError

FTYPE = {"f64": "real(8)", "f32": "real(4)", "i32": "integer(4)", "i64": "integer(8)", "bool": "logical",
         "char": "character(len=1)", "f16": "real(4)", "bf16": "real(4)"}

XERBLA_STUB = """\
      subroutine xerbla(srname, info)
      character*(*) srname
      integer info
      write(0, '(a,a,a,i3,a)') ' ** On entry to ', trim(srname),
     $     ' parameter number ', info, ' had an illegal value'
      end
"""

LSAME_STUB = """\
      logical function lsame(ca, cb)
      character ca, cb
      integer ia, ib
      ia = ichar(ca)
      ib = ichar(cb)
      if (ia .ge. 97 .and. ia .le. 122) ia = ia - 32
      if (ib .ge. 97 .and. ib .le. 122) ib = ib - 32
      lsame = ia .eq. ib
      end
"""

_COMMENT_FIXED = re.compile(r"^[cC*!].*$", re.M)
_UNIT = re.compile(r"^[^!\n'\"]*?\b(subroutine|function)\s+([a-z_]\w*)", re.M)
_MODULE = re.compile(r"^\s*(end\s*)?module\b(?!\s+procedure)\s*(\w*)", re.M)


def _strip(path: Path, text: str) -> str:
    if path.suffix.lower() in (".f", ".for", ".f77", ".ftn"):
        text = _COMMENT_FIXED.sub("", text)
    return text.lower()


def scan_units(sources: list[Path]) -> dict[str, str | None]:
    """Every subroutine/function defined in ``sources`` -> its module (None if
    external). A light scan, enough to decide stubs and ``use`` lines."""
    units: dict[str, str | None] = {}
    for path in sources:
        text = _strip(path, path.read_text(errors="replace"))
        events = [(m.start(), "mod", m) for m in _MODULE.finditer(text)]
        events += [(m.start(), "unit", m) for m in _UNIT.finditer(text)]
        current: str | None = None
        for _, kind, m in sorted(events, key=lambda e: e[0]):
            if kind == "mod":
                current = None if m.group(1) else (m.group(2) or None)
            else:
                line_start = text.rfind("\n", 0, m.start()) + 1
                if re.match(r"\s*end\b", text[line_start:m.start() + 1]):
                    continue
                units.setdefault(m.group(2), current)
    return units


def stubs_needed(sources: list[Path]) -> dict[str, str]:
    units = scan_units(sources)
    out = {}
    if "xerbla" not in units:
        out["kt_xerbla_stub.f"] = XERBLA_STUB
    if "lsame" not in units:
        out["kt_lsame_stub.f"] = LSAME_STUB
    return out


def _binding(p: ir.Decl) -> tuple[str, str] | None:
    if not p.binding:
        return None
    kind, _, rest = p.binding.partition(":")
    if kind == "common":
        return "common", rest.strip().strip("/").lower()
    if kind == "module":
        return "module", rest.strip().lower()
    raise ValidationError(f"unknown binding '{p.binding}' of '{p.name}' (use common:/blk/ or module:name)")


def _lines(head: str, items: list[str], tail: str = "") -> list[str]:
    """``head`` + comma-separated ``items`` + ``tail`` with free-form continuations."""
    out, cur = [], "  " + head
    for k, it in enumerate(items):
        piece = it + (", " if k < len(items) - 1 else "")
        if len(cur) + len(piece) > 100:
            out.append(cur + "&")
            cur = "      & "
        cur += piece
    out.append(cur + tail)
    return out


def wrapper(kernel: ir.Kernel, units: dict[str, str | None]) -> str:
    """The Fortran source of ``kt_ref_NAME`` for one kernel."""
    name = kernel.name.lower()
    args: list[str] = []
    dims: list[str] = []
    decls: list[str] = []
    pre: list[str] = []
    post: list[str] = []
    actual: list[str] = []
    uses: dict[str, list[str]] = {}
    commons: dict[str, list[str]] = {}
    for p in kernel.params:
        pn = p.name.lower()
        ft = FTYPE[p.dtype.value]
        bound = _binding(p)
        an = f"kv_{pn}" if bound else pn
        args.append(an)
        if isinstance(p, ir.Array):
            dims.append(f"ktn_{an}")
            decls.append(f"  {ft}, intent(inout) :: {an}(ktn_{an})")
            ref = an
        elif p.intent == ir.Intent.IN or p.dtype == ir.DType.CHAR:
            decls.append(f"  {ft}, intent(in) :: {an}")
            ref = an
        else:
            decls.append(f"  {ft}, intent(inout) :: {an}(1)")
            ref = f"{an}(1)"
        if bound is None:
            actual.append(ref)
            continue
        kind, where = bound
        if kind == "module":
            uses.setdefault(where, []).append(pn)
        else:
            if isinstance(p, ir.Array):
                try:
                    size = 1
                    for e in p.shape:
                        size *= int(ir.evaluate(e, {}))  # type: ignore[arg-type]
                except KeyError:
                    raise ValidationError(f"COMMON array '{p.name}' of {kernel.name} needs a constant shape") from None
                decls.append(f"  {ft} :: {pn}({size})")
            else:
                decls.append(f"  {ft} :: {pn}")
            commons.setdefault(where, []).append(pn)
        is_arr = isinstance(p, ir.Array)
        if p.intent.reads or not is_arr:
            if is_arr:
                pre.append(f"  {pn} = reshape({an}, shape({pn}))")
            elif p.intent.reads:
                pre.append(f"  {pn} = {ref}")
        if p.intent.writes:
            post.append(f"  {an} = reshape({pn}, [size({pn})])" if is_arr else f"  {ref} = {pn}")
    if kernel.result is not None:
        args.append("kt_result")
        decls.append(f"  {FTYPE[kernel.result.value]}, intent(inout) :: kt_result(1)")
    home = units.get(name)
    if home:
        uses.setdefault(home, []).append(name)
    lines = _lines(f"subroutine kt_ref_{name}(", args + dims, ")")
    lines += [f"  use {m}, only: {', '.join(vs)}" for m, vs in uses.items()]
    lines.append("  implicit none")
    lines += [f"  integer, intent(in) :: {d}" for d in dims]
    lines += decls
    lines += [f"  common /{blk}/ {', '.join(vs)}" for blk, vs in commons.items()]
    if kernel.result is not None:
        if not home:
            lines.append(f"  {FTYPE[kernel.result.value]}, external :: {name}")
        lines += pre
        lines += _lines(f"kt_result(1) = {name}(", actual, ")")
    else:
        if not home:
            lines.append(f"  external :: {name}")
        lines += pre
        lines += _lines(f"call {name}(", actual, ")")
    lines += post
    lines.append(f"end subroutine kt_ref_{name}")
    return "\n".join(lines) + "\n"


def wrappers(kernels: list[ir.Kernel], sources: list[Path]) -> str:
    units = scan_units(sources)
    return "\n".join(wrapper(k, units) for k in kernels)
