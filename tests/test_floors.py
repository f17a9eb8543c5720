"""The folders are floors (docs/ARCHITECTURE.md): each stands above every folder it imports,
and an import inside a function is a deliberate deferral of a heavy dependency, said so."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the floor of each folder: a module may import only folders on lower floors (or its own)
FLOORS = {"translate": 0, "parsers": 1, "targets": 1, "validation": 2, "graph": 3}


def _imports(path: Path) -> list[tuple[ast.stmt, str, bool]]:
    """(statement, top-level package, inside a function or class) for every import."""
    tree = ast.parse(path.read_text())
    top_level = {id(n) for stmt in tree.body if isinstance(stmt, (ast.If, ast.Try)) for n in ast.walk(stmt)}
    top_level |= {id(stmt) for stmt in tree.body}
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        found += [(node, n.split(".")[0], id(node) not in top_level) for n in names]
    return found


def _modules(root: Path = ROOT) -> list[tuple[str, Path]]:
    return [(folder, f) for folder in FLOORS for f in sorted((root / folder).glob("*.py"))]


def upward(root: Path) -> list[str]:
    """Every import under ``root`` of a folder on the importer's own floor or above."""
    return [f"{f.relative_to(root)}:{node.lineno} imports {pkg}"
            for folder, f in _modules(root) for node, pkg, _ in _imports(f)
            if pkg in FLOORS and pkg != folder and FLOORS[pkg] >= FLOORS[folder]]


def test_no_folder_imports_a_folder_on_its_own_floor_or_above() -> None:
    wrong = upward(ROOT)
    assert not wrong, "imports that run up or sideways between floors:\n" + "\n".join(wrong)


def test_the_core_imports_no_other_folder_of_the_project() -> None:
    assert all(pkg == "translate" for f in (ROOT / "translate").glob("*.py")
               for _, pkg, _ in _imports(f) if pkg in FLOORS)


def test_imports_inside_functions_are_deferrals_that_say_why() -> None:
    unexplained = []
    for _, f in _modules():
        lines = f.read_text().splitlines()
        for node, _, inner in _imports(f):
            # the comment is on the line, or on the line above (one comment may cover a pair)
            near = " ".join(lines[max(node.lineno - 3, 0):node.lineno])
            if inner and "deferred" not in near:
                unexplained.append(f"{f.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not unexplained, "imports inside functions without a 'deferred: why' comment:\n" + "\n".join(unexplained)


def test_the_floor_rule_sees_a_violation(tmp_path: Path) -> None:
    """The check can fail: upward and sideways imports in a scratch tree are reported, a
    downward one is not."""
    for folder in FLOORS:
        (tmp_path / folder).mkdir()
    (tmp_path / "translate" / "core.py").write_text("def f():\n    from graph.pipeline import WorkflowRun\n")
    (tmp_path / "parsers" / "p.py").write_text("from targets.base import Rendered\nfrom translate import ir\n")
    (tmp_path / "graph" / "g.py").write_text("import validation.golden\n")
    assert sorted(upward(tmp_path)) == ["parsers/p.py:1 imports targets", "translate/core.py:2 imports graph"]
