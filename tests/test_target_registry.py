"""Every list of targets derives from the registry (targets.base.TARGETS): the CLI's, the
config's, the file extensions validation looks for, the agents' prompt titles and code fences,
the charts' colours and the GPU-profiled targets."""

from __future__ import annotations

import re
from pathlib import Path

from graph import agent_steps, charts, cli, config, optimize_steps
from targets.base import BUILTIN_TARGETS, TARGETS, available
from validation import anticheat

ROOT = Path(__file__).resolve().parent.parent
# per-target rules, not lists of targets: the schedule search's per-target variants
ALLOWED = {"graph/optimize_steps.py"}
LITERAL_LIST = re.compile(r'"(kokkos|cuda|triton)",\s*"(kokkos|cuda|triton)"')


def test_every_list_of_targets_comes_from_the_registry() -> None:
    names = tuple(TARGETS)
    assert names == ("kokkos", "cuda", "triton") and tuple(BUILTIN_TARGETS) == names
    assert config.TARGETS == names and cli.TARGETS == names
    assert tuple(agent_steps.TITLES) == names
    assert all(TARGETS[n].language in anticheat.LANGUAGES for n in names)  # every target has rules
    assert tuple(agent_steps.LANGUAGES) == names and set(names) <= set(charts.COLORS)
    assert optimize_steps.GPU_TARGETS == ("cuda", "triton")
    assert set(available()) <= set(names)


def test_no_source_file_spells_out_a_list_of_targets() -> None:
    found = [f"{f.relative_to(ROOT)}:{n}: {line.strip()}"
             for d in ("translate", "parsers", "targets", "validation", "graph")
             for f in sorted((ROOT / d).glob("*.py")) if str(f.relative_to(ROOT)) not in ALLOWED
             for n, line in enumerate(f.read_text().splitlines(), 1)
             if LITERAL_LIST.search(line) and "TargetInfo(" not in line]
    assert not found, "lists of targets outside the registry:\n" + "\n".join(found)


def test_a_list_spelled_out_is_seen() -> None:
    assert LITERAL_LIST.search('TARGETS = ("kokkos", "cuda", "triton")')
    assert not LITERAL_LIST.search('TargetInfo("kokkos", "targets.kokkos", "cpp")')
