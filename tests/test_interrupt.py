"""A run survives interruption: Ctrl-C stops it promptly with its workers, saves what finished
and says how to resume; kill -9 leaves no process behind and --resume finishes the run; a
resume under changed settings is refused; damaged state files end in a message, never a
traceback. Each runs the real command line in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from validation import toolchains

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(toolchains.find_kokkos() is None or not toolchains.gfortran().available,
                                 reason="needs gfortran and Kokkos")]

ROUTINES = "\n".join(f"""      SUBROUTINE SCALE{k}(N, A, X)
      INTEGER N, I
      DOUBLE PRECISION A, X(N)
      DO 10 I = 1, N
         X(I) = A*X(I) + {k}.0D0
   10 CONTINUE
      END
""" for k in range(1, 7))


def _project(tmp: Path, sizes: str = "{n: 40}") -> Path:
    (tmp / "src").mkdir(parents=True, exist_ok=True)
    (tmp / "src" / "scale.f").write_text(ROUTINES)
    (tmp / "workflows.yaml").write_text(f"""workflows:
  scale:
    language: fortran
    sources: [src/scale.f]
    targets: [kokkos]
    sizes: {sizes}
    validate: {{trials: 1}}
    optimize: {{fraction: 0}}
    output: out/scale
""")
    return tmp


def _start(project: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "graph.cli", "run", str(project), *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)


def _wait_for(p: subprocess.Popen[str], text: str, limit: float = 300) -> list[str]:
    """Lines of the progress output (stderr) up to the first holding ``text``."""
    seen: list[str] = []
    t0 = time.monotonic()
    assert p.stderr is not None
    while time.monotonic() - t0 < limit:
        line = p.stderr.readline()
        if not line:
            break
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"'{text}' never came: {''.join(seen)[-2000:]}")


def _ours(project: Path) -> list[str]:
    """Command lines of live processes that work for this project (workers, compilers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(project) in cmd and "pytest" not in cmd:
            found.append(cmd)
    return found


def _report(project: Path) -> dict:
    return json.loads((project / "out" / "scale" / "report.json").read_text())


def test_ctrl_c_stops_promptly_saves_and_resumes(tmp_path: Path) -> None:
    project = _project(tmp_path)
    p = _start(project)
    _wait_for(p, "(1/6)")
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert time.monotonic() - t0 < 20
    assert "Traceback" not in err and "--resume` continues" in err
    time.sleep(0.5)
    assert _ours(project) == []
    partial = _report(project)
    assert any("interrupted" in n for n in partial.get("notes", []))
    finished = [r for r in partial["regions"] if r["targets"]["kokkos"]["status"] == "validated"]
    assert 1 <= len(finished) < 6
    again = _start(project, "--resume")
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    assert "resuming run" in err
    regions = _report(project)["regions"]
    assert len(regions) == 6 and all(r["targets"]["kokkos"]["status"] == "validated" for r in regions)
    assert "notes" not in _report(project)


@pytest.mark.parametrize(("sig", "after"), [(signal.SIGTERM, "scale2: validating"), (signal.SIGHUP, "(1/6)"),
                                           (signal.SIGTERM, " ms")])
def test_sigterm_and_sighup_stop_within_seconds_and_resume(tmp_path: Path, sig: signal.Signals, after: str) -> None:
    """What `timeout`, CI runners and batch schedulers send (SIGTERM) and a closed terminal (SIGHUP)
    stop the run as Ctrl-C does, within 10 seconds: during a region's validation, between regions,
    and while a region is being timed (" ms": the profile stage's line)."""
    project = _project(tmp_path)
    if after == " ms":
        text = (project / "workflows.yaml").read_text().replace("optimize: {fraction: 0}", "optimize: {budget: 0}")
        (project / "workflows.yaml").write_text(text)
    p = _start(project)
    _wait_for(p, after)
    t0 = time.monotonic()
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert time.monotonic() - t0 < 10, err
    assert p.returncode == 130, err
    assert "Traceback" not in err and "--resume` continues" in err
    time.sleep(0.5)
    assert _ours(project) == []
    assert any("interrupted" in n for n in _report(project).get("notes", []))
    again = _start(project, "--resume")
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    regions = _report(project)["regions"]
    assert len(regions) == 6 and all(r["targets"]["kokkos"]["status"] == "validated" for r in regions)


@pytest.mark.parametrize("after", ["(1/6)", "scale3: validating"])
def test_kill_9_leaves_no_process_and_resume_finishes(tmp_path: Path, after: str) -> None:
    project = _project(tmp_path)
    p = _start(project)
    _wait_for(p, after)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    time.sleep(1.0)
    assert _ours(project) == []
    again = _start(project, "--resume")
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    regions = _report(project)["regions"]
    assert len(regions) == 6 and all(r["targets"]["kokkos"]["status"] == "validated" for r in regions)


def test_resume_under_changed_settings_is_refused(tmp_path: Path) -> None:
    project = _project(tmp_path)
    p = _start(project)
    _wait_for(p, "(1/6)")
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    _project(tmp_path, sizes="{n: 50}")
    again = _start(project, "--resume")
    _, err = again.communicate(timeout=120)
    assert again.returncode == 2 and "settings or targets changed" in err and "Traceback" not in err
    again = _start(project, "--resume", "--targets", "kokkos,triton")
    _, err = again.communicate(timeout=120)
    assert again.returncode == 2 and "settings or targets changed" in err


def test_damaged_state_files_end_in_a_message(tmp_path: Path) -> None:
    project = _project(tmp_path)
    state = project / ".translate"
    state.mkdir()
    (state / "runs.json").write_text("{not json")
    p = _start(project, "--resume")
    _, err = p.communicate(timeout=120)
    assert p.returncode == 2 and "runs.json is damaged" in err and "Traceback" not in err
    (state / "runs.json").unlink()
    (state / "checkpoints.sqlite").write_bytes(b"this is not a database" * 100)
    p = _start(project)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 2 and "checkpoints.sqlite is damaged" in err and "Traceback" not in err


def test_output_problems_end_in_a_message(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "out").mkdir()
    (project / "out" / "scale").write_text("a file where the output folder goes")
    p = _start(project)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 2 and "out/scale is a file" in err and "Traceback" not in err
    (project / "out" / "scale").unlink()
    text = (project / "workflows.yaml").read_text().replace("output: out/scale", "output: ../elsewhere/scale")
    (project / "workflows.yaml").write_text(text)
    p = _start(project, "--workflow", "scale", "--targets", "kokkos")
    _, err = p.communicate(timeout=600)
    assert "warning: the output folder" in err and "is outside the project folder" in err


def test_a_project_path_with_a_space_builds(tmp_path: Path) -> None:
    project = _project(tmp_path / "my project")
    p = _start(project)
    _, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    assert all(r["targets"]["kokkos"]["status"] == "validated" for r in _report(project)["regions"])
