"""Loading a PyTorch model file runs the user's Python: it is done in a worker process
(``parsers.torch_load``), in the sandbox where there is one (no network, the project and the
tool read-only, a scrubbed environment), with time limits; a file that exits, loops or fails
ends as an error message naming the file, never as the end or the hang of the run.
"""

from __future__ import annotations

import ast
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from graph.config import LOAD_CPU_S
from validation import sandbox
from validation.processes import WALL_CAP_FACTOR, one_thread, py_env, run_process


class Unrepresentable:
    """A constructor argument that does not survive ``repr`` (ModelNew leaves it unchecked)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def init_value(text: str) -> Any:
    """A constructor argument back from its ``repr``: the value where it is a literal."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return Unrepresentable(text)


def load_in_worker(path: Path, sizes: dict[str, Any], options: dict[str, Any], root: Path, rel: str,
                   size_args: bool, workdir: Path, cpu_limit: float = LOAD_CPU_S) -> dict[str, Any]:
    """:func:`load_one` in a worker process (sandboxed where a sandbox is available)."""
    workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kt-load-", dir=workdir) as tmp:
        base = Path(tmp)
        out = base / "result.json"
        job = {"path": str(Path(path).resolve()), "root": str(root.resolve()), "sizes": sizes, "options": options,
               "rel": rel, "size_args": size_args, "out": str(out)}
        (base / "job.json").write_text(json.dumps(job))
        cmd = [sys.executable, "-P", "-m", "parsers.torch_load", str(base / "job.json")]
        env: dict[str, str] | None = py_env(one_thread())
        cwd: Path = Path(path).resolve().parent
        if sandbox.probe().available:
            readable = [root.resolve(), Path(path).resolve().parent,
                        *sandbox.TOOL_PACKAGES]
            cmd = sandbox.command(cmd, sandbox.Jail(read_only=readable, writable=[base], env=one_thread()), cwd=cwd)
            env = None
        r = run_process(cmd, f"loading {rel}", WALL_CAP_FACTOR * cpu_limit, cwd=cwd, env=env,
                        cpu_limit=cpu_limit, exit_signals=env is None,
                        max_processes=sandbox.MAX_PROCESSES if env is None else None)
        if not r.ok or not out.exists():
            hint = "; a deep network may need more: raise load_cpu_s in the workflow" if r.timed_out == "cpu" else ""
            return {"error": f"{rel}: {r.reason or 'loading the file gave no result'} (file skipped{hint})"}
        return json.loads(out.read_text())
