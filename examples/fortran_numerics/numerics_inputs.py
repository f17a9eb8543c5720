"""Input generators for this example's workflows (``inputs: {b: numerics_inputs:dominant_diagonal}``).

A generator is called as ``fn(shape, dtype, rng)`` with a ``numpy.random.Generator`` and
returns an array of that shape.
"""

from __future__ import annotations

import numpy as np


def dominant_diagonal(shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Main diagonal of a tridiagonal system whose off-diagonals are drawn from ``uniform``
    (values in [-1, 1)): entries in [2.5, 3.5) with a random sign, so |b| > |a| + |c| and the
    Thomas algorithm needs no pivoting."""
    magnitude = rng.uniform(2.5, 3.5, shape)
    sign = np.where(rng.uniform(size=shape) < 0.5, -1.0, 1.0)
    return (magnitude * sign).astype(dtype)
