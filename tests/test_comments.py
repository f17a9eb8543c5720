"""Comments and docstrings say what and why: no date, no work-log label, no time measured on
one machine (those belong in docs/measurements, history in git)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("translate", "parsers", "targets", "validation", "graph", "benchmarks", "benchmarks/probes")
NOTEBOOK = re.compile(r"\b20\d\d-\d\d-\d\d\b|\b(first|second|third|\w+th) session\b|\bsession \d+\b"
                      r"|\b\d+(\.\d+)? ?ms\b|\bH[12]00\b", re.IGNORECASE)


def prose(text: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python source."""
    out = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(text).readline)
           if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                out.append((node.body[0].lineno, doc))
    return out


def test_no_comment_is_a_lab_notebook() -> None:
    found = [f"{f.relative_to(ROOT)}:{line}: {m.group(0)!r}"
             for folder in FOLDERS for f in sorted((ROOT / folder).glob("*.py"))
             for line, text in prose(f.read_text()) for m in NOTEBOOK.finditer(text)]
    assert not found, "dates, work-log labels or measured times in comments:\n" + "\n".join(found)


def test_the_check_sees_each_kind() -> None:
    src = ('"""Ran 0.69 ms."""\n# on the H200\nx = 1  # 2026-12-04 region search\n'
           'def f():\n    """the eighth session"""\ny = "12 ms in a string is code, not a comment"\n')
    assert [m.group(0) for _, t in prose(src) for m in NOTEBOOK.finditer(t)] == \
        ["H200", "2026-12-04", "0.69 ms", "eighth session"]
