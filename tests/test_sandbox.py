"""The sandbox candidates run in (validation.sandbox): each escape a candidate could try,
tried from inside, must fail; what a worker needs must still work.

The sandbox is required here (scripts/setup installs bubblewrap): these tests skip only
where it was turned off on purpose (KT_SANDBOX=off)."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from validation import runners, sandbox
from validation.processes import run_process

pytestmark = pytest.mark.skipif(os.environ.get("KT_SANDBOX", "").lower() in ("0", "off", "no"),
                                reason="sandbox turned off by KT_SANDBOX")

PROBE = r"""
import json, os, socket, sys
from pathlib import Path
out = {}
def attempt(name, fn):
    try:
        out[name] = ["ok", str(fn())[:200]]
    except BaseException as exc:
        out[name] = ["error", type(exc).__name__]
args = json.loads(sys.argv[1])
attempt("env", lambda: {k: v for k, v in os.environ.items() if "KEY" in k or "TOKEN" in k})
attempt("read_golden", lambda: Path(args["golden"]).read_bytes())
attempt("read_reference", lambda: Path(args["reference"]).read_bytes())
attempt("read_source", lambda: Path(args["source"]).read_text())
attempt("read_worker", lambda: len(Path(args["worker"]).read_text()))
attempt("read_home", lambda: json.dumps(sorted(os.listdir(args["home"]))))
attempt("write_repo", lambda: Path(args["repo"], "sitecustomize.py").write_text("import os"))
attempt("write_outside", lambda: Path(args["outside"], "planted.txt").write_text("x"))
attempt("write_usr", lambda: Path("/usr/kt-planted").write_text("x"))
attempt("write_scratch", lambda: Path(args["scratch"], "mine.txt").write_text("x"))
attempt("connect_host", lambda: socket.create_connection(("127.0.0.1", args["port"]), timeout=3))
attempt("connect_out", lambda: socket.create_connection(("1.1.1.1", 443), timeout=3))
def environs():
    # every process the candidate can see, bubblewrap's own (PID 1) first: which canaries their
    # environments hold, and how many of them could be read
    texts = [Path(f"/proc/{p}/environ").read_bytes().decode(errors="replace")
             for p in sorted(os.listdir("/proc"), key=lambda p: (len(p), p)) if p.isdigit()]
    return json.dumps([len(texts), [c for c in args["canaries"] if any(c in t for t in texts)]])
attempt("proc_environ", environs)
attempt("uid", lambda: os.getuid())
attempt("import_numpy", lambda: __import__("numpy").arange(3).sum())
attempt("import_worker", lambda: __import__("validation.worker").__name__)
print("RESULT" + json.dumps(out))
"""


def _listener() -> tuple[socket.socket, int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    threading.Thread(target=lambda: srv.accept(), daemon=True).start()
    return srv, srv.getsockname()[1]


def test_sandbox_is_available_here() -> None:
    probe = sandbox.probe()
    assert probe.available, probe.detail


def test_escapes_fail_and_the_worker_still_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-candidates")
    monkeypatch.setenv("KT_TEST_TOKEN", "tok-not-for-candidates")
    monkeypatch.setenv("KT_TEST_PLAIN", "a-project-only-variable")  # not secret by name: not on the allow-list
    project = tmp_path / "project"
    (project / "out" / "golden" / "r").mkdir(parents=True)
    (project / "out" / "golden" / "r" / "case0.npz").write_bytes(b"expected outputs")
    cache = tmp_path / "cache" / "reference" / "abc"
    cache.mkdir(parents=True)
    (cache / "ktref_abc.so").write_bytes(b"\x7fELF reference")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    srv, port = _listener()
    args = {"golden": str(project / "out" / "golden" / "r" / "case0.npz"), "reference": str(cache / "ktref_abc.so"),
            "source": str(sandbox.REPO_ROOT / "translate" / "ir.py"),
            "worker": str(sandbox.REPO_ROOT / "validation" / "worker.py"), "home": str(Path.home()),
            "repo": str(sandbox.REPO_ROOT), "outside": str(project), "scratch": str(scratch), "port": port,
            "canaries": ["sk-not-for-candidates", "tok-not-for-candidates", "a-project-only-variable"]}
    cmd = sandbox.command([sys.executable, "-P", "-c", PROBE, json.dumps(args)], sandbox.Jail(writable=[scratch]),
                          cwd=scratch)
    r = run_process(cmd, "probe", 120, exit_signals=True)
    srv.close()
    assert r.ok, r.output
    seen = json.loads(r.output.split("RESULT", 1)[1])
    assert seen["env"] == ["ok", "{}"]
    # the home holds at most the folders leading to the Python installation, which the sandbox made
    home = Path.home()
    leading = {p.relative_to(home).parts[0] for p in sandbox.python_paths() if p.is_relative_to(home)}
    assert seen["read_home"][0] == "error" or set(json.loads(seen["read_home"][1])) <= leading, seen["read_home"]
    for name in ("read_golden", "read_reference", "read_source", "write_repo", "write_outside",
                 "write_usr", "connect_host", "connect_out"):
        assert seen[name][0] == "error", (name, seen[name])
    # bubblewrap's init and the worker were both read, and neither holds a variable of ours
    assert seen["proc_environ"][0] == "ok", seen["proc_environ"]
    count, leaked = json.loads(seen["proc_environ"][1])
    assert count >= 2 and leaked == [], seen["proc_environ"]
    assert seen["uid"] == ["ok", str(sandbox.SANDBOX_UID)]
    for name in ("read_worker", "write_scratch", "import_numpy", "import_worker"):
        assert seen[name][0] == "ok", (name, seen[name])
    assert (scratch / "mine.txt").exists()
    assert not (sandbox.REPO_ROOT / "sitecustomize.py").exists() and not (project / "planted.txt").exists()


def test_memory_and_process_limits(tmp_path: Path) -> None:
    hog = "b = bytearray(20 * 1024**3)"
    r = run_process(sandbox.command([sys.executable, "-c", hog], sandbox.Jail(writable=[tmp_path])), "hog", 60,
                    exit_signals=True)
    assert not r.ok and "MemoryError" in r.output
    bomb = ("import os, time\nfor _ in range(200):\n    if os.fork() == 0:\n        time.sleep(30)\n"
            "        os._exit(0)\ntime.sleep(30)")
    r = run_process(sandbox.command([sys.executable, "-c", bomb], sandbox.Jail(writable=[tmp_path])), "bomb", 60,
                    cpu_limit=30, max_processes=sandbox.MAX_PROCESSES, exit_signals=True)
    assert not r.ok and f"more than {sandbox.MAX_PROCESSES} processes" in r.reason
    assert r.seconds < 20


def test_environment_drops_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_API_KEY", "x")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    env = sandbox.environment({}, None)
    assert "TRITON_API_KEY" not in env and env["OMP_NUM_THREADS"] == "3"


SYSCALL_WRITER = """static long kt_sys(long n, long a, long b, long c) {
  long r;
  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return r;
}
extern "C" void kt_plant(int n, double* x) {
  long fd = kt_sys(2, (long)"%s", 01101, 0644);
  if (fd >= 0) kt_sys(1, fd, (long)"planted\\n", 8);
  for (int i = 0; i < n; ++i) x[i] = 2 * x[i];
}
"""


@pytest.mark.skipif(__import__("platform").machine() != "x86_64" or runners.toolchains.find_kokkos() is None,
                    reason="needs x86-64 and Kokkos")
def test_raw_system_calls_are_stopped_by_the_sandbox_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Code that makes system calls itself passes the symbol check (it names no function): the
    sandbox is what stops its write outside the scratch folder. Without the sandbox (the control)
    the same code plants its file."""
    from translate import ir

    target = tmp_path / "planted.txt"
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "plant_kokkos.cpp").write_text(SYSCALL_WRITER % target)
    n = ir.Var("n", ir.DType.I32)
    kernel = ir.Kernel("plant", (ir.Scalar("n", ir.DType.I32),
                                 ir.Array("x", ir.DType.F64, (n,), intent=ir.Intent.INOUT)), (), (),
                       ir.Origin("plant.f", 1))
    from validation.inputs import make_case

    case = make_case(kernel, {"n": 4}, {}, {}, 1)
    (r,) = runners.run_candidate_cases("kokkos", tmp_path / "c", kernel, [case], tmp_path / "w", tmp_path / "cache")
    assert r.ok and not target.exists(), r.reason
    monkeypatch.setenv("KT_SANDBOX", "off")
    sandbox.probe.cache_clear()
    try:
        (r,) = runners.run_candidate_cases("kokkos", tmp_path / "c", kernel, [case], tmp_path / "w",
                                           tmp_path / "cache")
        assert r.ok and target.read_text() == "planted\n"
    finally:
        monkeypatch.delenv("KT_SANDBOX")
        sandbox.probe.cache_clear()
