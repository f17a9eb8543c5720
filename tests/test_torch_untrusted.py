"""A PyTorch model file is the user's Python and runs only in a worker process (sandboxed): a
file that exits, loops forever or runs a shell command ends as an error naming the file, and
the run goes on with the other files."""

from __future__ import annotations

import json
from pathlib import Path

from graph.cli import run_workflow
from graph.config import load
from graph.pytorch_load import load_in_worker

GOOD = """import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


batch = 64


def get_inputs():
    return [torch.randn(batch)]


def get_init_inputs():
    return []
"""


def test_a_looping_file_is_stopped_by_its_time_limit(tmp_path: Path) -> None:
    f = tmp_path / "loops.py"
    f.write_text(GOOD + "\nwhile True:\n    pass\n")
    got = load_in_worker(f, {}, {}, tmp_path, "loops.py", False, tmp_path / "w", cpu_limit=3)
    assert "loops.py: loading loops.py timed out" in got["error"] and "raise load_cpu_s" in got["error"]


def test_a_file_looping_at_import_is_named_while_the_others_load(tmp_path: Path) -> None:
    """The workflow's load_cpu_s holds each file; files load side by side, so the looping one
    costs its own limit and the others are translated as usual."""
    models = tmp_path / "models"
    models.mkdir()
    (models / "a_loops.py").write_text("while True:\n    pass\n" + GOOD)
    (models / "good.py").write_text(GOOD)
    (tmp_path / "workflows.yaml").write_text("""workflows:
  t:
    language: pytorch
    sources: [models/*.py]
    targets: [triton]
    validate: {trials: 1}
    load_cpu_s: 4
    output: out/t
""")
    final = run_workflow(tmp_path, load(tmp_path).workflows["t"], None, resume=False)
    assert any(e.startswith("models/a_loops.py: loading models/a_loops.py timed out") and "4 s of CPU time" in e
               for e in final["errors"]), final["errors"]
    report = json.loads((tmp_path / "out" / "t" / "report.json").read_text())
    assert {r["name"]: r["targets"]["triton"]["status"] for r in report["regions"]} == {"good": "validated"}


def test_exit_and_shell_commands_do_not_stop_the_run(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    planted = tmp_path / "planted.txt"
    (models / "good.py").write_text(GOOD)
    (models / "exits.py").write_text(GOOD + "\nimport sys\nsys.exit(0)\n")
    shell = f"import os\nimport torch\n\nos.system('echo x > {planted}')\n"
    (models / "shell.py").write_text(GOOD.replace("import torch\n", shell))
    (tmp_path / "workflows.yaml").write_text("""workflows:
  t:
    language: pytorch
    sources: [models/*.py]
    targets: [triton]
    validate: {trials: 1}
    output: out/t
""")
    final = run_workflow(tmp_path, load(tmp_path).workflows["t"], None, resume=False)
    assert any("exits.py:20: executing the file called sys.exit(0) (file skipped)" in e for e in final["errors"]), \
        final["errors"]
    report = json.loads((tmp_path / "out" / "t" / "report.json").read_text())
    statuses = {r["name"]: r["targets"]["triton"]["status"] for r in report["regions"]}
    assert statuses["good"] == "validated"
    assert not planted.exists()  # the model file ran where it could write nothing
