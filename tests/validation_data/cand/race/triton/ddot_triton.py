"""Wrong on purpose: every block stores its partial sum to the same location
(a race: the last block wins) and nothing combines them."""

import torch
import triton
import triton.language as tl


@triton.jit
def _ddot_k0(n, dx, ix0, incx, dy, iy0, incy, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    x = tl.load(dx + ix0 + i * incx, mask=mask, other=0.0)
    y = tl.load(dy + iy0 + i * incy, mask=mask, other=0.0)
    tl.store(out, tl.sum(x * y, axis=0))


def ddot(n, dx, incx, dy, incy):
    if n <= 0:
        return {"result": 0.0}
    ix0 = (-n + 1) * incx if incx < 0 else 0
    iy0 = (-n + 1) * incy if incy < 0 else 0
    block = 64
    out = torch.zeros(1, dtype=dx.dtype, device=dx.device)
    _ddot_k0[(triton.cdiv(n, block),)](n, dx, ix0, incx, dy, iy0, incy, out, BLOCK=block)
    return {"result": float(out[0])}
