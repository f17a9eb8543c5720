"""Runs one call (reference or candidate) in its own process.

``python -m validation.worker job.json``. The job names the mode
(``reference``: an f2py module built by :mod:`validation.runners`;
``ctypes``: a shared library exporting ``kt_NAME``; ``triton``: a launcher
module), the plain-data signature (shapes evaluated), the input ``.npz`` and
the output ``.npz`` to write. With ``timing`` ({"reps", "min_time_s"}) each
case is called repeatedly and the median time is reported (the profile step).
Needs only numpy (and torch/triton for ``triton``): never the frontend or
langgraph.
"""

from __future__ import annotations

import ctypes
import faulthandler
import functools
import importlib
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from validation.npz import read_npz
from validation.timing import time_cpu

_CTYPES = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float, "f64": ctypes.c_double,
           "bool": ctypes.c_int32, "char": ctypes.c_char}


def _load(path: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    parts = read_npz(path)
    return parts.get("s", {}), {k: v for kind, d in parts.items() if kind != "s" for k, v in d.items()}


def _order(p: dict[str, Any]) -> str:
    return "F" if p.get("layout", "left") == "left" else "C"


def _prepare(sig: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    for p in sig["params"]:
        if p["kind"] == "array":
            a = arrays[p["name"]]
            arrays[p["name"]] = np.require(a, dtype=a.dtype, requirements=[_order(p), "W"])


def _scalar_py(value: Any, dtype: str) -> Any:
    if dtype == "char":
        return str(value)
    if dtype in ("i32", "i64"):
        return int(value)
    if dtype == "bool":
        return bool(value)
    return float(value)


def _np_dtype(dtype: str) -> np.dtype:
    return np.dtype({"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64", "bool": "int32",
                     "char": "S1", "f16": "float16", "bf16": "float32"}[dtype])


def reference_module(job: dict[str, Any]) -> Any:
    """The reference's f2py extension, opened with lazy binding: a file the reference build
    left out (it did not compile) leaves calls into it unresolved, and such a call must fail
    only a case that makes it, not the import."""
    if job["lib_dir"] not in sys.path:
        sys.path.insert(0, job["lib_dir"])
    flags = sys.getdlopenflags()
    sys.setdlopenflags(os.RTLD_LAZY | (flags & ~os.RTLD_NOW))
    try:
        return importlib.import_module(job["module"])
    finally:
        sys.setdlopenflags(flags)


# elements after the end of every array the reference is given, filled with a sentinel: a write
# there, or a result that changes with the sentinel, means the declared shapes are smaller than
# what the routine accesses (the reference would read and write other memory). NaN shows an
# overwrite; a finite value also shows an update (NaN + x is NaN again)
GUARD = 64
SENTINELS = ({"f": np.nan, "i": -123456789, "u": 123456789, "b": True, "S": b"?"},
             {"f": 1234.5678, "i": 987654321, "u": 987654321, "b": False, "S": b"!"})


def _guarded(flat: np.ndarray, fill: int) -> np.ndarray:
    buf = np.empty(flat.size + GUARD, dtype=flat.dtype)
    buf[:flat.size] = flat
    buf[flat.size:] = SENTINELS[fill].get(flat.dtype.kind, 0)
    return buf


def _guard_intact(buf: np.ndarray, size: int, fill: int) -> bool:
    tail = buf[size:]
    expect = SENTINELS[fill].get(buf.dtype.kind, 0)
    if buf.dtype.kind == "f" and expect != expect:
        return bool(np.isnan(tail).all())
    return bool((tail == expect).all())


def run_reference(job: dict[str, Any], scalars: dict[str, Any], arrays: dict[str, np.ndarray],
                  fill: int | None = 0) -> dict[str, Any]:
    """One call of the reference, every array followed by a guard zone (``fill``: which
    sentinel; None: no guard, a timed call); a write into a guard zone is an error naming the array."""
    if job.get("abi") == "c":
        return run_c_reference(job, scalars, arrays, fill)
    mod = reference_module(job)
    sig = job["sig"]
    fn = getattr(mod, job["entry"])
    args: list[Any] = []
    boxes: dict[str, np.ndarray] = {}
    guarded: list[tuple[str, np.ndarray, np.ndarray]] = []
    for p in sig["params"]:
        name, dt = p["name"], p["dtype"]
        if p["kind"] == "array":
            flat = arrays[name].reshape(-1, order=_order(p))
            if fill is None:
                args.append(flat)
                continue
            buf = _guarded(flat, fill)
            guarded.append((name, flat, buf))
            args.append(buf[:flat.size])
        elif p["intent"] != "in" and dt != "char":
            boxes[name] = np.array([scalars[name]], dtype=_np_dtype(dt))
            args.append(boxes[name])
        else:
            args.append(_scalar_py(scalars[name], dt))
    if sig["result"]:
        boxes["result"] = np.zeros(1, dtype=_np_dtype(sig["result"]))
        args.append(boxes["result"])
    fn(*args)
    for name, flat, buf in guarded:
        if not _guard_intact(buf, flat.size, fill or 0):
            raise OutOfBounds(f"the reference wrote past the end of {name} (given {flat.size} elements): the "
                              "shapes or sizes given are smaller than what the routine accesses")
        flat[...] = buf[:flat.size]
    return {k: v[0] for k, v in boxes.items()}


def run_c_reference(job: dict[str, Any], scalars: dict[str, Any], arrays: dict[str, np.ndarray],
                    fill: int | None = 0) -> dict[str, Any]:
    """One call of a C reference's ``kt_ref_NAME`` (validation.cref: the shims' C ABI), made as
    :func:`run_ctypes` makes a candidate's, every array followed by a guard zone as in
    :func:`run_reference`."""
    flats: dict[str, np.ndarray] = {}
    buffers: dict[str, np.ndarray] = {}
    for p in job["sig"]["params"]:
        if p["kind"] == "array":
            flat = flats[p["name"]] = arrays[p["name"]].reshape(-1, order=_order(p))
            buffers[p["name"]] = flat if fill is None else _guarded(flat, fill)
    out = run_ctypes(job, scalars, buffers)
    if fill is None:  # a timed call: the arrays themselves were passed
        return out
    for name, flat in flats.items():
        if not _guard_intact(buffers[name], flat.size, fill):
            raise OutOfBounds(f"the reference wrote past the end of {name} (given {flat.size} elements): the "
                              "shapes or sizes given are smaller than what the function accesses")
        flat[...] = buffers[name][:flat.size]
    return out


class OutOfBounds(RuntimeError):
    """The reference accessed memory past an array it was given."""


def reads_past_the_end(job: dict[str, Any], sig: dict[str, Any], case: str) -> str:
    """Why the reference's results depend on memory past its arrays ("" if they do not): the
    call made again on the same inputs with other sentinels in the guard zones."""
    results = []
    for fill in (0, 1):
        scalars, arrays = _load(case)
        _prepare(sig, arrays)
        returned = run_reference({**job, "sig": sig}, scalars, arrays, fill)
        results.append((arrays, returned))
    (a0, r0), (a1, r1) = results
    for p in sig["params"]:
        name = p["name"]
        if p["kind"] == "array" and p["intent"] != "in" and not _same(a0[name], a1[name]):
            return (f"the reference's {name} changes with what lies past the end of its arrays: the shapes or "
                    "sizes given are smaller than what the routine reads")
    for k in r0:
        if not _same(np.asarray(r0[k]), np.asarray(r1[k])):
            return (f"the reference's {k} changes with what lies past the end of its arrays: the shapes or sizes "
                    "given are smaller than what the routine reads")
    return ""


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def scalar_arg(p: dict[str, Any], value: Any, ct: Any) -> tuple[Any, Any, Any]:
    """(argument, argtype, box) of a scalar parameter as ctypes type ``ct``: by value
    when it is intent(in), else by reference to the box (read back after the call)."""
    dt = p["dtype"]
    if dt == "char":
        box = ct(str(value).encode()[:1] or b" ")
    elif dt in ("f32", "f64"):
        box = ct(float(value))
    else:
        box = ct(int(value))
    if p["intent"] == "in":
        return box, ct, box
    return ctypes.byref(box), ctypes.POINTER(ct), box


def run_ctypes(job: dict[str, Any], scalars: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    lib = ctypes.CDLL(job["lib"])
    sig = job["sig"]
    fn = getattr(lib, job["entry"])
    args: list[Any] = []
    argtypes: list[Any] = []
    boxes: dict[str, Any] = {}
    for p in sig["params"]:
        name, dt = p["name"], p["dtype"]
        ct = _CTYPES[dt]
        if p["kind"] == "array":
            args.append(ctypes.c_void_p(arrays[name].ctypes.data))
            argtypes.append(ctypes.c_void_p)
            continue
        arg, argtype, box = scalar_arg(p, scalars[name], ct)
        args.append(arg)
        argtypes.append(argtype)
        if p["intent"] != "in":
            boxes[name] = box
    fn.argtypes = argtypes
    fn.restype = _CTYPES[sig["result"]] if sig["result"] else None
    res = fn(*args)
    out: dict[str, Any] = {k: (b.value.decode() if isinstance(b.value, bytes) else b.value) for k, b in boxes.items()}
    if sig["result"]:
        out["result"] = res
    return out


def triton_call(job: dict[str, Any], scalars: dict[str, Any],
                arrays: dict[str, np.ndarray]) -> tuple[Callable[[], Any], Callable[[Any], dict[str, Any]]]:
    """A Triton launcher made ready to call on ``arrays`` (on its device): (call, finish), where
    ``call()`` runs it (synchronized) and ``finish(its return)`` copies the arrays back and gives
    the returned scalars."""
    if job.get("device", "cpu") == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    import torch  # deferred: after TRITON_INTERPRET is set, which Triton reads when imported

    # library calls a launcher makes (cuDNN convolutions) must run in full fp32 to be judged
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    name = Path(job["lib"]).stem
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, job["lib"])
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
    fn = getattr(mod, job["entry"])
    device = torch.device(job.get("device", "cpu"))
    sig = job["sig"]
    args: list[Any] = []
    tensors: list[tuple[np.ndarray, Any]] = []
    for p in sig["params"]:
        if p["kind"] == "array":
            flat = arrays[p["name"]].reshape(-1, order=_order(p))
            t = torch.from_numpy(flat).to(device)
            tensors.append((flat, t))
            args.append(t)
        else:
            args.append(_scalar_py(scalars[p["name"]], p["dtype"]))

    def call() -> Any:
        ret = fn(*args)
        if device.type == "cuda":
            torch.cuda.synchronize()
        return ret

    def finish(ret: Any) -> dict[str, Any]:
        for flat, t in tensors:
            flat[...] = t.cpu().numpy()
        ret = ret or {}
        if not isinstance(ret, dict):
            raise TypeError(f"launcher {job['entry']} returned {type(ret).__name__}, expected a dict "
                            "(CONVENTIONS.md)")
        return {k: (v.item() if hasattr(v, "item") else v) for k, v in ret.items()}

    return call, finish


def run_triton(job: dict[str, Any], scalars: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    call, finish = triton_call(job, scalars, arrays)
    return finish(call())


def _save(sig: dict[str, Any], scalars: dict[str, Any], arrays: dict[str, np.ndarray], returned: dict[str, Any],
          path: str) -> None:
    out: dict[str, np.ndarray] = {}
    for p in sig["params"]:
        if p["intent"] == "in":
            continue
        name = p["name"]
        if p["kind"] == "array":
            out[name] = arrays[name]
        elif name in returned:
            value = returned[name]
            out[name] = np.asarray(str(value) if p["dtype"] == "char" else value,
                                   dtype=None if p["dtype"] == "char" else _np_dtype(p["dtype"]))
        else:
            raise KeyError(f"the call did not return the {p['intent']} scalar '{name}'")
    if sig["result"]:
        if "result" not in returned:
            raise KeyError("the call did not return the function result")
        out["result"] = np.asarray(returned["result"], dtype=_np_dtype(sig["result"]))
    np.savez(path, **out)


def main(argv: list[str]) -> int:
    """Run every case of the job in order; after each, append a line to the
    progress file (the parent's per-case time limit restarts on it)."""
    faulthandler.enable()
    job = json.loads(Path(argv[0]).read_text())
    runner = {"reference": run_reference, "ctypes": run_ctypes, "triton": run_triton}[job["mode"]]
    timing = job.get("timing")  # {"reps", "min_time_s"}: time the call (median) instead of one run
    if job["mode"] == "reference":  # imported before the first call, so that its time is the call's alone
        if job.get("abi") != "c":
            reference_module(job)
        if job["cases"] and not timing:
            why = reads_past_the_end(job, job["cases"][0]["sig"], job["cases"][0]["case"])
            if why:
                raise OutOfBounds(why)
    for item in job["cases"]:
        sig = item["sig"]
        scalars, arrays = _load(item["case"])
        _prepare(sig, arrays)
        if timing:

            call = functools.partial(runner, {**job, "sig": sig}, scalars, arrays)
            seconds = time_cpu(call, warmup=1, reps=int(timing["reps"]),
                               min_time_s=float(timing["min_time_s"])).median_s
            cpu0 = time.process_time()
            returned = call()
        else:
            t0, cpu0 = time.perf_counter(), time.process_time()
            returned = runner({**job, "sig": sig}, scalars, arrays)
            seconds = time.perf_counter() - t0
        # CPU time of the call (every thread): what a busy machine does not inflate, so the
        # candidates' time limit can be scaled by the reference's (validation.region)
        cpu_seconds = time.process_time() - cpu0
        _save(sig, scalars, arrays, returned, item["out"])
        with open(job["progress"], "a") as f:
            f.write(json.dumps({"out": item["out"], "seconds": seconds, "cpu_seconds": cpu_seconds}) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except OutOfBounds as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(3)
