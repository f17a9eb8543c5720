"""Triton elementwise kernels over a whole 2-D tensor, in the forms the generator can print:
the lanes' loop variables rebuilt by division and the offset rebuilt from them (the form before
translate.flat), and the flat form (every access at the lane's flat index), the latter at
several BLOCK sizes and warp counts. Against them: eager PyTorch and a plain device copy (the
copy roof). KernelBench's published size for its activations, 4096 x 393216 fp32, by default.

    python benchmarks/probes/elementwise_tile.py [ROWS COLS]

Prints one line per form: median ms (CUDA events, three rounds in turns), GB/s counting one
read and one write of the tensor, the share of the copy's GB/s. Every form's output is
checked against eager first (max abs difference <= 1e-5 for sigmoid; ELU likewise).
"""

from __future__ import annotations

import statistics
import sys

import torch
import triton
import triton.language as tl
from probe_common import in_turns


@triton.jit
def _expm1(x):
    u = tl.exp(x)
    lu = tl.log(u)
    r = (u - 1.0) * (x / tl.where(lu == 0.0, 1.0, lu))
    return tl.where(u == 1.0, x, tl.where(u - 1.0 == -1.0, -1.0, r))


@triton.jit
def _act(v, ELU: tl.constexpr):
    if ELU:
        return tl.where(v > 0.0, v, _expm1(v))
    return 1.0 / (1.0 + tl.exp(-v))


@triton.jit
def divided(x, out, d1, i1_trip, i2_trip, BLOCK: tl.constexpr, ELU: tl.constexpr):
    """The form before translate.flat: i1, i2 rebuilt from the flat index, the offset from them."""
    d1 = tl.cast(d1, tl.int64)
    kt_first = tl.program_id(0).to(tl.int64) * BLOCK
    offs = kt_first + tl.arange(0, BLOCK)
    mask = offs < i1_trip * i2_trip
    lane0 = (kt_first % i2_trip).to(tl.int32) + tl.arange(0, BLOCK)
    i2 = (lane0 % i2_trip).to(tl.int64)
    i1 = kt_first // i2_trip + lane0 // i2_trip
    v = tl.load(x + i2 + d1 * i1, mask=mask, other=0.0)
    tl.store(out + i2 + d1 * i1, _act(v, ELU), mask=mask)


@triton.jit
def flat(x, out, i1_trip, i2_trip, BLOCK: tl.constexpr, ELU: tl.constexpr):
    """translate.flat's form: every access at the lane's flat index."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < i1_trip * i2_trip
    v = tl.load(x + offs, mask=mask, other=0.0)
    tl.store(out + offs, _act(v, ELU), mask=mask)


def main() -> None:
    rows, cols = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (4096, 393216)
    x = torch.randn(rows, cols, device="cuda")
    out = torch.empty_like(x)
    n = rows * cols
    gbytes = 2 * n * x.element_size() / 1e9
    print(f"{torch.cuda.get_device_name()} | triton {triton.__version__} | {rows} x {cols} fp32, "
          f"{gbytes:.2f} GB a pass")
    calls = {"copy": lambda: out.copy_(x)}
    for act, elu, ref in (("sigmoid", False, torch.sigmoid), ("elu", True, torch.nn.functional.elu)):
        want = ref(x)
        forms = {f"{act} eager": lambda ref=ref: ref(x)}
        forms[f"{act} divided B256 w4"] = lambda elu=elu: divided[(triton.cdiv(n, 256),)](
            x, out, cols, rows, cols, BLOCK=256, ELU=elu)
        for block in (256, 512, 1024, 2048, 4096):
            for warps in (4, 8):
                forms[f"{act} flat B{block} w{warps}"] = lambda block=block, warps=warps, elu=elu: flat[
                    (triton.cdiv(n, block),)](x, out, rows, cols, BLOCK=block, ELU=elu, num_warps=warps)
        for name, fn in forms.items():
            out.fill_(float("nan"))
            got = fn()
            got = out if got is None or not isinstance(got, torch.Tensor) else got
            err = (got - want).abs().max().item()
            if not err <= 1e-5:
                raise SystemExit(f"{name}: max abs difference {err} from eager")
        calls.update(forms)
        del want
    times = in_turns(calls, rounds=3, reps=20)
    copy = statistics.median(times["copy"])
    print(f"{'form':28} {'ms':>8} {'GB/s':>8} {'of copy':>8}   rounds")
    for name, ts in times.items():
        t = statistics.median(ts)
        print(f"{name:28} {t * 1e3:8.3f} {gbytes / t:8.0f} {copy / t:8.0%}   "
              + " / ".join(f"{v * 1e3:.3f}" for v in ts))


if __name__ == "__main__":
    main()
