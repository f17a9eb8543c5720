"""Runs a PyTorch reference in its own process: ``python -m validation.torch_worker job.json``.

For every case of the job it loads the program at the case's sizes
(``parsers.torch.load_program``), makes the model and the inputs from the case's
seed (``program.make_model(seed)``, ``program.make_inputs(seed)``), runs
``model(*inputs)`` under ``torch.no_grad()`` and writes

* ``case``: the kernel's inputs by binding, as :meth:`validation.inputs.Case.save`
  writes them (``s:<name>`` dim scalars read from the tensors' shapes, ``a:<name>``
  arrays in C order; outputs filled with the NaN poison);
* ``out``: the reference outputs by kernel parameter name;

then appends a line to the progress file (the parent's per-case time limit
restarts on it). A case with several ``attempts`` (the different-size trial)
takes the first set of sizes at which the module loads and runs, and says which.

Needs torch, numpy and the PyTorch frontend's loader: never langgraph or fparser.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

_NP = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64", "bool": "int32",
       "f16": "float16", "bf16": "float32"}
_POISON = {"float32": (np.uint32, 0x7FC0BEEF), "float64": (np.uint64, 0x7FF80000DEADBEEF),
           "float16": (np.uint16, 0x7E5A)}
INT_SENTINEL = -(2**31) + 1


def poisoned(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """An output array filled with the poison of validation.inputs (kept in sync by a test)."""
    npdt = np.dtype(dtype)
    if npdt.name in _POISON:
        utype, bits = _POISON[npdt.name]
        value = np.array([bits], dtype=utype).view(npdt)[0]
    else:
        value = npdt.type(INT_SENTINEL)
    return np.full(shape, value, dtype=npdt)


def _binding_index(binding: str) -> int:
    return int(binding.split(":")[1])


def _as_list(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def _numpy(t: Any, dtype: str) -> np.ndarray:
    import torch  # deferred: torch takes seconds to import; only the paths that use it pay

    if isinstance(t, torch.Tensor):
        a = t.detach().cpu()
        if a.dtype == torch.bfloat16:
            a = a.float()
        return np.ascontiguousarray(a.numpy()).astype(dtype, copy=False)
    return np.asarray(t, dtype=dtype)


def bind(params: Sequence[dict[str, Any]], inputs: Sequence[Any], state: dict[str, Any],
         outputs: Sequence[Any], after: dict[str, Any] | None = None, draws: Sequence[Any] = ()
         ) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(scalars, arrays, reference outputs) of one call, by the kernel parameters'
    bindings (``input:i``, ``param:<key>``, ``output:i``, ``dim:<i>:<axis>``,
    ``dim:param:<key>:<axis>``, ``state:<key>``: the model's tensor after the call,
    ``random:<k>:<fn>``: the k-th tensor the model drew). ``state`` holds the model's
    tensors before the call, ``after`` after it. Raises ValueError naming a binding that
    does not fit the module."""
    scalars: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    refs: dict[str, np.ndarray] = {}
    for p in params:
        name, binding, dtype = p["name"], p.get("binding") or "", _NP.get(p["dtype"], "float32")
        kind, _, rest = binding.partition(":")
        if kind == "dim":
            if rest.startswith("param:"):
                key, _, axis = rest[len("param:"):].rpartition(":")
                if key not in state:
                    raise ValueError(f"'{name}' is bound to {binding}: the module has no parameter or buffer '{key}'")
                scalars[name] = np.dtype(dtype).type(state[key].shape[int(axis)])
            else:
                i, _, axis = rest.partition(":")
                scalars[name] = np.dtype(dtype).type(inputs[int(i)].shape[int(axis)])
        elif kind == "input":
            value = inputs[_binding_index(binding)]
            if p["kind"] == "array":
                arrays[name] = _numpy(value, dtype)
            else:
                scalars[name] = np.dtype(dtype).type(value.item() if hasattr(value, "item") else value)
        elif kind == "param":
            if rest not in state:
                raise ValueError(f"'{name}' is bound to {binding}: the module has no parameter or buffer '{rest}'")
            arrays[name] = _numpy(state[rest], dtype)
        elif kind == "state":
            if after is None or rest not in after:
                raise ValueError(f"'{name}' is bound to {binding}: the module has no tensor '{rest}' after the call")
            refs[name] = _numpy(after[rest], dtype)
            arrays[name] = poisoned(refs[name].shape, dtype)
        elif kind == "random":
            k = _binding_index(binding.rsplit(":", 1)[0])
            if k >= len(draws):
                raise ValueError(f"'{name}' is bound to {binding} but the module drew {len(draws)} random tensor(s)")
            arrays[name] = _numpy(draws[k], dtype)
        elif kind == "output":
            i = _binding_index(binding)
            if i >= len(outputs):
                raise ValueError(f"'{name}' is bound to {binding} but the module returns {len(outputs)} output(s)")
            refs[name] = _numpy(outputs[i], dtype)
            arrays[name] = poisoned(refs[name].shape, dtype)
        else:
            raise ValueError(f"parameter '{name}' has no PyTorch binding ({binding or 'none'})")
    return scalars, arrays, refs


def loader(spec: str) -> Any:
    """``module:function`` that loads a program (default ``parsers.torch:load_program``)."""

    module, _, fn = spec.partition(":")
    return getattr(importlib.import_module(module), fn)


def run_case(source: str, attempts: Sequence[tuple[str, dict[str, Any]]], seed: int,
             params: Sequence[dict[str, Any]], load_spec: str = "parsers.torch:load_program",
             options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any], Any, Any, Any, list[str]]:
    """Load and run the module at the first sizes that work: (label, sizes,
    scalars, arrays, refs, failures of the earlier attempts). ``options`` are the
    loader's other keyword arguments (pinned ``values``, a plain module's ``shapes``,
    ``module``, ``init``), passed only when there are any."""
    import torch  # deferred: torch takes seconds to import; only the paths that use it pay

    # deferred: both import torch; only the reference call needs them
    from parsers.torch_random import DrawRecorder
    from parsers.torch_state import snapshot

    load_program = loader(load_spec)
    failures: list[str] = []
    for k, (label, sizes) in enumerate(attempts):
        try:
            program = load_program(Path(source), sizes, **(options or {}))
            model = program.make_model(seed)
            inputs = program.make_inputs(seed)
            before = snapshot(model)
            with torch.no_grad(), DrawRecorder() as recorder:
                outputs = _as_list(model(*inputs))
            scalars, arrays, refs = bind(params, inputs, before, outputs, snapshot(model), recorder.draws)
            return label, sizes, scalars, arrays, refs, failures
        except Exception as exc:
            if k == len(attempts) - 1:
                raise
            failures.append(f"{label}: {type(exc).__name__}: {exc}")
    raise ValueError("no sizes to try")


def main(argv: list[str]) -> int:
    faulthandler.enable()
    job = json.loads(Path(argv[0]).read_text())
    for item in job["cases"]:
        t0 = time.perf_counter()
        try:
            label, sizes, scalars, arrays, refs, failures = run_case(
                job["source"], [(a[0], a[1]) for a in item["attempts"]], int(item["seed"]), job["params"],
                job.get("loader", "parsers.torch:load_program"), job.get("options") or None)
        except Exception as exc:
            traceback.print_exc()
            print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
        data = {f"s:{k}": np.asarray(v) for k, v in scalars.items()}
        data.update({f"a:{k}": v for k, v in arrays.items()})
        np.savez(item["case"], **data)
        np.savez(item["out"], **refs)
        with open(job["progress"], "a") as f:
            f.write(json.dumps({"label": label, "sizes": sizes, "failures": failures,
                                "seconds": time.perf_counter() - t0}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
