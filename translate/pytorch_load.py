"""Loading a PyTorch model file runs the user's Python: it is done in a worker process, in the
sandbox where there is one (no network, the project and the tool read-only, a scrubbed
environment), with time limits; a file that exits, loops or fails ends as an error message
naming the file, never as the end or the hang of the run.

``python -m translate.pytorch_load job.json`` loads and lowers one file (``parsers.torch``)
and writes ``{"kernel": <IR as JSON>, "init_inputs": [repr, ...], "size_args": [...],
"model_name": ..., "input_shapes": ...}`` or ``{"error": ...}`` to the job's ``out``.
:func:`load_in_worker` is the caller's side.
"""

from __future__ import annotations

import ast
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from translate import ir, ir_json

LOAD_CPU_S = 600  # CPU seconds a file may take to load, capture and lower


class Unrepresentable:
    """A constructor argument that does not survive ``repr`` (ModelNew leaves it unchecked)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def load_one(job: dict[str, Any]) -> dict[str, Any]:
    from parsers.base import ParseError
    from parsers.torch import kernel_name, load_program, lower_program
    from translate.pytorch_steps import class_name, size_init_args

    path, root = Path(job["path"]), Path(job["root"])
    try:
        program = load_program(path, job["sizes"], root, **job["options"])
    except ParseError as err:
        return {"error": f"{err} (file skipped)"}
    try:
        kernel: ir.Kernel | ir.Opaque = lower_program(program, root=root)
    except Exception as exc:  # a frontend bug makes this region unsupported, with the reason
        kernel = ir.Opaque(kernel_name(path), path.read_text(errors="replace"),
                           f"the PyTorch frontend failed: {type(exc).__name__}: {exc}",
                           ir.Origin(job["rel"], program.forward_line))
    size_args: tuple[int, ...] = ()
    if job["size_args"]:
        try:
            size_args = size_init_args(program, kernel)
        except Exception:  # the guard then requires every argument unchanged
            size_args = ()
    shapes = [list(s) for s in program.input_shapes.values()] if program.input_shapes is not None else None
    return {"kernel": ir_json.dumps(kernel), "init_inputs": [repr(v) for v in program.init_inputs],
            "size_args": list(size_args), "model_name": class_name(program), "input_shapes": shapes}


def init_value(text: str) -> Any:
    """A constructor argument back from its ``repr``: the value where it is a literal."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return Unrepresentable(text)


def load_in_worker(path: Path, sizes: dict[str, Any], options: dict[str, Any], root: Path, rel: str,
                   size_args: bool, workdir: Path, cpu_limit: float = LOAD_CPU_S) -> dict[str, Any]:
    """:func:`load_one` in a worker process (sandboxed where a sandbox is available)."""
    from validation import sandbox
    from validation.runners import WALL_CAP_FACTOR, _py_env, one_thread, run_process

    workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kt-load-", dir=workdir) as tmp:
        base = Path(tmp)
        out = base / "result.json"
        job = {"path": str(Path(path).resolve()), "root": str(root.resolve()), "sizes": sizes, "options": options,
               "rel": rel, "size_args": size_args, "out": str(out)}
        (base / "job.json").write_text(json.dumps(job))
        cmd = [sys.executable, "-P", "-m", "translate.pytorch_load", str(base / "job.json")]
        env: dict[str, str] | None = _py_env(one_thread())
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
            return {"error": f"{rel}: {r.reason or 'loading the file gave no result'} (file skipped)"}
        return json.loads(out.read_text())


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text())
    result = load_one(job)
    Path(job["out"]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
