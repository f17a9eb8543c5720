"""Drop-in files for C callers of a region's translation (a C workflow's output).

* ``include/NAME.h``: the prototype of ``kt_NAME``, the C ABI entry of the Kokkos and CUDA
  shims (docs/CONVENTIONS.md), ``extern "C"`` under C++;
* ``c/NAME_dropin.c``, where the source function is not ``static``: a definition with the
  source's own signature (its file's ``#include`` lines, then the declaration as written)
  whose body calls ``kt_NAME``. Linked instead of the original object it replaces the
  function without touching its callers.
"""

from __future__ import annotations

import re
from pathlib import Path

from targets.base import shim_symbol
from targets.cstyle import CStyleRenderer
from translate import ir


def prototype(kernel: ir.Kernel) -> str:
    """``kt_NAME``'s prototype, as the shims define it (CONVENTIONS.md), in C's own spelling."""
    params = []
    for p in kernel.params:
        t = CStyleRenderer.ABI_TYPES[p.dtype]
        if isinstance(p, ir.Array):
            params.append(f"{'const ' if not p.intent.writes else ''}{t} *{p.name}")
        elif p.intent.writes:
            params.append(f"{t} *{p.name}")
        else:
            params.append(f"{t} {p.name}")
    ret = CStyleRenderer.ABI_TYPES[kernel.result] if kernel.result is not None else "void"
    return f"{ret} {shim_symbol(kernel)}({', '.join(params) or 'void'})"


def header(kernel: ir.Kernel) -> str:
    guard = f"KT_{re.sub(r'[^A-Za-z0-9]', '_', kernel.name).upper()}_H"
    arrays = [p for p in kernel.params if isinstance(p, ir.Array)]
    shapes = "".join(f" *   {p.name}: {' x '.join(ir.expr_str(s) for s in p.shape)} {p.dtype.value}, row-major\n"
                     for p in arrays)
    return (f"/* {shim_symbol(kernel)}: the translation of {kernel.name} ({kernel.origin}), the C entry of the\n"
            f" * kokkos and cuda shims (link the target's library). Arrays are host memory:\n{shapes} */\n"
            f"#ifndef {guard}\n#define {guard}\n\n#ifdef __cplusplus\nextern \"C\" {{\n#endif\n\n"
            f"{prototype(kernel)};\n\n#ifdef __cplusplus\n}}\n#endif\n\n#endif\n")


def signature_text(source: str, line: int) -> str | None:
    """The function's declaration as written, from its name's line up to its body's ``{``
    (None where it is ``static`` or cannot be found)."""
    lines = source.splitlines()
    if not 1 <= line <= len(lines):
        return None
    before = lines[line - 2].strip() if line >= 2 else ""
    text = "\n".join(lines[line - 1:])
    brace = text.find("{")
    if brace < 0:
        return None
    decl = text[:brace].strip()
    if re.match(r"^(static|inline)\b", decl) or re.fullmatch(r"(static|inline)(\s+\w+)*", before):
        return None
    return decl


def dropin(kernel: ir.Kernel, source: str) -> str | None:
    """``c/NAME_dropin.c``'s text, or None where the function cannot be replaced by relinking."""
    decl = signature_text(source, kernel.origin.line)
    if decl is None:
        return None
    includes = [ln for ln in source.splitlines() if re.match(r"^\s*#\s*include\b", ln)]
    args = ", ".join(f"(void *){p.name}" if isinstance(p, ir.Array) else p.name for p in kernel.params)
    call = f"{shim_symbol(kernel)}({args})"
    body = f"  return {call};" if kernel.result is not None else f"  {call};"
    return ("/* Drop-in replacement of " + f"{kernel.name} ({kernel.origin}): link this file and the target's\n"
            " * library instead of the original's object. */\n" + "\n".join(includes) +
            f'\n#include "../include/{kernel.name}.h"\n\n{decl}\n{{\n{body}\n}}\n')


def write(kernel: ir.Kernel, out_dir: Path, root: Path) -> list[Path]:
    """The region's header (and drop-in source where possible) under ``out_dir``."""
    written = []
    h = out_dir / "include" / f"{kernel.name}.h"
    h.parent.mkdir(parents=True, exist_ok=True)
    h.write_text(header(kernel))
    written.append(h)
    src = root / kernel.origin.path
    text = src.read_text(errors="replace") if src.is_file() else ""
    made = dropin(kernel, text) if text else None
    if made is not None:
        c = out_dir / "c" / f"{kernel.name}_dropin.c"
        c.parent.mkdir(parents=True, exist_ok=True)
        c.write_text(made)
        written.append(c)
    return written
