"""benchmarks/region_bench.py: the --variants spec and the side-by-side table (no GPU needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from region_bench import gpu_table, parse_variants  # noqa: E402


def test_variants_spec_parses_fields_per_target() -> None:
    got = parse_variants("cuda:march=4; cuda:march=8,grid_stride=true;triton:warps=8,block=512")
    assert got == {"cuda": [{"march": 4}, {"march": 8, "grid_stride": True}],
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
