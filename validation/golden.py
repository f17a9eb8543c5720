"""Golden data: inputs and reference outputs recorded per region, so that a
target can be validated where the source toolchain is missing (a GPU node
without gfortran) and regression tests can be generated.

Layout::

    <out>/golden/<region>/region.json    {"region", "kernel", "reduces", "cases": [...]}
    <out>/golden/<region>/case<k>.npz    s:<name> input scalars, a:<name> input arrays,
                                         r:<name> reference outputs (and r:result)
    <out>/golden/<region>/case<k>.json   signature with shapes evaluated, seed, sizes, values
    <out>/golden/<region>/manifest.json  the SHA-256 of every file above: a file deleted,
                                         truncated or edited after it was recorded fails the check

A region's golden data is recorded whole into a folder beside it and then moved into
place (:func:`record_all`): a run killed while recording leaves the earlier run's data as
it was. Every file is written to a temporary name and renamed.

On the GPU machine::

    python -m validation.golden <out_dir> --targets cuda,triton

runs each target's files (``<out_dir>/<target>/NAME_<target>.*``) against the
golden cases, prints a table and exits non-zero on any mismatch. Needs only
numpy (+ torch/triton for Triton): no fparser, no yaml, no langgraph.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from targets.base import TARGETS
from translate import ir
from validation import sandbox, stopping
from validation.atomic import write_atomic
from validation.builds import build_candidate, candidate_file
from validation.compare import Comparison, compare
from validation.inputs import Case, read_npz
from validation.runners import run_candidate_cases
from validation.signature import kernel_from_signature, signature

MANIFEST = "manifest.json"
STAGING = ".new"
# cases holding more array bytes than this are written uncompressed (record)
COMPRESS_LIMIT_BYTES = 64 * 1024**2


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    return v


def record(golden_dir: Path, kernel: ir.Kernel, case: Case, ref_outputs: dict[str, np.ndarray], k: int,
           reduces: bool | None = None, tolerance: tuple[float, float] | None = None,
           allclose: tuple[float, float] | None = None) -> Path:
    """Write ``case<k>.npz`` / ``case<k>.json`` and update ``region.json``;
    ``allclose`` (atol, rtol) is recorded for PyTorch regions (validation.compare)."""
    golden_dir.mkdir(parents=True, exist_ok=True)
    sig = signature(kernel, case.env | {k2: v for k2, v in case.sizes.items() if k2 not in case.scalars})
    if reduces is not None:
        sig["reduces"] = reduces
    data = {f"s:{n}": np.asarray(v) for n, v in case.scalars.items()}
    data.update({f"a:{n}": a for n, a in case.arrays.items()})
    data.update({f"r:{n}": np.asarray(a) for n, a in ref_outputs.items()})
    path = golden_dir / f"case{k}.npz"
    buf = io.BytesIO()
    # large cases are stored as they are: random floats shrink little, and compressing gigabytes
    # takes minutes a stopped run must not spend
    if sum(a.nbytes for a in data.values()) <= COMPRESS_LIMIT_BYTES:
        np.savez_compressed(buf, **data)
    else:
        np.savez(buf, **data)
    meta = {"signature": sig, "seed": case.seed, "sizes": case.sizes, "values": case.values,
            "tolerance": list(tolerance) if tolerance else None}
    if allclose is not None:
        meta["allclose"] = list(allclose)
    index_path = golden_dir / "region.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {"cases": []}
    index.update({"region": golden_dir.name.removeprefix(".").removesuffix(STAGING), "kernel": kernel.name,
                  "reduces": sig["reduces"]})
    index["cases"] = sorted(set(index["cases"]) | {f"case{k}"}, key=lambda s: int(s[4:]))
    files = {path.name: buf.getvalue(), f"case{k}.json": json.dumps(_jsonable(meta), indent=1).encode(),
             "region.json": json.dumps(index, indent=1).encode()}
    manifest_path = golden_dir / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"files": {}}
    for name, data_bytes in files.items():
        write_atomic(golden_dir / name, data_bytes)
        manifest["files"][name] = hashlib.sha256(data_bytes).hexdigest()
    write_atomic(manifest_path, json.dumps(manifest, indent=1, sort_keys=True))
    return path


def record_all(golden_dir: Path, kernel: ir.Kernel, cases_and_outputs: Sequence[tuple[Case, dict[str, Any]]],
               reduces: bool | None = None, tolerance: tuple[float, float] | None = None,
               allclose: tuple[float, float] | None = None) -> None:
    """Record every case of a region (:func:`record`) into a folder beside ``golden_dir``, then
    put it in the place of the earlier data: at no moment is a half-written set in place."""
    golden_dir = Path(golden_dir)
    staging = golden_dir.with_name(f".{golden_dir.name}{STAGING}")
    shutil.rmtree(staging, ignore_errors=True)
    for n, (case, outputs) in enumerate(cases_and_outputs):
        stopping.check()  # a stopped run records nothing more; the staging folder is never put in place
        record(staging, kernel, case, outputs, n, reduces, tolerance, allclose)
    old = golden_dir.with_name(f".{golden_dir.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if golden_dir.exists():
        golden_dir.rename(old)
    staging.rename(golden_dir)
    shutil.rmtree(old, ignore_errors=True)


def verify(golden_dir: Path) -> list[str]:
    """What is wrong with a region's golden data, each naming the file (empty: intact)."""
    golden_dir = Path(golden_dir)
    manifest_path = golden_dir / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())["files"]
    except FileNotFoundError:
        return [f"{manifest_path} is missing: the golden data cannot be checked (record it again)"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"{manifest_path} is damaged ({exc})"]
    problems = []
    for name, digest in sorted(manifest.items()):
        path = golden_dir / name
        try:
            actual = hashlib.sha256(path.read_bytes()).hexdigest()
        except FileNotFoundError:
            problems.append(f"{path} is missing")
            continue
        if actual != digest:
            problems.append(f"{path} was changed after it was recorded (truncated or edited)")
    listed = {n.removesuffix(".json") for n in manifest if n.startswith("case") and n.endswith(".json")}
    if not listed:
        problems.append(f"{golden_dir} holds no golden cases")
    for name in sorted(set(cases(golden_dir)) - listed):
        problems.append(f"{golden_dir / (name + '.json')} is not in {MANIFEST}")
    return problems


def load_case(golden_dir: Path, name: str) -> tuple[ir.Kernel, dict[str, Any], Case, dict[str, np.ndarray]]:
    """(kernel with constant shapes, case metadata, inputs, reference outputs)."""
    meta = json.loads((golden_dir / f"{name}.json").read_text())
    kernel = kernel_from_signature(meta["signature"])
    parts = read_npz(golden_dir / f"{name}.npz")
    scalars, arrays, ref = parts.get("s", {}), parts.get("a", {}), parts.get("r", {})
    outputs = tuple(p.name for p in kernel.params if p.intent.writes) + (("result",) if kernel.result else ())
    case = Case(kernel.name, scalars, arrays, int(meta["seed"]), outputs, meta.get("sizes") or {},
                meta.get("values") or {})
    return kernel, meta, case, ref


def cases(golden_dir: Path) -> list[str]:
    return sorted((p.stem for p in Path(golden_dir).glob("case*.json")), key=lambda s: int(s[4:]))


def validate_against_golden(target: str, files_dir: Path, golden_dir: Path, workdir: Path | None = None,
                            cache_dir: Path | None = None, timeout: float = 60,
                            gpu: bool | None = None) -> list[Comparison]:
    """Run ``target``'s candidate on every golden case of one region (all cases
    in one worker process) and compare with the recorded reference outputs. A
    case that could not run comes back as a failed Comparison whose reason says
    why ("not run: ...")."""
    results: list[Comparison] = []
    loaded = [load_case(Path(golden_dir), name) for name in cases(Path(golden_dir))]
    if not loaded:
        return results
    names = cases(Path(golden_dir))
    kernel = loaded[0][0]
    with tempfile.TemporaryDirectory(prefix="kt-golden-") as tmp:
        runs = run_candidate_cases(target, Path(files_dir), kernel, [c for _, _, c, _ in loaded], Path(workdir or tmp),
                                   cache_dir=cache_dir, timeout=timeout, gpu=gpu,
                                   sigs=[meta["signature"] for _, meta, _, _ in loaded])
    for name, (kernel, meta, case, ref), run in zip(names, loaded, runs, strict=True):
        if not run.ok or run.status != "ran":
            label = "compiled, not run" if run.status == "compiled" else f"not run ({run.status})"
            # a run out of time is inconclusive: it says nothing about correctness (still not ok)
            results.append(Comparison(False, float("nan"), float("nan"), float("nan"), 0,
                                      f"{name}: {label}: {run.reason}", inconclusive=bool(run.timed_out)))
            continue
        tol, close = meta.get("tolerance"), meta.get("allclose")
        cmp = compare(kernel, ref, run.outputs, bool(meta["signature"]["reduces"]), case.env,
                      tuple(tol) if tol else None, tuple(close) if close else None)
        if not cmp.ok:
            cmp = Comparison(**{**cmp.__dict__, "reason": f"{name}: {cmp.reason}"})
        results.append(cmp)
    return results


def prebuild(out_dir: Path, targets: list[str], regions: list[Path], cache_dir: Path | None = None) -> None:
    """Compile every compiled-target candidate of the regions concurrently (the
    cache then serves the runs)."""
    jobs = []
    for region in regions:
        names = cases(region)
        if not names:
            continue
        kernel = load_case(region, names[0])[0]
        jobs += [(t, out_dir / t, kernel) for t in targets if t in TARGETS and TARGETS[t].compiled]
    with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        list(pool.map(lambda j: build_candidate(j[0], j[1], j[2], cache_dir), jobs))


def changed_since(old: Path, new: Path, targets: list[str], region: str) -> bool:
    """Whether some target's file of ``region`` in output folder ``new`` is new or differs
    from the one in ``old`` (so the golden check can skip what already passed)."""
    for target in targets:
        now = candidate_file(target, new / target, region)
        if now is None:
            continue
        before = candidate_file(target, old / target, region)
        if before is None or before.read_bytes() != now.read_bytes():
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validation.golden",
                                 description="Validate translated targets against recorded golden data.")
    ap.add_argument("out_dir", type=Path, help="the output folder holding golden/ and one folder per target")
    ap.add_argument("--targets", default="kokkos,cuda,triton", help="comma-separated targets")
    ap.add_argument("--regions", default="", help="comma-separated regions (default: all)")
    ap.add_argument("--timeout", type=float, default=120, help="CPU seconds per case of a run")
    ap.add_argument("--since", type=Path, help="only regions whose target files differ from this older output "
                                               "folder's (or are new)")
    ap.add_argument("--list", action="store_true", help="print the selected regions, comma-separated, and stop")
    args = ap.parse_args(argv)
    args.out_dir = args.out_dir.resolve()
    root = args.out_dir / "golden"
    if not root.is_dir():
        print(f"no golden data under {root}", file=sys.stderr)
        return 2
    wanted = {r for r in args.regions.split(",") if r}
    regions = sorted(p for p in root.iterdir()
                     if p.is_dir() and not p.name.startswith(".") and (not wanted or p.name in wanted))
    if not regions:
        print(f"no golden data under {root}" + (f" for regions {args.regions}" if wanted else ""), file=sys.stderr)
        return 2
    targets = [t for t in args.targets.split(",") if t]
    if args.since is not None:
        regions = [r for r in regions if changed_since(args.since, args.out_dir, targets, r.name)]
    if args.list:
        print(",".join(r.name for r in regions))
        return 0

    if not sandbox.probe().available:
        print(f"warning: no sandbox here ({sandbox.probe().detail}): the candidates run unsandboxed; check only "
              "code you trust", file=sys.stderr)
    damaged = {r: verify(r) for r in regions}
    prebuild(args.out_dir, targets, [r for r in regions if not damaged[r]])
    print(f"{'region':<20} {'target':<8} {'cases':<6} {'status':<12} max rel err / reason", flush=True)
    bad = 0
    for region in regions:
        problems = damaged[region]
        if problems:
            bad += 1
            print(f"{region.name:<20} {'-':<8} {'-':<6} {'FAILED':<12} golden data: {'; '.join(problems)}", flush=True)
            continue
        for target in targets:
            try:
                res = validate_against_golden(target, args.out_dir / target, region, timeout=args.timeout)
            except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
                bad += 1
                print(f"{region.name:<20} {target:<8} {'-':<6} {'FAILED':<12} golden data of {region} unreadable: "
                      f"{type(exc).__name__}: {exc}", flush=True)
                continue
            failed = [r for r in res if not r.ok]
            skipped = [r for r in failed if "not run (unsupported)" in r.reason]
            compiled = [r for r in failed if ": compiled, not run:" in r.reason]
            if res and len(skipped) == len(res):
                status, detail = "skipped", skipped[0].reason
            elif res and len(compiled) == len(res):
                status, detail = "compiled", compiled[0].reason
            elif failed:
                bad += 1
                status, detail = ("inconclusive" if all(r.inconclusive for r in failed) else "FAILED"), failed[0].reason
            else:
                status, detail = "validated", ""
            err = max((r.max_rel_err for r in res if r.ok), default=float("nan"))
            rest = (f"{err:.2e}" if err == err else "-") + (f"  {detail}" if detail else "")
            # one line per region and target as it finishes, so a long run shows progress
            print(f"{region.name:<20} {target:<8} {f'{len(res) - len(failed)}/{len(res)}':<6} {status:<12} {rest}",
                  flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
