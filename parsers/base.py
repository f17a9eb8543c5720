"""Shared pieces of the frontends: errors and the C preprocessor driver."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from translate.ir import Cast, Const, DType, Expr


class ParseError(Exception):
    """Malformed source: names the file and line. The caller reports it and goes on
    with the other files."""

    def __init__(self, path: str, line: int, message: str) -> None:
        self.path = path
        self.line = line
        self.message = message
        super().__init__(f"{path}:{line}: {message}")


class Unsupported(Exception):
    """Internal: a construct a frontend cannot lower. It turns the enclosing routine
    into an ``ir.Opaque`` with ``reason``; the rest of the file goes on."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class Preprocessed:
    """Preprocessed text plus, for each of its lines (1-based), the file and line
    it came from."""

    text: str
    lines: tuple[tuple[str, int], ...]

    def origin(self, line: int) -> tuple[str, int]:
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1]
        return (self.lines[-1][0], line) if self.lines else ("", line)


_MARKER = re.compile(r'^#\s*(?:line\s+)?(\d+)\s+"([^"]*)"')


def run_cpp(path: Path, text: str, include: list[Path], defines: dict[str, str]) -> Preprocessed:
    """Run the C preprocessor in traditional mode (keeps Fortran columns and ``//``)
    and map every output line back to its source file and line via line markers."""
    cmd: list[str]
    if shutil.which("cpp"):
        cmd = ["cpp", "-traditional-cpp", "-undef", "-nostdinc"]
    elif shutil.which("gfortran"):
        cmd = ["gfortran", "-E", "-cpp"]
    else:
        raise ParseError(str(path), 1, "needs the C preprocessor (cpp or gfortran) and neither was found")
    cmd += [f"-I{Path(d).resolve()}" for d in [path.parent, *include]]
    cmd += [f"-D{k}={v}" if v != "" else f"-D{k}" for k, v in defines.items()]
    cmd.append("-")
    proc = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=60, cwd=path.parent)
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["preprocessing failed"])[0]
        m = re.search(r":(\d+)(?::\d+)?:", first)
        raise ParseError(str(path), int(m.group(1)) if m else 1, f"preprocessor: {first}")
    out_lines: list[str] = []
    origins: list[tuple[str, int]] = []
    cur_file, cur_line = str(path), 1
    for raw in proc.stdout.splitlines():
        m = _MARKER.match(raw)
        if m:
            cur_line = int(m.group(1))
            name = m.group(2)
            cur_file = str(path) if name in ("<stdin>", "-", "") else name
            continue
        if raw.startswith("#"):  # other directives cpp leaves (pragmas, idents)
            raw = ""
        out_lines.append(raw)
        origins.append((cur_file, cur_line))
        cur_line += 1
    return Preprocessed("\n".join(out_lines) + "\n", tuple(origins))


def needs_cpp(path: Path, text: str) -> bool:
    """Upper-case extensions (.F, .F90, ...) and sources with cpp directives."""
    if path.suffix[1:2].isupper():
        return True
    return re.search(r"^\s*#\s*(include|define|if|ifdef|ifndef)\b", text, re.M) is not None


_INCLUDE = re.compile(r"""^\s*include\s*(['"])([^'"]+)\1\s*(!.*)?$""", re.I)


def expand_includes(path: Path, pp: Preprocessed, include: list[Path], depth: int = 0) -> Preprocessed:
    """Fortran INCLUDE lines replaced by the file they name (searched next to the including
    file, then in ``include``), each line keeping the file and line it came from."""
    if not any(_INCLUDE.match(line) for line in pp.text.splitlines()):
        return pp
    out_lines: list[str] = []
    origins: list[tuple[str, int]] = []
    for k, line in enumerate(pp.text.splitlines()):
        m = _INCLUDE.match(line)
        origin = pp.origin(k + 1)
        if m is None:
            out_lines.append(line)
            origins.append(origin)
            continue
        here = Path(origin[0]).parent if origin[0] else path.parent
        found = next((d / m.group(2) for d in [here, path.parent, *include] if (d / m.group(2)).is_file()), None)
        if found is None:
            raise ParseError(origin[0] or str(path), origin[1], f"INCLUDE '{m.group(2)}' not found (searched"
                             f" {', '.join(str(d) for d in [here, *include])}; add its folder under preprocess:"
                             " include:)")
        if depth > 20:
            raise ParseError(origin[0] or str(path), origin[1], f"INCLUDE '{m.group(2)}' nests too deep")
        text = found.read_text(errors="replace")
        inner = Preprocessed(text, tuple((str(found), i + 1) for i in range(text.count("\n") + 1)))
        inner = expand_includes(found, inner, include, depth + 1)
        out_lines += inner.text.splitlines()
        origins += list(inner.lines[:len(inner.text.splitlines())])
    return Preprocessed("\n".join(out_lines) + "\n", tuple(origins))


def cast(e: Expr, dt: DType) -> Expr:
    """``e`` converted to ``dt``: a constant folded (as C and torch convert it), else a Cast."""
    if e.dtype == dt:
        return e
    if isinstance(e, Const) and not isinstance(e.value, str):
        v = e.value
        if dt.is_float:
            return Const(float(v), dt)
        if dt.is_int:
            return Const(int(v), dt)
        if dt is DType.BOOL:
            return Const(bool(v), dt)
    return Cast(dt, e)
