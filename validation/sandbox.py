"""The sandbox every candidate runs in: bubblewrap (Linux namespaces), resource limits.

A candidate (compiler output or an LLM's answer) is code the tool did not write by hand
and must not trust. It runs in a worker process that bubblewrap (``bwrap``, the sandbox
Flatpak is built on) starts in new user, PID, network, IPC, UTS and cgroup namespaces:

- no network (its own empty network namespace);
- a root file system of its own holding, read-only, only the system directories (/usr and
  the /bin, /lib links), a few files of /etc the dynamic loader and Python need, the Python
  installation (the virtual environment's prefix and site-packages), the worker's own
  modules (``WORKER_FILES``, never the rest of the tool's source tree), and the paths the
  call names (the candidate's library or launcher); the project, its golden data, the
  reference build cache and the user's home are not there at all;
- one writable directory (the call's scratch folder: its inputs, its outputs; also $TMPDIR and $HOME);
- an environment built from an allow-list (``--clearenv``, then only ``PASSED_ENV`` and what the
  caller sets, never a secret's name: :mod:`validation.secrets`); bubblewrap itself starts from
  ``env -i`` with a bare PATH, since its own process is the sandbox's PID 1, whose
  ``/proc/1/environ`` a candidate can read;
- uid 65534 and no capabilities inside, ``--die-with-parent`` (the sandbox dies with the tool);
- limits: the caller's CPU-time and wall-clock limits and a process count
  (:func:`validation.processes.run_process`), an address-space limit through ``prlimit`` on
  CPU runs (a GPU context maps far more virtual memory than it uses, so GPU runs get none).

A Python-level guard cannot do this: code in the same interpreter can undo any guard.
``translate doctor`` reports :func:`probe`. Where bubblewrap is missing or user namespaces
are disabled, answers from an LLM are not run (``graph.agent_steps``) and compiler output
runs unsandboxed with a warning in the report.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from validation.secrets import is_secret

REPO_ROOT = Path(__file__).resolve().parent.parent
# the modules a validation worker imports; nothing else of the tool is visible inside
WORKER_FILES = ("validation/__init__.py", "validation/worker.py", "validation/npz.py", "validation/timing.py",
                "validation/serve.py")
# the tool's packages a frontend worker needs (a model file loaded in the sandbox), read-only
TOOL_PACKAGES = tuple(REPO_ROOT / d for d in ("parsers", "translate", "validation", "targets"))
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "passwd", "group",
             "nsswitch.conf", "os-release")
# variables a worker may inherit (exact names, then prefixes); a secret's name
# (validation.secrets.SECRET_WORDS) never passes, whatever its prefix
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH",
              "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")
PASSED_PREFIXES = ("OMP_", "OPENBLAS_", "MKL_", "TRITON_", "KOKKOS_")
# all bubblewrap and prlimit start with: neither needs more, and bubblewrap's process stays in the sandbox
LAUNCH_ENV = ("PATH=/usr/bin:/bin", "LANG=C.UTF-8")
SANDBOX_UID = 65534  # "nobody": the user a candidate runs as inside its namespace
MEMORY_LIMIT_BYTES = 16 * 1024**3  # address space of a CPU worker (numpy, torch and the interpreter fit well)
MAX_PROCESSES = 64  # processes one sandboxed call may have at once (run_process kills the group beyond)


@dataclass(frozen=True)
class Probe:
    """Whether candidates can be sandboxed here, with what, and if not, why."""

    available: bool
    tool: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Jail:
    """What one sandboxed call sees: host paths visible at the same path, read-only or
    writable; the environment it gets (on top of ``PASSED_ENV``); whether it uses the GPU."""

    read_only: Sequence[Path] = ()
    writable: Sequence[Path] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    gpu: bool = False
    memory_bytes: int | None = MEMORY_LIMIT_BYTES


def _bwrap() -> str:
    return os.environ.get("KT_BWRAP") or shutil.which("bwrap") or ""


@functools.cache
def probe() -> Probe:
    """Whether bubblewrap runs a sandbox here (found, and allowed to make user namespaces)."""
    if os.environ.get("KT_SANDBOX", "").lower() in ("0", "off", "no"):
        return Probe(False, "", "turned off by KT_SANDBOX=off")
    tool = _bwrap()
    if not tool:
        return Probe(False, "", "bubblewrap (bwrap) not found: install the 'bubblewrap' package")
    cmd = command(["/usr/bin/true" if Path("/usr/bin/true").exists() else "/bin/true"], Jail(memory_bytes=None),
                  tool)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, tool, f"bubblewrap could not start: {exc}")
    if p.returncode != 0:
        why = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        return Probe(False, tool, f"bubblewrap cannot make a sandbox here ({why}): are user namespaces disabled?")
    return Probe(True, tool, "bubblewrap: no network, read-only system, scratch folder only, scrubbed environment")


def _system_binds() -> list[str]:
    args: list[str] = []
    for d in SYSTEM_DIRS:
        p = Path(d)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), d]
        elif p.is_dir():
            args += ["--ro-bind", d, d]
    for name in ETC_FILES:
        if Path("/etc", name).exists():
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return args


def python_paths() -> list[Path]:
    """The Python installation a worker needs: the prefixes and the package folders on
    ``sys.path`` (site-packages, dist-packages), never the tool's source tree."""
    keep: list[Path] = []
    for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path}:
        if not p:
            continue
        path = Path(p).resolve()
        is_prefix = p in (sys.prefix, sys.base_prefix, sys.exec_prefix)
        if not path.is_dir() or path == REPO_ROOT or (not is_prefix and path.name not in ("site-packages",
                                                                                           "dist-packages")):
            continue
        if not any(str(path).startswith(d + "/") for d in SYSTEM_DIRS):
            keep.append(path)
    return sorted(set(keep))


def environment(extra: Mapping[str, str], scratch: Path | None) -> dict[str, str]:
    """The variables a sandboxed worker gets: ``PASSED_ENV`` from ours, minus anything secret,
    a home and temporary folder in its scratch, then ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if (k in PASSED_ENV or k.startswith(PASSED_PREFIXES)) and not is_secret(k)}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env.pop("TRITON_CACHE_DIR", None)
    # the package folders outside the interpreter's prefixes (a user site, say) go on the path by
    # name: inside, HOME is the scratch folder, so Python would not find a user site itself
    prefixes = [Path(p).resolve() for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}]
    outside = [str(p) for p in python_paths() if not any(p.is_relative_to(q) for q in prefixes)]
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
                "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *outside])})
    if scratch is not None:
        env.update({"HOME": str(scratch), "TMPDIR": str(scratch), "TRITON_CACHE_DIR": str(scratch / ".triton")})
    env.update({k: v for k, v in extra.items() if not is_secret(k)})
    return env


def command(cmd: Sequence[str], jail: Jail, tool: str | None = None, cwd: Path | None = None) -> list[str]:
    """``cmd`` wrapped in bubblewrap as ``jail`` says (and in ``prlimit`` for a memory limit)."""
    args = [tool or _bwrap(), "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid",
            str(SANDBOX_UID), "--die-with-parent", "--cap-drop", "ALL", "--clearenv",
            *_system_binds(), "--proc", "/proc", "--dev", "/dev"]
    bound = [*python_paths(), REPO_ROOT, *map(Path, jail.read_only), *map(Path, jail.writable)]
    if not any(Path(p).resolve().is_relative_to("/tmp") for p in bound):
        # a private /tmp; where bound paths lie under /tmp it stays part of the read-only root
        # (TMPDIR is the scratch folder either way)
        args += ["--tmpfs", "/tmp"]
    if jail.gpu:
        args += ["--ro-bind-try", "/sys", "/sys"]
        for dev in sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri/*")):
            args += ["--dev-bind", dev, dev]
    for p in python_paths():
        args += ["--ro-bind", str(p), str(p)]
    for rel in WORKER_FILES:
        args += ["--ro-bind", str(REPO_ROOT / rel), str(REPO_ROOT / rel)]
    for p in jail.read_only:
        args += ["--ro-bind", str(p), str(p)]
    for p in jail.writable:
        args += ["--bind", str(p), str(p)]
    args += ["--remount-ro", "/"]  # the sandbox's own root too: nothing can be planted beside the bound paths
    scratch = Path(jail.writable[0]) if jail.writable else None
    for k, v in environment(jail.env, scratch).items():
        args += ["--setenv", k, v]
    if cwd is not None:
        args += ["--chdir", str(cwd)]
    limit = [] if jail.gpu or not jail.memory_bytes or not shutil.which("prlimit") else \
        ["prlimit", f"--as={jail.memory_bytes}", "--core=0", "--"]
    return [shutil.which("env") or "env", "-i", *LAUNCH_ENV, *limit, *args, "--", *cmd]
