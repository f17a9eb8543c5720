"""Loading a PyTorch model file in a worker process: the caller's side
(``graph.pytorch_load``) runs ``python -m parsers.torch_load job.json`` in the sandbox, since
loading a model file runs the user's Python. It loads and lowers one file (``parsers.torch``)
and writes ``{"kernel": <IR as JSON>, "init_inputs": [repr, ...], "size_args": [...],
"model_name": ..., "input_shapes": ...}`` or ``{"error": ...}`` to the job's ``out``.

Also the size rules of the different-size trial (:data:`SIZE_RULES`), which both this loader
(:func:`size_init_args`) and ``validation.torch_reference`` apply.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from parsers.base import ParseError
from parsers.torch import kernel_name, load_program, lower_program
from translate import ir, ir_json

SIZE_RULES: tuple[tuple[str, str], ...] = (("+3", "each size + 3"), ("x2", "each size x 2"),
                                           ("+1", "each size + 1"))


def _bump(rule: str, v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_bump(rule, e) for e in v]
    return 2 * int(v) if rule == "x2" else int(v) + int(rule[1:])


def apply_rule(rule: str, sizes: Mapping[str, Any]) -> dict[str, Any]:
    """Every size changed by the rule; a tuple size (a list here) element-wise."""
    return {k: _bump(rule, v) for k, v in sizes.items()}


def _same_kernel(a: ir.Kernel | ir.Opaque, b: ir.Kernel | ir.Opaque) -> bool:
    return (isinstance(a, ir.Kernel) and isinstance(b, ir.Kernel)
            and (a.params, a.locals, a.body, a.result) == (b.params, b.locals, b.body, b.result))


class Lowerings:
    """Programs re-loaded and lowered at other sizes, each once: the held-size search and the
    size-argument check both need the first different-size rule's kernel."""

    def __init__(self) -> None:
        self.done: dict[str, tuple[Any, ir.Kernel | None]] = {}

    def get(self, program: Any, sizes: Mapping[str, Any]) -> tuple[Any, ir.Kernel | None]:
        """(the program at ``sizes``, its kernel), either None where it does not load or lower."""
        key = json.dumps([sorted(sizes.items()), sorted(program.options.items())], default=repr)
        if key not in self.done:
            try:
                again = load_program(program.path, sizes, **program.options)
                kernel = lower_program(again)
                self.done[key] = (again, kernel if isinstance(kernel, ir.Kernel) else None)
            except Exception:
                self.done[key] = (None, None)
        return self.done[key]


HELD_SEARCH_CPU_S = 300.0  # the loader's CPU seconds after which the search stops (the file's limit: 1200)


def held_sizes(program: Any, kernel: ir.Kernel | ir.Opaque, budget_s: float = HELD_SEARCH_CPU_S,
               lowerings: Lowerings | None = None) -> dict[str, Any]:
    """The sizes the kernel is built for and cannot take as a parameter: a layer count (one
    recurrent layer per iteration of the model's own loop), a head count that is no axis of
    any tensor, the trip count of a Python loop in ``forward``. Looked for only when the
    program re-loaded at the different-size trial's sizes (the first rule at which it
    lowers) gives another kernel: then each size is changed alone (by the trial rules in
    turn, until the program lowers; never to another size's value), and those that change
    the kernel are held (pinned at their value in every trial; ``ModelNew``'s constructor
    guard keeps them where they are constructor arguments). The search stops once the
    process has used ``budget_s`` CPU seconds, with what it found (each try is a capture, and
    a deep network's capture takes long); the different-size trial then says what differs."""
    if not isinstance(kernel, ir.Kernel) or not program.sizes or time.process_time() > budget_s:
        return {}

    cache = lowerings or Lowerings()

    def lowered(sizes: Mapping[str, Any]) -> ir.Kernel | None:
        return cache.get(program, sizes)[1]

    other = next((k for k in (lowered(apply_rule(rule, program.sizes)) for rule, _ in SIZE_RULES) if k), None)
    if other is None or _same_kernel(kernel, other):  # the trial's sizes (the first rule that lowers) fit
        return {}
    held: dict[str, Any] = {}
    taken = {v for v in program.sizes.values() if isinstance(v, int)}
    for name, value in program.sizes.items():
        for rule, _ in SIZE_RULES:
            if time.process_time() > budget_s:
                return held
            bumped = _bump(rule, value)
            if bumped in taken:  # two extents equal by chance may share a symbol: another kernel, not a held size
                continue
            one = lowered({**program.sizes, name: bumped})
            if one is not None:
                if not _same_kernel(kernel, one):
                    held[name] = value
                break
    return held


def size_init_args(program: Any, kernel: ir.Kernel | ir.Opaque, lowerings: Lowerings | None = None) -> tuple[int, ...]:
    """Positions of the integer constructor arguments that provably only set sizes, so
    ModelNew may be built with other values of them. An argument qualifies when both hold:

    * changed alone (+1, else x2), the model still builds and differs only in parameter/buffer
      shapes (same keys, and at least one shape changes): it sizes parameters, not a
      hyperparameter such as GroupNorm's num_groups, an axis or an eps;
    * the program re-loaded at the different-size trial's sizes (the first of + 3, x 2,
      + 1 at which it loads and lowers; pinned values stay) has this argument changed and
      lowers to the identical kernel: whatever else it feeds enters the kernel through the
      dimension scalars only (and the validation runs the kernel at those sizes).

    Anything else (no sizes to vary, a failure, a different kernel, the loader past
    ``HELD_SEARCH_CPU_S`` of CPU time) qualifies nothing."""
    import torch  # deferred: the rest of the loader's answer does not need it

    init = list(program.init_inputs)
    ints = [i for i, v in enumerate(init) if isinstance(v, int) and not isinstance(v, bool)]
    if not ints or not isinstance(kernel, ir.Kernel) or not program.sizes or time.process_time() > HELD_SEARCH_CPU_S:
        return ()

    def shapes(args: list[Any]) -> dict[str, tuple[int, ...]] | None:
        try:
            torch.manual_seed(0)
            model = program.model_cls(*args)
            return {k: tuple(v.shape) for k, v in model.state_dict().items()}
        except Exception:
            return None

    base = shapes(init)
    if base is None:
        return ()
    shape_only = []
    for i in ints:
        for v in (init[i] + 1, 2 * init[i]):  # 2x where +1 breaks a divisibility (channels by groups)
            other = shapes([*init[:i], v, *init[i + 1:]])
            if other is not None:
                if set(other) == set(base) and other != base:
                    shape_only.append(i)
                break
    if not shape_only:
        return ()
    cache = lowerings or Lowerings()
    for rule, _ in SIZE_RULES:
        again, kernel2 = cache.get(program, apply_rule(rule, program.sizes))
        if again is None or kernel2 is None:  # does not build or lower at these sizes: the next rule
            continue
        changed = [i for i in shape_only if i < len(again.init_inputs) and again.init_inputs[i] != init[i]]
        return tuple(changed) if changed and _same_kernel(kernel, kernel2) else ()
    return ()


def class_name(program: Any) -> str:
    """The name the translated class has in its file (``module:``, ``Model``, or the class found)."""
    if program.module:
        return str(program.module)
    if program.namespace.get("Model") is program.model_cls:
        return "Model"
    return next((n for n, o in program.namespace.items() if o is program.model_cls), program.model_cls.__name__)


def load_one(job: dict[str, Any]) -> dict[str, Any]:
    path, root = Path(job["path"]), Path(job["root"])
    try:
        program = load_program(path, job["sizes"], root, **job["options"])
    except ParseError as err:
        return {"error": f"{err} (file skipped)"}
    try:
        kernel: ir.Kernel | ir.Opaque = lower_program(program, root=root)
    except Exception as exc:  # a frontend bug makes this region unsupported, with the reason
        kernel = ir.Opaque(kernel_name(path), path.read_text(errors="replace"),
                           f"the PyTorch frontend failed: {type(exc).__name__}: {exc}",
                           ir.Origin(job["rel"], program.forward_line))
    held: dict[str, Any] = {}
    lowerings = Lowerings()
    try:
        held = held_sizes(program, kernel, lowerings=lowerings)
        if held:
            options = dict(job["options"])
            options["values"] = {**options.get("values", {}), **held}
            sizes = {k: v for k, v in job["sizes"].items() if k not in held}
            program = load_program(path, sizes, root, **options)
    except Exception:  # nothing held: the different-size trial then says what differs
        held = {}
    size_args: tuple[int, ...] = ()
    if job["size_args"]:
        try:
            size_args = size_init_args(program, kernel, lowerings)
        except Exception:  # the guard then requires every argument unchanged
            size_args = ()
    shapes = [list(s) for s in program.input_shapes.values()] if program.input_shapes is not None else None
    return {"kernel": ir_json.dumps(kernel), "init_inputs": [repr(v) for v in program.init_inputs],
            "size_args": list(size_args), "model_name": class_name(program), "input_shapes": shapes,
            "held": held}


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text())
    result = load_one(job)
    Path(job["out"]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
