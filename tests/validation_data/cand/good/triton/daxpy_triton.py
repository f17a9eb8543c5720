"""Hand-written stand-in for generated Triton output: daxpy with strides.

DA travels as a 1-element tensor: Triton types a Python float argument as
fp32, which loses DA's low bits on a GPU (the interpreter hides this; on an
H200 a plain-float DA gave a relative L2 error of 1.8e-8 against the f64
reference)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _daxpy_k0(n, da_ptr, dx, ix0, incx, dy, iy0, incy, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    da = tl.load(da_ptr)
    x = tl.load(dx + ix0 + i * incx, mask=mask)
    y = tl.load(dy + iy0 + i * incy, mask=mask)
    tl.store(dy + iy0 + i * incy, y + da * x, mask=mask)


def daxpy(n, da, dx, incx, dy, incy):
    if n <= 0 or da == 0.0:
        return {}
    ix0 = (-n + 1) * incx if incx < 0 else 0
    iy0 = (-n + 1) * incy if incy < 0 else 0
    da_t = torch.full((1,), da, dtype=dy.dtype, device=dy.device)
    block = 128
    _daxpy_k0[(triton.cdiv(n, block),)](n, da_t, dx, ix0, incx, dy, iy0, incy, BLOCK=block)
    return {}
