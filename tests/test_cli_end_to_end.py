"""`translate run` on a small project through the real graph, builds and all:
report.json's contract, bad input that is reported while the rest goes on, and
--resume after a finished run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graph.cli import main

pytestmark = pytest.mark.slow

KERNELS = """\
      SUBROUTINE SAXPY2(N, A, X, Y)
      INTEGER N
      DOUBLE PRECISION A, X(N), Y(N)
      INTEGER I
      DO 10 I = 1, N
         Y(I) = Y(I) + A*X(I)
   10 CONTINUE
      END

      DOUBLE PRECISION FUNCTION ASUM2(N, X)
      INTEGER N
      DOUBLE PRECISION X(N)
      INTEGER I
      ASUM2 = 0.0D0
      DO 20 I = 1, N
         ASUM2 = ASUM2 + ABS(X(I))
   20 CONTINUE
      END

      SUBROUTINE FIND(N, X, K)
      INTEGER N, K
      DOUBLE PRECISION X(N)
      K = 1
   30 IF (K - N) 40, 50, 50
   40 IF (X(K) .GT. 0.0D0) RETURN
      K = K + 1
      GO TO 30
   50 RETURN
      END

      SUBROUTINE NEEDM(M, N, X)
      INTEGER M, N
      DOUBLE PRECISION X(M)
      INTEGER I
      DO 40 I = 1, M
         X(I) = 2.0D0*X(I)
   40 CONTINUE
      END
"""

BROKEN = """\
subroutine broken(n, x)
  integer :: n
  real(8) :: x(n)
  x(1) = (1.0 +
end subroutine
"""


def _project(root: Path, extra: str = "") -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "kernels.f").write_text(KERNELS)
    (root / "src" / "broken.f90").write_text(BROKEN)
    (root / "workflows.yaml").write_text(textwrap.dedent(f"""\
        workflows:
          small:
            language: fortran
            sources: [src/*.f, src/*.f90]
            targets: [kokkos, triton]
            sizes: {{n: 300}}
            validate: {{trials: 2}}
        {extra}"""))
    return root


def test_run_reports_every_region_and_goes_on_past_bad_input(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path / "p")
    assert main(["run", str(project)]) == 0
    err = capsys.readouterr().err
    assert "src/broken.f90:4" in err and "file skipped" in err  # malformed file named with its line
    report = json.loads((project / "out" / "small" / "report.json").read_text())
    assert report["workflow"] == "small"
    regions = {r["name"]: r for r in report["regions"]}
    assert set(regions) == {"saxpy2", "asum2", "find", "needm"}
    for name in ("saxpy2", "asum2"):
        r = regions[name]
        assert r["status"] == "translated" and r["source"] == "src/kernels.f"
        for target in ("kokkos", "triton"):
            t = r["targets"][target]
            assert set(t) >= {"status", "reason", "max_abs_err", "max_rel_err", "rel_l2_err", "trials", "files"}
            assert t["status"] == "validated", t
            assert t["trials"] == 5  # 2 at the workflow size, 1 there on sorted inputs, 2 at other sizes
            assert t["rel_l2_err"] is not None and t["rel_l2_err"] < 1e-12
            assert any(f.endswith(f"{name}_{target}.py" if target == "triton" else f"{name}_{target}.cpp")
                       for f in t["files"])
    assert regions["find"]["status"] == "unsupported"
    assert "arithmetic IF" in regions["find"]["reason"] and "src/kernels.f:" in regions["find"]["reason"]
    assert regions["needm"]["targets"]["kokkos"]["status"] == "failed"
    assert "no size given for 'm'" in regions["needm"]["targets"]["kokkos"]["reason"]
    out = project / "out" / "small"
    assert (out / "kokkos" / "CMakeLists.txt").exists() and (out / "fortran" / "saxpy2_interface.f90").exists()
    assert list((out / "golden" / "saxpy2").glob("case*.npz"))
    md = (out / "report.md").read_text()
    assert "| `saxpy2` | src/kernels.f:1 |" in md
    # the regression suite: a driver per validated region, run by ctest without Python
    suite = out / "tests"
    assert sorted(p.name for p in (suite / "cases").iterdir()) == ["asum2", "saxpy2"]
    assert "expect_result f64" in (suite / "cases" / "asum2" / "case0.txt").read_text()
    for cmd in (["cmake", "-S", str(suite), "-B", str(suite / "b")], ["cmake", "--build", str(suite / "b")],
                ["ctest", "--test-dir", str(suite / "b")]):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
    assert "100% tests passed, 0 tests failed out of 2" in done.stdout
    # and the Triton side with pytest alone; a launcher made to return other numbers fails it
    pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite / "test_triton.py")]
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(pytest_cmd, capture_output=True, text=True, timeout=900, env=env, cwd=suite)
    assert done.returncode == 0 and "10 passed" in done.stdout, done.stdout + done.stderr
    launcher = out / "triton" / "saxpy2_triton.py"
    launcher.write_text(launcher.read_text() + "\n_kt_orig = saxpy2\n\n\ndef saxpy2(*args):\n"
                        "    ret = _kt_orig(*args)\n    args[3].mul_(1.000001)\n    return ret\n")
    done = subprocess.run(pytest_cmd, capture_output=True, text=True, timeout=900, env=env, cwd=suite)
    assert done.returncode != 0 and "5 failed, 5 passed" in done.stdout, done.stdout

    # a finished run has nothing to resume
    assert main(["run", str(project), "--resume"]) == 0
    assert "nothing to resume" in capsys.readouterr().err


def test_unknown_key_is_reported_with_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "q"
    project.mkdir()
    (project / "workflows.yaml").write_text("workflows:\n  w:\n    language: fortran\n    sources: [a.f]\n"
                                            "    sizez: {n: 3}\n")
    (project / "a.f").write_text(KERNELS)
    assert main(["run", str(project)]) == 2
    err = capsys.readouterr().err
    assert "workflows.yaml:5" in err and "sizez" in err and "did you mean 'sizes'" in err


def test_a_renderer_error_is_shown_before_the_retry(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A renderer that raises fails its target with the error in the progress output, at each
    schedule level it is retried at, and the run goes on with the other target."""
    from targets.triton import TritonRenderer

    def broken(self: TritonRenderer, kernel: object, schedule: object = None) -> None:
        raise RuntimeError("planted renderer fault")

    monkeypatch.setattr(TritonRenderer, "render", broken)
    project = _project(tmp_path / "p")
    assert main(["run", str(project)]) == 0
    err = capsys.readouterr().err
    assert "saxpy2: triton failed (as analysed): renderer error: RuntimeError: planted renderer fault" in err
    assert err.index("saxpy2: triton failed (as analysed)") < err.index("saxpy2: retrying triton")
    assert "saxpy2: triton failed (serial on the device): renderer error" in err
    report = json.loads((project / "out" / "small" / "report.json").read_text())
    saxpy = {r["name"]: r for r in report["regions"]}["saxpy2"]
    assert saxpy["targets"]["triton"]["status"] == "failed" and saxpy["targets"]["kokkos"]["status"] == "validated"
