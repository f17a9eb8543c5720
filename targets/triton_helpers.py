"""Helper functions the generated Triton module may contain, emitted only when
used. Device helpers use nothing outside ``tl`` (libdevice does not run in the
Triton interpreter), so the code validated on the CPU is the code that runs on
the GPU. Float literals meet a tensor before any arithmetic (Triton would fold
two literals in fp32)."""

from __future__ import annotations

DEVICE_HELPERS: dict[str, str] = {
    "_kt_affine": '''
@triton.jit
def _kt_affine(a, b, c, d):
    """Combine function of a linear recurrence's scan: x -> a*x + b, then x -> c*x + d."""
    return a * c, b * c + d
''',
    "_kt_ratio": '''
@triton.jit
def _kt_ratio(a, b, c, d, e, f, g, h):
    """Combine function of a ratio recurrence's scan: x -> (a*x + b) / (c*x + d), then
    x -> (e*x + f) / (g*x + h), as the 2x2 matrix product [[e, f], [g, h]] @ [[a, b], [c, d]],
    scaled by its largest magnitude (a ratio's value does not change with the scale)."""
    p, q, r, s = e * a + f * c, e * b + f * d, g * a + h * c, g * b + h * d
    m = tl.maximum(tl.maximum(tl.abs(p), tl.abs(q)), tl.maximum(tl.abs(r), tl.abs(s)))
    m = tl.where(m > 0, m, 1.0)
    return p / m, q / m, r / m, s / m
''',
    "_kt_mul": '''
@triton.jit
def _kt_mul(a, b):
    """Combine function of product reductions (tl.reduce)."""
    return a * b
''',
    "_kt_trip": '''
@triton.jit
def _kt_trip(lo, hi, step):
    """Iterations of the half-open loop [lo, hi) with a runtime step."""
    return tl.where(step > 0, (hi - lo + step - 1) // step, (lo - hi - step - 1) // (-step))
''',
    "_kt_tan": '''
@triton.jit
def _kt_tan(x):
    return tl.sin(x) / tl.cos(x)
''',
    "_kt_sinh": '''
@triton.jit
def _kt_sinh(x):
    """Hyperbolic sine; a Taylor series near 0 where exp(x) - exp(-x) cancels."""
    ax = tl.abs(x)
    e = tl.exp(ax)
    x2 = ax * ax
    series = ax * (1.0 + x2 * (0.16666666666666666 + x2 * (0.008333333333333333
                   + x2 * (0.0001984126984126984 + x2 * 2.7557319223985893e-06))))
    r = tl.where(ax < 0.1, series, 0.5 * (e - 1.0 / e))
    return tl.where(x < 0, -r, r)
''',
    "_kt_cosh": '''
@triton.jit
def _kt_cosh(x):
    e = tl.exp(tl.abs(x))
    return 0.5 * (e + 1.0 / e)
''',
    "_kt_tanh": '''
@triton.jit
def _kt_tanh(x):
    ax = tl.abs(x)
    e = tl.exp(-2.0 * ax)
    r = tl.where(ax < 0.1, _kt_sinh(ax) / _kt_cosh(ax), (1.0 - e) / (1.0 + e))
    return tl.where(x < 0, -r, r)
''',
    "_kt_log1p": '''
@triton.jit
def _kt_log1p(x):
    """log(1 + x), accurate for small x: log(u) * x / (u - 1) with u = 1 + x rounded."""
    u = 1.0 + x
    d = u - 1.0
    return tl.where(d == 0.0, x, tl.log(u) * (x / tl.where(d == 0.0, 1.0, d)))
''',
    "_kt_expm1": '''
@triton.jit
def _kt_expm1(x):
    """exp(x) - 1, accurate for small x: (u - 1) * x / log(u) with u = exp(x) rounded."""
    u = tl.exp(x)
    lu = tl.log(u)
    r = (u - 1.0) * (x / tl.where(lu == 0.0, 1.0, lu))
    return tl.where(u == 1.0, x, tl.where(u - 1.0 == -1.0, -1.0, r))
''',
    "_kt_atan": '''
@triton.jit
def _kt_atan(x):
    """Arc tangent: Cephes' argument reduction and rational approximation."""
    ax = tl.abs(x)
    big = ax > 2.414213562373095
    mid = ax > 0.66
    z = tl.where(big, -1.0 / ax, tl.where(mid, (ax - 1.0) / (ax + 1.0), ax))
    quarters = tl.cast(tl.where(big, 2.0, tl.where(mid, 1.0, 0.0)), x.dtype)  # multiples of pi/4
    zz = z * z
    p = (((-8.750608600031904e-01 * zz - 1.6157537187333652e+01) * zz - 7.500855792314705e+01) * zz
         - 1.2288666844901361e+02) * zz - 6.485021904942025e+01
    q = ((((zz + 2.4858464901423062e+01) * zz + 1.6502700983169885e+02) * zz + 4.3288106049129027e+02) * zz
         + 4.853903996359137e+02) * zz + 1.945506571482614e+02
    r = quarters * 0.7853981633974483 + (z + z * zz * p / q + quarters * 3.061616997868383e-17)
    return tl.where(x < 0, -r, r)
''',
    "_kt_atan2": '''
@triton.jit
def _kt_atan2(y, x):
    a = _kt_atan(y / x)  # x == 0: y / x is +-inf and atan gives +-pi/2
    r = tl.where(x >= 0, a, tl.where(y >= 0, a + 3.141592653589793, a - 3.141592653589793))
    return tl.where((x == 0) & (y == 0), y * 0.0, r)
''',
    "_kt_asin": '''
@triton.jit
def _kt_asin(x):
    return _kt_atan2(x, tl.sqrt((1.0 - x) * (1.0 + x)))
''',
    "_kt_acos": '''
@triton.jit
def _kt_acos(x):
    return _kt_atan2(tl.sqrt((1.0 - x) * (1.0 + x)), x)
''',
    "_kt_pow": '''
@triton.jit
def _kt_pow(x, y):
    """x ** y for a real exponent: exp(y log|x|); a negative base needs an integral y."""
    r = tl.exp(y * tl.log(tl.abs(x)))
    flipped = tl.where(tl.floor(y * 0.5) * 2.0 != y, -r, r)  # an odd integral y keeps the base's sign
    r = tl.where(x < 0, tl.where(tl.floor(y) == y, flipped, float("nan")), r)
    return tl.where(y == 0, 1.0, r)
''',
}


def _pair_join(name: str, better: str, earlier: str) -> str:
    return f'''
@triton.jit
def {name}(v, at, w, w_at):
    """Combine function of a pair reduction (tl.reduce over values and iterations): the {better}
    value, of equal ones the {earlier} iteration's, with that iteration's own value (of 0.0 and -0.0,
    the one it reached)."""
    take = (v {'>' if better == 'larger' else '<'} w) | ((v == w) & (at {'<' if earlier == 'first' else '>'} w_at))
    return tl.where(take, v, w), tl.where(take, at, w_at)
'''


DEVICE_HELPERS |= {
    name: _pair_join(name, better, earlier)
    for name, better, earlier in (("_kt_first_max", "larger", "first"), ("_kt_last_max", "larger", "last"),
                                  ("_kt_first_min", "smaller", "first"), ("_kt_last_min", "smaller", "last"))
}


def pair_join(op: str, loc_first: str) -> str:
    """The combine function of a pair reduction ``op`` (maxloc, minloc) whose ties go to the
    ``loc_first`` (min: first, max: last) iteration."""
    return f"_kt_{'first' if loc_first == 'min' else 'last'}_{'max' if op == 'maxloc' else 'min'}"


DEVICE_DEPENDS = {
    "_kt_tanh": ("_kt_sinh", "_kt_cosh"),
    "_kt_atan2": ("_kt_atan",),
    "_kt_asin": ("_kt_atan2", "_kt_atan"),
    "_kt_acos": ("_kt_atan2", "_kt_atan"),
}

HOST_HELPERS: dict[str, str] = {
    "_c_div": '''
def _c_div(a: int, b: int) -> int:
    """Integer division truncating toward zero (Fortran and C), not Python's floor."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q
''',
    "_c_mod": '''
def _c_mod(a: int, b: int) -> int:
    """Remainder with the sign of the dividend (Fortran MOD, C %)."""
    return a - _c_div(a, b) * b
''',
    "_sign": '''
def _sign(a: float, b: float) -> float:
    """Fortran SIGN(a, b): |a| with the sign of b."""
    return abs(a) if b >= 0 else -abs(a)
''',
    "_nint": '''
def _nint(x: float) -> int:
    """Fortran NINT: round half away from zero."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)
''',
    "_trip": '''
def _trip(start: int, stop: int, step: int) -> int:
    """Iterations of the half-open loop [start, stop) with the given step."""
    if step > 0:
        return max(0, (stop - start + step - 1) // step)
    return max(0, (start - stop - step - 1) // -step)
''',
    "_error": '''
def _error(routine: str, *args: object) -> None:
    """The source's error call (XERBLA style), reported on stderr."""
    if routine.lower() == "xerbla" and len(args) == 2:
        name = str(args[0]).strip().upper()
        print(f" ** On entry to {name} parameter number {args[1]} had an illegal value", file=sys.stderr)
    else:
        print(f" ** {routine}({', '.join(str(a) for a in args)})", file=sys.stderr)
''',
}

HOST_DEPENDS = {"_c_mod": ("_c_div",)}


def closure(names: set[str], depends: dict[str, tuple[str, ...]]) -> list[str]:
    """``names`` and what they call, callees first."""
    out: list[str] = []

    def add(n: str) -> None:
        for d in depends.get(n, ()):
            add(d)
        if n not in out:
            out.append(n)

    for n in sorted(names):
        add(n)
    return out
