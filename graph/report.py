"""report.json and report.md for one workflow run.

The JSON keys are a contract other tools read:

    {"workflow": str, "regions": [
      {"name", "source", "line", "status": "translated" | "unsupported", "reason",
       "targets": {"<target>": {"status": "validated" | "compiled" | "failed" | "unsupported",
                                "reason", "max_abs_err", "max_rel_err", "rel_l2_err",
                                "trials", "files"}}}]}

Extra keys (``loops``, ``schedule``, ``attempts``) are added beside those. A target
that was profiled (validated and runnable on this machine) also has ``time_s``,
``ref_time_s``, ``speedup``, ``gbps``, ``gflops``, ``fraction_of_peak``, ``bound``,
``variant``, ``profile_sizes``, ``work_bytes`` and ``work_flops``; one the optimize
step searched has ``search`` (every variant tried: status, time; last, the fastest and the
current schedule timed in turns: ``time_s``, ``current_time_s``, "confirmed" or not) and,
when a variant won, ``time_before_search_s`` (the current's time from those turns).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from graph.charts import Point, roofline_svg, speedup_svg
from graph.report_html import render_html
from targets.torch_module import NOTE_PREFIXES
from validation.atomic import write_atomic
from validation.secrets import redact_tree, secret_values

TARGET_KEYS = ("status", "reason", "max_abs_err", "max_rel_err", "rel_l2_err", "trials", "files")


def target_entry(status: str, reason: str | None = None, **extra: Any) -> dict[str, Any]:
    """A per-target record with every contract key present."""
    entry: dict[str, Any] = {
        "status": status, "reason": reason, "max_abs_err": None, "max_rel_err": None,
        "rel_l2_err": None, "trials": 0, "files": [],
    }
    entry.update(extra)
    return entry


def region_entry(name: str, source: str, line: int, status: str, reason: str | None = None,
                 targets: dict[str, dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name, "source": source, "line": line, "status": status, "reason": reason,
        "targets": targets or {},
    }
    entry.update(extra)
    return entry


def summary(regions: list[dict[str, Any]]) -> Counter[str]:
    """Counts of per-target statuses over all regions (plus unsupported regions)."""
    counts: Counter[str] = Counter()
    for region in regions:
        if region["status"] in ("unsupported", "inlined"):
            counts[f"region {region['status']}"] += 1
        for t in region["targets"].values():
            counts[t["status"]] += 1
    return counts


def write_reports(out_dir: Path, workflow: str, regions: list[dict[str, Any]],
                  notes: list[str] | None = None, program: dict[str, Any] | None = None,
                  secret_names: Sequence[str] = ()) -> tuple[Path, Path]:
    """report.json, report.md and report.html, every text in them redacted (validation.secrets:
    a candidate's output may hold whatever it could read; ``secret_names``: more secret variables)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    regions = sorted(regions, key=lambda r: (r["source"], r["line"], r["name"]))
    values = secret_values(extra=secret_names)
    regions = cast(list[dict[str, Any]], redact_tree(regions, values))
    notes = cast(list[str], redact_tree(list(notes or []), values))
    doc: dict[str, Any] = {"workflow": workflow, "regions": regions}
    if notes:
        doc["notes"] = notes
    if program is not None:
        program = cast(dict[str, Any], redact_tree(program, values))
        doc["program"] = program
    json_path = out_dir / "report.json"
    write_atomic(json_path, json.dumps(doc, indent=2, default=str) + "\n")
    charts = write_charts(out_dir, workflow, regions)
    md_path = out_dir / "report.md"
    markdown = render_markdown(workflow, regions, notes or [], charts)
    if program is not None:
        markdown += program_markdown(program)
    write_atomic(md_path, markdown)
    write_atomic(out_dir / "report.html", render_html(markdown, out_dir))
    return json_path, md_path


def _err(value: float | None) -> str:
    return "-" if value is None else f"{value:.1e}"


def render_markdown(workflow: str, regions: list[dict[str, Any]], notes: list[str],
                    charts: list[str] | None = None) -> str:
    targets = sorted({t for r in regions for t in r["targets"]})
    lines = [f"# Workflow `{workflow}`", ""]
    counts = summary(regions)
    lines.append("Summary: " + (", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "nothing ran") + ".")
    lines.append("")
    lines.append("| region | source | " + " | ".join(targets) + " |")
    lines.append("|---|---|" + "---|" * len(targets))
    for r in regions:
        cells = []
        for t in targets:
            entry = r["targets"].get(t)
            if entry is None:
                cells.append("-")
            elif entry["status"] == "validated":
                cells.append(f"validated (rel L2 {_err(entry['rel_l2_err'])}, {entry['trials']} trials)")
            else:
                cells.append(entry["status"])
        if r["status"] in ("unsupported", "inlined"):
            cells = [r["status"]] * len(targets)
        lines.append(f"| `{r['name']}` | {r['source']}:{r['line']} | " + " | ".join(cells) + " |")
    lines.append("")
    details = []
    for r in regions:
        why = [f"- {n}" for n in r.get("notes") or []] if "ops" not in r else []
        if r["status"] in ("unsupported", "inlined"):
            why.append(f"- region {r['status']}: {r['reason']}")
        for t, entry in sorted(r["targets"].items()):
            if entry["status"] != "validated" and entry.get("reason"):
                why.append(f"- {t}: {entry['status']}: {entry['reason']}")
            if entry.get("schedule") and entry["schedule"] != "as analysed":
                why.append(f"- {t}: schedule {entry['schedule']}")
        if "ops" in r:  # a PyTorch region: how each op runs, and the generated module around them
            why += [f"- {o['runs_as']}{' (' + o['target'] + ')' if o.get('target') else ''}: {_bare(o['op'])}"
                    for o in r["ops"] if o["runs_as"] != "note" or "held sizes" in o["op"] or "state" in o["op"]]
            if r.get("model_new"):
                why.append(f"- ModelNew: `{r['model_new']}`" + (f"; host plan: {r['host_plan']}"
                                                                 if r.get("host_plan") else ""))
        for loop in r.get("loops", []) if "ops" not in r else []:
            directive = f" [{loop['directive']}]" if loop.get("directive") else ""
            why.append(f"- loop `{loop['var']}` (line {loop['line']}): {loop['kind']}{directive}: {loop['reason']}")
        if why:
            details += [f"### `{r['name']}` ({r['source']}:{r['line']})", "", *why, ""]
    lines += _performance(regions, charts or [])
    if details:
        lines += ["## Details", "", *details]
    if notes:
        lines += ["## Notes", "", *(f"- {n}" for n in notes), ""]
    return "\n".join(lines)


def _bare(op: str) -> str:
    """An op's note without the frontend's own prefix ("generated kernel: ...")."""
    head, sep, rest = op.partition(": ")
    return rest if sep and head.lower() in NOTE_PREFIXES else op


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1e3:.3f}"


def _performance(regions: list[dict[str, Any]], charts: list[str]) -> list[str]:
    """The profiled targets: times, rates, roofline fraction, variant; then the searches."""
    rows, searches = [], []
    for r in regions:
        for t, e in sorted(r["targets"].items()):
            if e.get("time_s") is None:
                continue
            frac = e.get("fraction_of_peak")
            speed = e.get("speedup")
            rows.append(f"| `{r['name']}` | {t} | {_ms(e['time_s'])} | {_ms(e.get('ref_time_s'))} | "
                        f"{f'{speed:.2f}x' if speed else '-'} | {e.get('gbps', 0):.2f} | {e.get('gflops', 0):.2f} | "
                        f"{f'{frac * 100:.1f}%' if frac is not None else '-'} ({e.get('bound', '-')}) | "
                        f"{e.get('variant', '-')} |")
            if e.get("search"):
                before = e.get("time_before_search_s")
                head = (f"- `{r['name']}` {t}: {_ms(before)} -> {_ms(e['time_s'])} ms ({before / e['time_s']:.2f}x) "
                        f"with {e['variant']}" if before else f"- `{r['name']}` {t}: no variant was faster")
                searches.append(head)
                for h in e["search"]:
                    what = f"{_ms(h.get('time_s'))} ms" if h.get("time_s") is not None else \
                        f"{h.get('status')}: {h.get('reason') or ''}".strip()
                    if h.get("current_time_s") is not None:  # the winner and the current, timed in turns
                        what += f" against {_ms(h['current_time_s'])} ms: {h['status']}"
                    searches.append(f"  - {h['variant']}: {what}{' (cached)' if h.get('cached') else ''}")
    if not rows:
        return []
    sizes = next((e.get("profile_sizes") for r in regions for e in r["targets"].values() if e.get("time_s")), {})
    out = ["## Performance", "",
           f"Profiled on this machine at {sizes or 'the validation sizes'} (median times; the reference is the "
           "source compiled as the validation builds it; roofline: the time the machine's measured ceilings allow "
           "for the region's bytes and flops over the time measured).", "",
           "| region | target | ms | reference ms | speedup | GB/s | GFLOP/s | roofline | variant |",
           "|---|---|---|---|---|---|---|---|---|", *rows, ""]
    out += [f"![{name}]({name})" for name in charts] + ([""] if charts else [])
    if searches:
        out += ["### Schedule search", "", *searches, ""]
    return out


def write_charts(out_dir: Path, workflow: str, regions: list[dict[str, Any]]) -> list[str]:
    """``roofline-<device>.svg`` per machine the targets were timed on and ``speedup.svg``;
    the file names written."""

    by_device: dict[str, tuple[dict[str, Any], list[Point]]] = {}
    bars = []
    for r in regions:
        for t, e in sorted(r["targets"].items()):
            if e.get("time_s") is None or not e.get("roof") or not e.get("work_bytes"):
                continue
            roof = e["roof"]
            _, points = by_device.setdefault(roof["device"], (roof, []))
            points.append(Point(r["name"], t, e["work_flops"] / e["work_bytes"], e["gflops"]))
            if e.get("speedup"):
                bars.append((f"{r['name']} ({t})", float(e["speedup"])))
    names = []
    for k, (device, (roof, points)) in enumerate(sorted(by_device.items())):
        name = "roofline.svg" if k == 0 else f"roofline-{k + 1}.svg"
        (out_dir / name).write_text(roofline_svg(points, roof["copy_gbps"], roof["peak_gflops"],
                                                 f"{workflow}: roofline of {device} ({roof['precision']})"))
        names.append(name)
    if bars:
        (out_dir / "speedup.svg").write_text(speedup_svg(bars, f"{workflow}: speedup over the reference"))
        names.append("speedup.svg")
    return names


def program_markdown(program: dict[str, Any]) -> str:
    """The whole program's section: the original and each migrated build, side by side."""
    lines = ["", f"## Program `{program['name']}`: {program.get('status', '-')}", ""]
    if program.get("reason"):
        lines += [program["reason"], ""]
    original = program.get("original", {})
    lines += ["| build | status | seconds | in regions: kernels / copies / host (s) | copies in / out (bytes) | "
              "routines replaced | checks |", "|---|---|---|---|---|---|---|",
              f"| original | {'ran' if original.get('ran') else 'failed'} | {original.get('seconds', '-')} | - | - | - "
              "| - |"]
    for target, info in program.get("targets", {}).items():
        checks = ", ".join(f"{c['check']} {'ok' if c['ok'] else 'FAILED'}" for c in info.get("checks", [])) or "-"
        t = info.get("transfers") or {}
        split = (f"{t['kernel_seconds']:.4g} / {t['copy_seconds']:.4g} / {t['host_seconds']:.4g}"
                 if "kernel_seconds" in t else "-")
        moved = (f"{t['copies_in']} ({t['h2d_bytes']:,}) / {t['copies_out']} ({t['d2h_bytes']:,})"
                 if "copies_in" in t else "-")
        lines.append(f"| {target} | {info.get('status', '-')} | {info.get('seconds', '-')} | {split} | {moved} | "
                     f"{len(info.get('replaced', []))} | {checks} |")
    for target, info in program.get("targets", {}).items():
        data = info.get("data") or {}
        if data.get("regions"):
            through = f"; they stay open through {', '.join(data['through'])}" if data.get("through") else ""
            lines.append(f"- {target}: data regions at {', '.join(data['regions'])} "
                         f"({data.get('updates', 0)} update calls{through})")
        for why in data.get("refused", []):
            lines.append(f"- {target}: {why}")
        t = info.get("transfers") or {}
        if t.get("outside"):
            slowest = ", ".join(f"`{name}` {c['calls']} x, {c['kernel_seconds']:.3g} s"
                                for name, c in list(t["outside"].items())[:5])
            lines.append(f"- {target}: outside the data regions {t['outside_calls']} calls, "
                         f"{t['outside_kernel_seconds']:.4g} s in their kernels (slowest: {slowest})")
    for target, info in program.get("targets", {}).items():
        for c in info.get("checks", []):
            if not c["ok"]:
                lines.append(f"- {target} {c['check']}: {c['detail']}")
        if info.get("reason"):
            lines.append(f"- {target}: {info['reason']}")
        for name, why in info.get("refused", {}).items():
            lines.append(f"- {target}: `{name}` stays the original routine: {why}")
    return "\n".join(lines) + "\n"
