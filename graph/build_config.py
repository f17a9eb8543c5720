"""The ``build:`` section of a workflow: what the reference build compiles and links
besides the workflow's own sources.

```yaml
build:
  sources: [common/wtime.c, common/timers.f90]   # globs under root: compiled and linked into
                                                 # the reference, never translated (.c: C)
  flags: [-std=legacy, -fdefault-real-8]          # extra gfortran flags (the workflow's own sources too)
  cflags: [-O2]                                   # C compiler flags for the C sources
  libraries: [-lm, lib/libfoo.a, -L/opt/x/lib, -lbar]   # at link time; a path is relative to root
```
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from graph.yamlcheck import Checker, KeyPath

BUILD_KEYS = ("sources", "flags", "cflags", "libraries")
FORTRAN_SUFFIXES = (".f", ".for", ".f77", ".ftn", ".f90", ".f95", ".f03", ".f08", ".fpp")
C_SUFFIXES = (".c",)
LIBRARY_SUFFIXES = (".a", ".so", ".o")


@dataclass(frozen=True)
class BuildConfig:
    sources: tuple[str, ...] = ()  # globs, relative to the workflow root
    flags: tuple[str, ...] = ()  # extra gfortran flags
    cflags: tuple[str, ...] = ()  # C compiler flags
    libraries: tuple[str, ...] = ()  # linker arguments: -l, -L, other flags, or library files (relative to root)


def parse_build(c: Checker, p: KeyPath, value: object, root: Path | None,
                expand: Callable[[Path, str], list[Path]]) -> BuildConfig:
    """The ``build:`` mapping of a workflow, every problem reported through ``c``; ``root``
    is None when the workflow's root is itself wrong (paths are then not checked);
    ``expand(root, glob)`` lists the files a glob matches."""
    b = c.mapping(value, p, BUILD_KEYS)
    sources: list[str] = []
    if "sources" in b:
        for i, pattern in enumerate(c.string_list(b["sources"], (*p, "sources"), "globs")):
            sources.append(pattern)
            if root is None:
                continue
            matched = expand(root, pattern)
            if not matched:
                c.error((*p, "sources", i), f"glob '{pattern}' matches no file under {root}")
            odd = [m.name for m in matched if m.suffix.lower() not in FORTRAN_SUFFIXES + C_SUFFIXES]
            if odd:
                c.error((*p, "sources", i), f"glob '{pattern}' matches files that are neither Fortran nor C "
                        f"({', '.join(odd[:3])}); give libraries and objects under build.libraries")
    flags = _flags(c, (*p, "flags"), b)
    cflags = _flags(c, (*p, "cflags"), b)
    libraries: list[str] = []
    if "libraries" in b:
        for i, lib in enumerate(c.string_list(b["libraries"], (*p, "libraries"), "libraries")):
            libraries.append(lib)
            if lib.startswith("-") or root is None:
                continue
            if not (root / lib).is_file():
                c.error((*p, "libraries", i), f"library '{lib}' does not exist under {root} (a linker flag "
                        "starts with '-': -lNAME, -LDIR)")
            elif not lib.endswith(LIBRARY_SUFFIXES) and ".so." not in lib:
                c.error((*p, "libraries", i), f"'{lib}' is not a library or object file "
                        f"({', '.join(LIBRARY_SUFFIXES)})")
    return BuildConfig(tuple(sources), tuple(flags), tuple(cflags), tuple(libraries))


def _flags(c: Checker, p: KeyPath, b: dict[str, object]) -> list[str]:
    """A list of compiler flags: each starts with '-'."""
    key = str(p[-1])
    if key not in b:
        return []
    out = []
    for i, flag in enumerate(c.string_list(b[key], p, "compiler flags")):
        if not flag.startswith("-"):
            c.error((*p, i), f"'{flag}' is not a compiler flag (flags start with '-')")
        else:
            out.append(flag)
    return out


def library_args(build: BuildConfig, root: Path) -> list[str]:
    """``build.libraries`` as linker arguments: a library file and a relative ``-L`` folder
    made absolute under ``root``."""
    out = []
    for lib in build.libraries:
        if lib.startswith("-L") and len(lib) > 2 and not Path(lib[2:]).is_absolute():
            out.append(f"-L{(root / lib[2:]).resolve()}")
        elif not lib.startswith("-"):
            out.append(str((root / lib).resolve()))
        else:
            out.append(lib)
    return out
