"""The C frontend's access to libclang (the ``libclang`` wheel, no system clang needed).

Parsing a file runs clang's own preprocessor with the workflow's include folders and
defines, so size macros (``#define N 1000``, ``_PB_N``) and function-like macros
(``SCALAR_VAL(x)``) expand as the compiler expands them. System headers (``<math.h>``)
come from the system C compiler's folders, since the wheel carries no headers of its own.

The Python bindings of libclang 18 do not wrap operator kinds or constant evaluation;
the shared library exports them (``clang_getCursorBinaryOperatorKind``,
``clang_Cursor_Evaluate``...), and :func:`binary_op`, :func:`unary_op` and
:func:`literal` call them directly. Tokens cannot stand in for them: a cursor inside a
macro expansion spans the macro's tokens, not the expanded ones.
"""

from __future__ import annotations

import ctypes
import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parsers.base import ParseError

C_SUFFIXES = (".c",)
HEADER_SUFFIXES = (".h",)


@dataclass(frozen=True)
class Pragma:
    line: int
    text: str  # after "#pragma ", whitespace collapsed


def _cindex() -> Any:
    try:
        # deferred: libclang loads a large shared library; only C workflows need it
        import clang.cindex as ci
    except ImportError as exc:  # pragma: no cover - the package is a dependency
        raise ParseError("", 0, f"the C frontend needs the libclang package ({exc}); pip install libclang") from None
    return ci


@functools.cache
def system_includes() -> tuple[str, ...]:
    """The system C compiler's header folders (its builtin ``stddef.h`` folder, then /usr/include):
    the libclang wheel ships no headers."""
    out: list[str] = []
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc:
        try:
            proc = subprocess.run([cc, "-E", "-Wp,-v", "-x", "c", "-"], input="", capture_output=True, text=True,
                                  timeout=30)
            take = False
            for line in proc.stderr.splitlines():
                if line.startswith("#include <...> search starts here"):
                    take = True
                elif line.startswith("End of search list"):
                    take = False
                elif take and Path(line.strip()).is_dir():
                    out.append(line.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    for d in ("/usr/local/include", "/usr/include"):
        if d not in out and Path(d).is_dir():
            out.append(d)
    return tuple(out)


def parse_args(include: list[Path], defines: dict[str, str], folder: Path) -> list[str]:
    """clang's command line: C99 (GNU dialect), the file's folder and the workflow's includes,
    the defines, then the system folders."""
    args = ["-x", "c", "-std=gnu99", f"-I{folder.resolve()}"]
    args += [f"-I{Path(d).resolve()}" for d in include]
    args += [f"-D{k}={v}" if str(v) != "" else f"-D{k}" for k, v in defines.items()]
    for d in system_includes():
        args += ["-isystem", d]
    return args


def parse_file(path: Path, include: list[Path], defines: dict[str, str], shown: str,
               text: str | None = None) -> Any:
    """The translation unit of one C file; the first error (syntax, a header not found, an
    undeclared name such as a macro nobody defined) raises ``ParseError`` naming the file and
    line, with how many more errors there are."""
    ci = _cindex()
    index = ci.Index.create()
    unsaved = [(str(path), text)] if text is not None else None
    try:
        tu = index.parse(str(path), args=parse_args(include, defines, path.parent), unsaved_files=unsaved,
                         options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
    except ci.TranslationUnitLoadError as exc:
        raise ParseError(shown, 1, f"libclang could not read the file: {exc}") from None
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        first = errors[0]
        loc = first.location
        where = shown if loc.file is None or Path(loc.file.name).resolve() == path.resolve() else loc.file.name
        more = f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
        hint = ""
        if "file not found" in first.spelling:
            hint = "; add its folder under preprocess: include:"
        elif "undeclared identifier" in first.spelling:
            hint = "; a size macro the code expects must be defined (preprocess: defines:)"
        raise ParseError(where, loc.line or 1, f"{first.spelling}{hint}{more}")
    return tu


# --------------------------------------------------------------- operators


@functools.cache
def _lib() -> Any:
    ci = _cindex()
    lib = ci.conf.lib
    lib.clang_getCursorBinaryOperatorKind.argtypes = [ci.Cursor]
    lib.clang_getCursorBinaryOperatorKind.restype = ctypes.c_int
    lib.clang_getCursorUnaryOperatorKind.argtypes = [ci.Cursor]
    lib.clang_getCursorUnaryOperatorKind.restype = ctypes.c_int
    lib.clang_Cursor_Evaluate.argtypes = [ci.Cursor]
    lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
    lib.clang_EvalResult_getKind.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getKind.restype = ctypes.c_int
    lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
    lib.clang_EvalResult_getAsDouble.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getAsDouble.restype = ctypes.c_double
    lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_dispose.restype = None
    return lib


# CXBinaryOperatorKind and CXUnaryOperatorKind (clang-c/Index.h, stable since LLVM 17)
_BINARY = ("", ".*", "->*", "*", "/", "%", "+", "-", "<<", ">>", "<=>", "<", ">", "<=", ">=", "==", "!=", "&", "^",
           "|", "&&", "||", "=", "*=", "/=", "%=", "+=", "-=", "<<=", ">>=", "&=", "^=", "|=", ",")
_UNARY = ("", "post++", "post--", "++", "--", "&", "*", "+", "-", "~", "!", "__real", "__imag", "__extension__",
          "co_await")


def binary_op(cursor: Any) -> str:
    """The operator of a BINARY_OPERATOR or COMPOUND_ASSIGNMENT_OPERATOR cursor ("+", "+=", ...)."""
    k = _lib().clang_getCursorBinaryOperatorKind(cursor)
    return _BINARY[k] if 0 <= k < len(_BINARY) else ""


def unary_op(cursor: Any) -> str:
    """The operator of a UNARY_OPERATOR cursor ("-", "!", "*", "++", "post++", ...)."""
    k = _lib().clang_getCursorUnaryOperatorKind(cursor)
    return _UNARY[k] if 0 <= k < len(_UNARY) else ""


def literal(cursor: Any) -> int | float | None:
    """The value of a constant expression (a literal, ``N * 2`` of macros), or None."""
    lib = _lib()
    res = lib.clang_Cursor_Evaluate(cursor)
    if not res:
        return None
    try:
        kind = lib.clang_EvalResult_getKind(res)
        if kind == 1:  # CXEval_Int
            return int(lib.clang_EvalResult_getAsLongLong(res))
        if kind == 2:  # CXEval_Float
            return float(lib.clang_EvalResult_getAsDouble(res))
        return None
    finally:
        lib.clang_EvalResult_dispose(res)


# ----------------------------------------------------------------- pragmas

_PRAGMA = re.compile(r"^\s*#\s*pragma\s+(.*?)\s*$")


def pragmas(text: str) -> dict[int, Pragma]:
    """Every ``#pragma`` of a file's own text by line (continuation lines joined)."""
    out: dict[int, Pragma] = {}
    lines = text.splitlines()
    k = 0
    while k < len(lines):
        m = _PRAGMA.match(lines[k])
        start = k
        if m:
            body = m.group(1)
            while body.endswith("\\") and k + 1 < len(lines):
                k += 1
                body = body[:-1] + " " + lines[k].strip()
            pragma = Pragma(start + 1, " ".join(body.split()))
            for n in range(start, k + 1):  # a continued pragma: found from its last line too
                out[n + 1] = pragma
        k += 1
    return out


def pragma_before(pragmas_: dict[int, Pragma], lines: list[str], line: int) -> Pragma | None:
    """The pragma standing right before source line ``line`` (blank and comment lines between
    them skipped), or None."""
    k = line - 1
    while k >= 1:
        if k in pragmas_:
            return pragmas_[k]
        s = lines[k - 1].strip() if k - 1 < len(lines) else ""
        if s and not s.startswith("//") and not s.startswith("/*") and not s.startswith("*"):
            return None
        k -= 1
    return None
