"""The reference of a C workflow: its own functions, compiled by the system C compiler.

Each source file is built into a shared library of its own (two files of a benchmark suite
may both define ``main`` or a helper of the same name), with the workflow's include folders,
defines and ``build:`` section (extra C sources, ``cflags``, libraries). The library's
translation unit ``#include``s the file, so a ``static`` function is reachable, and adds
an exported ``kt_ref_NAME`` per kernel with the C ABI of the generated shims
(docs/CONVENTIONS.md: arrays and scalars carried out as pointers, others by value) that calls
the function as written: VLA extents, ``double (*a)[M]`` and ``restrict`` are the compiler's
business. ``main`` is renamed so that it cannot clash. The worker (``validation.worker``,
``abi: c``) calls ``kt_ref_NAME`` through ctypes on the seeded inputs, every array followed by
a guard zone and every output poisoned, as it calls the Fortran reference.

Builds are cached by the hash of everything that goes into them.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from targets.cstyle import CStyleRenderer
from translate import ir
from validation.builds import content_hash, default_cache_dir, publish
from validation.processes import run_process, tail

LIBS = "libs.json"  # kernel name -> the library (file name) exporting its kt_ref_NAME


@dataclass
class CReference:
    ok: bool
    reason: str = ""
    lib_dir: Path | None = None
    failed: dict[str, str] = field(default_factory=dict)  # kernel -> why it has no reference
    log: str = ""
    cached: bool = False


def wrapper(kernel: ir.Kernel) -> str:
    """``kt_ref_NAME``: the C ABI of the shims, calling the function with its own signature."""
    params, args = [], []
    for p in kernel.params:
        if isinstance(p, ir.Array) or p.intent.writes:
            params.append(f"void *{p.name}")  # converts to whatever pointer the function declares
        else:
            params.append(f"{CStyleRenderer.ABI_TYPES[p.dtype]} {p.name}")
        args.append(p.name)
    ret = CStyleRenderer.ABI_TYPES[kernel.result] if kernel.result is not None else "void"
    call = f"{kernel.name}({', '.join(args)})"
    body = f"return {call};" if kernel.result is not None else f"{call};"
    return f"{ret} kt_ref_{kernel.name}({', '.join(params) or 'void'}) {{ {body} }}\n"


def source_of(kernel: ir.Kernel, sources: Sequence[Path]) -> Path | None:
    """The source file a kernel was read from (its origin is relative to the workflow's root)."""
    rel = kernel.origin.path
    found = [s for s in sources if s.as_posix() == rel or s.as_posix().endswith("/" + rel)]
    return found[0] if len(found) == 1 else None


def build_c_reference(sources: Sequence[Path], kernels: Sequence[ir.Kernel], include: Sequence[Path],
                      defines: dict[str, str], cache_dir: Path | None = None, timeout: float = 600, *,
                      extra_sources: Sequence[Path] = (), cflags: Sequence[str] = (),
                      libraries: Sequence[str] = ()) -> CReference:
    """One shared library per source file holding kernels; see the module doc."""
    sources = [Path(s).resolve() for s in sources]
    extra = [Path(s).resolve() for s in extra_sources if Path(s).resolve() not in sources]
    missing = [str(s) for s in [*sources, *extra] if not s.exists()]
    if missing:
        return CReference(False, f"source files not found: {', '.join(missing)}")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return CReference(False, "cannot build the C reference: no C compiler (cc) was found")
    inc = [f"-I{Path(i).resolve()}" for i in include]
    defs = [f"-D{k}={v}" if str(v) != "" else f"-D{k}" for k, v in sorted(defines.items())]
    inc_files = sorted(str(f) + f.read_text(errors="replace") for i in include for f in Path(i).rglob("*.h")
                       if f.is_file())
    sigs = sorted(repr((k.name, k.origin, k.result, k.params)) for k in kernels)
    key = content_hash(Path(__file__).read_text(), *sigs, *inc, *defs, "cflags", *cflags, "libs", *libraries,
                       *(str(s) + s.read_text(errors="replace") for s in [*sources, *extra]), *inc_files,
                       *(str(h) + h.read_text(errors="replace") for s in sources for h in s.parent.glob("*.h")),
                       cc, sys.version)
    final = Path(cache_dir or default_cache_dir()).resolve() / "reference" / f"c-{key}"
    if (final / "ok").exists():
        record = json.loads((final / "failed.json").read_text())
        return CReference(True, "", final, {str(k): str(v) for k, v in record.items()},
                          (final / "log.txt").read_text(), cached=True)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".c-{key}-", dir=final.parent))
    failed: dict[str, str] = {}
    libs: dict[str, str] = {}
    log: list[str] = []
    by_file: dict[Path, list[ir.Kernel]] = {}
    for k in kernels:
        src = source_of(k, sources)
        if src is None:
            failed[k.name] = f"the C reference cannot tell which source file defines {k.name} ({k.origin})"
        else:
            by_file.setdefault(src, []).append(k)
    for n, (src, ks) in enumerate(sorted(by_file.items())):
        unit = tmp / f"kt_ref_{n}.c"
        unit.write_text(f'#include "{src}"\n\n' + "".join(wrapper(k) for k in ks))
        lib = tmp / f"libktref_{n}_{src.stem}.so"
        cmd = [cc, "-O2", "-fPIC", "-shared", "-std=gnu99", *cflags, f"-I{src.parent}", *inc, *defs,
               f"-Dmain=kt_program_main_{n}", str(unit), *map(str, extra), "-o", str(lib), "-lm", *libraries]
        r = run_process(cmd, f"cc ({src.name})", timeout, cwd=tmp)
        log.append(f"$ {' '.join(cmd)}\n{r.output}")
        if not r.ok or not lib.exists():
            why = _first_error(r.output) or r.reason or "the C compiler produced no library"
            for k in ks:
                failed[k.name] = f"C reference build of {src.name} failed: {why}"
            continue
        for k in ks:
            libs[k.name] = lib.name
    if not libs and failed:
        shutil.rmtree(tmp, ignore_errors=True)
        return CReference(False, f"C reference build failed: {next(iter(failed.values()))}", failed=failed,
                          log=tail("\n".join(log)))
    text = tail("\n".join(log))
    (tmp / LIBS).write_text(json.dumps(libs, indent=1))
    (tmp / "failed.json").write_text(json.dumps(failed, indent=1))
    (tmp / "log.txt").write_text(text)
    (tmp / "ok").write_text("")
    publish(tmp, final)
    return CReference(True, "", final, failed, text)


def library(lib_dir: Path, kernel: str) -> Path | None:
    """The library of a built C reference that exports ``kt_ref_<kernel>``."""
    try:
        libs = json.loads((lib_dir / LIBS).read_text())
    except (OSError, ValueError):
        return None
    return lib_dir / libs[kernel] if kernel in libs else None


def _first_error(output: str) -> str:
    for line in output.splitlines():
        if " error: " in line or line.startswith("error:"):
            return line.strip()[:300]
    return ""
