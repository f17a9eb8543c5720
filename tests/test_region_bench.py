"""benchmarks/region_bench.py: the --variants spec and the side-by-side table (no GPU needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from region_bench import parse_variants, time_rounds  # noqa: E402
from region_table import gpu_table  # noqa: E402


def test_variants_spec_parses_fields_per_target() -> None:
    got = parse_variants("cuda:run_length=4; cuda:run_length=8,grid_stride=true;triton:warps=8,block=512")
    assert got == {"cuda": [{"run_length": 4}, {"run_length": 8, "grid_stride": True}],
                   "triton": [{"warps": 8, "block": 512}]}


def test_variants_spec_rejects_unknown_fields() -> None:
    with pytest.raises(SystemExit, match="not a Schedule field"):
        parse_variants("cuda:unroll=4")


def test_table_lists_each_variant_against_the_roof() -> None:
    row = {"workflow": "w", "region": "vswap", "bytes": 2e9, "flops": 0.0, "ref_time_s": None,
           "cuda": {"time_s": 1e-3, "gbps": 2000.0, "fraction_of_peak": 0.5,
                    "variants": {"before_s": 1e-3, "best_s": 5e-4, "variant": "v2", "history": [
                        {"variant": "as analysed, block 256", "status": "validated", "time_s": 1e-3, "current": True},
                        {"variant": "v2", "status": "validated", "time_s": 5e-4},
                        {"variant": "v3", "status": "failed", "reason": "case0: max rel error 1", "time_s": None}]}}}
    text = gpu_table([row])
    assert "side by side" in text
    lines = [ln for ln in text.splitlines() if ln.startswith("  vswap")]
    assert "1.000 ms 50%" in lines[0]
    assert "0.500 ms 100%" in lines[1]
    assert "failed: case0: max rel error 1" in lines[2]


def test_rounds_take_turns_and_stop_timing_a_failed_target() -> None:
    calls: list[str] = []

    def timer(t: str) -> float:
        calls.append(t)
        if t == "triton" and calls.count("triton") == 2:
            raise RuntimeError("out of memory")
        return {"cuda": 1.0, "triton": 2.0}[t] + 0.1 * len(calls)

    got = time_rounds(["cuda", "triton"], timer, 3)
    assert calls == ["cuda", "triton", "cuda", "triton", "cuda"]  # turns; triton not timed after it failed
    assert got["cuda"] == [1.1, 1.3, 1.5]
    assert got["triton"] == "RuntimeError: out of memory"


def test_table_notes_rounds_that_disagree() -> None:
    row = {"workflow": "w", "region": "vscal", "bytes": 2e9, "flops": 0.0, "ref_time_s": None,
           "triton": {"time_s": 6.72e-4, "gbps": 3000.0, "fraction_of_peak": 0.7,
                      "rounds_s": [6.72e-4, 7.49e-4, 6.70e-4]},
           "cuda": {"time_s": 5.6e-4, "gbps": 4000.0, "fraction_of_peak": 0.95, "rounds_s": [5.6e-4, 5.61e-4, 5.6e-4]}}
    text = gpu_table([row])
    assert "vscal triton: rounds 0.672 / 0.749 / 0.670 ms" in text
    assert "vscal cuda: rounds" not in text  # within 5%: not noted


def test_the_gpu_side_imports_nothing_the_gpu_machine_lacks() -> None:
    """The GPU machine has torch, triton, numpy and yaml but not the frontends' and the
    application's packages: the golden check and the region benchmark's GPU step must import
    without them."""
    blocked = ("pydantic", "fparser", "langgraph", "openai", "typer", "rich")
    code = ("import sys\n"
            f"for name in {blocked!r}:\n    sys.modules[name] = None\n"
            "sys.path.insert(0, 'benchmarks')\n"
            "import validation.golden, validation.profile, graph.charts, region_bench\n"
            "from validation.profile import ProfileCase, gpu_call\n"
            "import torch\n"
            "if not torch.cuda.is_available():  # the GPU step's imports run, then it stops: no GPU\n"
            "    assert region_bench.main(['gpu', 'no-plan']) == 2\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
