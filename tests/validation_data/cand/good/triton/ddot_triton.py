"""Hand-written stand-in for generated Triton output: ddot, per-block partial
sums combined by the launcher."""

import torch
import triton
import triton.language as tl


@triton.jit
def _ddot_k0(n, dx, ix0, incx, dy, iy0, incy, partial, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    x = tl.load(dx + ix0 + i * incx, mask=mask, other=0.0)
    y = tl.load(dy + iy0 + i * incy, mask=mask, other=0.0)
    tl.store(partial + pid, tl.sum(x * y, axis=0))


def ddot(n, dx, incx, dy, incy):
    if n <= 0:
        return {"result": 0.0}
    ix0 = (-n + 1) * incx if incx < 0 else 0
    iy0 = (-n + 1) * incy if incy < 0 else 0
    block = 64
    grid = triton.cdiv(n, block)
    partial = torch.empty(grid, dtype=dx.dtype, device=dx.device)
    _ddot_k0[(grid,)](n, dx, ix0, incx, dy, iy0, incy, partial, BLOCK=block)
    return {"result": float(partial.sum())}
