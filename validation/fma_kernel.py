"""The register FMA-chain kernel that measures a GPU's fp32/fp64 rate
(:mod:`validation.ceilings`). Its own module so that importing the ceilings does not
import Triton (which fixes interpreter or compiled mode at its first import)."""

from __future__ import annotations

import triton
import triton.language as tl

FMA_CHAINS = 4  # independent accumulators per lane


@triton.jit
def fma_chains(x_ptr, bc_ptr, out_ptr, n_iter, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
    """Four independent chains a = a * b + c (tl.fma: one instruction whatever the
    fp-fusion default) per lane, n_iter * UNROLL each; b, c come from memory, so nothing folds."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    bb = tl.load(bc_ptr)
    cc = tl.load(bc_ptr + 1)
    a0 = x
    a1 = x + cc
    a2 = x - cc
    a3 = x * bb
    for _i in range(n_iter):
        for _j in tl.static_range(UNROLL):
            a0 = tl.fma(a0, bb, cc)
            a1 = tl.fma(a1, bb, cc)
            a2 = tl.fma(a2, bb, cc)
            a3 = tl.fma(a3, bb, cc)
    tl.store(out_ptr + offs, (a0 + a1) + (a2 + a3))
