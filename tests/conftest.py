"""Triton picks interpreter or compiled mode when it is first imported: on a machine
without an NVIDIA GPU every test runs it in the interpreter, whichever test module
imports it first. ``TRITON_INTERPRET`` given by the caller wins (``scripts/gpu-check``)."""

from __future__ import annotations

import os
from pathlib import Path

if "TRITON_INTERPRET" not in os.environ and not Path("/dev/nvidiactl").exists():
    os.environ["TRITON_INTERPRET"] = "1"
