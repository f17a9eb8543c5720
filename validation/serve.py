"""The worker side of a timing run whose clock is the parent's (:mod:`validation.timed`).

``python -m validation.serve job.json``: loads every case of the job (one fresh set of
inputs per timed call), prepares each call (arrays on the device for Triton on a GPU), then
answers commands on stdin, one per line: ``ping`` -> ``pong`` (the round trip the parent
subtracts), ``call K`` -> runs call K, synchronized, -> ``done K``, ``exit`` -> writes every
call's outputs to its ``out`` file -> ``saved``. Replies go to the original stdout; the
candidate's own prints are sent to stderr (the log), so it cannot answer in the worker's
place. Nothing here reads a clock: the parent times each call from its command to its reply.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from validation import worker


def _prepared(job: dict[str, Any], item: dict[str, Any]) -> tuple[Callable[[], Any], Callable[[Any], dict[str, Any]],
                                                                   dict[str, Any], dict[str, Any]]:
    sig = item["sig"]
    scalars, arrays = worker._load(item["case"])
    worker._prepare(sig, arrays)
    one = {**job, "sig": sig}
    if job["mode"] == "triton":
        call, finish = worker.triton_call(one, scalars, arrays)
    elif job["mode"] == "reference":
        def call() -> Any:
            return worker.run_reference(one, scalars, arrays, None)

        def finish(ret: Any) -> dict[str, Any]:
            return ret
    else:
        def call() -> Any:
            return worker.run_ctypes(one, scalars, arrays)

        def finish(ret: Any) -> dict[str, Any]:
            return ret
    return call, finish, scalars, arrays


def serve(job: dict[str, Any]) -> int:
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # what the candidate prints goes to the log, never to the parent's channel
    if job["mode"] == "reference":
        worker.reference_module(job)
    calls = [_prepared(job, item) for item in job["cases"]]
    returned: dict[int, Any] = {}
    reply.write("ready\n")
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "ping":
            reply.write("pong\n")
        elif cmd[0] == "call":
            k = int(cmd[1])
            returned[k] = calls[k][0]()
            reply.write(f"done {k}\n")
        elif cmd[0] == "exit":
            break
    for k, (item, (_, finish, scalars, arrays)) in enumerate(zip(job["cases"], calls, strict=True)):
        if k in returned:
            worker._save(item["sig"], scalars, arrays, finish(returned[k]), item["out"])
    reply.write("saved\n")
    return 0


if __name__ == "__main__":
    faulthandler.enable()
    sys.exit(serve(json.loads(Path(sys.argv[1]).read_text())))
