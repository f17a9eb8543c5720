"""The request to stop a run (Ctrl-C, SIGTERM), seen by every thread of the process.

A signal is delivered to the process, and the work it must stop runs in the graph's worker
threads and their child processes: so the request is one process-wide event (the only
module-level state of the package, written only by :func:`request_stop`). Code that waits on
a child process (``validation.processes.run_process``) polls it, kills its child's process group
and raises :class:`Interrupted`, which is a ``BaseException`` so that the handlers that keep
one region's failure from stopping the others (``except Exception``) let it through: the
interrupted node records nothing, and ``--resume`` runs it again.
"""

from __future__ import annotations

import threading

_STOP = threading.Event()


class Interrupted(BaseException):
    """The run was asked to stop; the work in progress is abandoned, not recorded."""


def request_stop() -> None:
    _STOP.set()


def requested() -> bool:
    return _STOP.is_set()


def clear() -> None:
    """Forget an earlier request (a new run in the same process: tests, several workflows)."""
    _STOP.clear()


def check() -> None:
    """Raise :class:`Interrupted` if a stop was requested."""
    if _STOP.is_set():
        raise Interrupted("the run was interrupted")
