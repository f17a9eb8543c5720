"""A linear recurrence (``translate.scan``) as one ``cub::DeviceScan::InclusiveScan`` (CUDA).

``X(f(i)) = A(i) * X(f(i - step)) + B(i)`` is an inclusive scan of the iterations' terms (a prefix
sum where ``A`` is 1) or of their affine maps ``x -> A(i)*x + B(i)``, composed by ``KtAffineThen``;
a ratio recurrence of its maps ``x -> (a*x + b) / (c*x + d)`` as 2x2 matrices,
multiplied and scaled by ``KtRatioThen``.
A functor named after the segment, ``NAME_terms`` or ``NAME_maps``, gives the k-th iteration's
term or map from the arrays; the first one takes in the element before the first iteration (the
term is added to it; the map becomes the constant map to its image), so the scan's k-th value is
the k-th stored element. The scan reads the coefficients once and writes the array once (CUB's
single pass with decoupled look-back); only the order of the operations differs from the loop's.
The elements are stored through a pointer (step 1) or a reverse iterator (step -1); a scan of maps
stores through ``KtAffineValue`` or ``KtRatioValue``, the constant map's value."""

from __future__ import annotations

from typing import TYPE_CHECKING

from targets.base import CodeBuffer
from targets.cstyle import cname
from translate import ir, scan
from translate.partition import DeviceSerial, scan_segment
from translate.simplify import const_int

if TYPE_CHECKING:
    from targets.cuda import CudaRenderer

INCLUDES = ["#include <cub/device/device_scan.cuh>  // the recurrences' parallel scans",
            "#include <cuda/std/functional>",
            "#include <thrust/iterator/counting_iterator.h>", "#include <thrust/iterator/reverse_iterator.h>",
            "#include <thrust/iterator/transform_iterator.h>",
            "#include <thrust/iterator/transform_output_iterator.h>"]

AFFINE = """\
// an affine map x -> a * x + b (a linear recurrence's iteration, translate.scan)
template <typename T>
struct KtAffine {
    T a, b;
};

// g after f: x -> g.a * (f.a * x + f.b) + g.b (the scan's operator: associative)
template <typename T>
struct KtAffineThen {
    __host__ __device__ KtAffine<T> operator()(const KtAffine<T>& f, const KtAffine<T>& g) const {
        return KtAffine<T>{g.a * f.a, g.a * f.b + g.b};
    }
};

// a scanned map's constant: the element it stores (the first map is a constant map)
template <typename T>
struct KtAffineValue {
    __host__ __device__ T operator()(const KtAffine<T>& m) const { return m.b; }
};"""

RATIO = """\
// a ratio of affine maps x -> (a * x + b) / (c * x + d), the matrix [[a, b], [c, d]] (translate.scan)
template <typename T>
struct KtRatio {
    T a, b, c, d;
};

// g after f: the product [[g.a, g.b], [g.c, g.d]] * [[f.a, f.b], [f.c, f.d]], scaled by its largest
// magnitude (the ratio does not change with the scale; the products would overflow)
template <typename T>
struct KtRatioThen {
    __host__ __device__ KtRatio<T> operator()(const KtRatio<T>& f, const KtRatio<T>& g) const {
        const T a = g.a * f.a + g.b * f.c, b = g.a * f.b + g.b * f.d;
        const T c = g.c * f.a + g.d * f.c, d = g.c * f.b + g.d * f.d;
        T m = fmax(fmax(fabs(a), fabs(b)), fmax(fabs(c), fabs(d)));
        m = m > T(0) ? m : T(1);
        return KtRatio<T>{a / m, b / m, c / m, d / m};
    }
};

// a scanned map's value: the element it stores (the first map is a constant map, b / d)
template <typename T>
struct KtRatioValue {
    __host__ __device__ T operator()(const KtRatio<T>& m) const { return m.b / m.d; }
};"""


def runs_as_scan(r: CudaRenderer, seg: DeviceSerial) -> ir.Loop | None:
    """The recurrence ``seg`` runs as a CUB scan, or None where it runs in order: not a marked
    loop, or a half-precision array (the map operators use ``fmax``, ``fabs`` and plain arithmetic)."""
    loop = scan_segment(seg)
    if loop is None or r.array(scan.of(loop).store.array).dtype in (ir.DType.F16, ir.DType.BF16):
        return None
    return loop


def helper_text(loops: list[ir.Loop]) -> str:
    """The map types and operators the scans of ``loops`` use."""
    kinds = {scan.kind(lp) for lp in loops}
    return "\n\n".join(text for k, text in (("affine", AFFINE), ("ratio", RATIO)) if k in kinds)


def _names(r: CudaRenderer, seg: DeviceSerial) -> list[str]:
    return [r.var(s) for s in seg.scalars_in] + [cname(a) for a in seg.arrays]


def _functor(seg: DeviceSerial, kind: str) -> str:
    """The struct giving the iterations' terms (a sum) or maps."""
    return f"{seg.name}_terms" if kind == "sum" else f"{seg.name}_maps"


_TYPE = {"sum": "{t}", "affine": "KtAffine<{t}>", "ratio": "KtRatio<{t}>"}


def scan_functor(r: CudaRenderer, buf: CodeBuffer, seg: DeviceSerial, loop: ir.Loop) -> None:
    """The struct giving the k-th iteration's term (a prefix sum) or map (affine, ratio)."""
    rec = scan.of(loop)
    store, kind, coefficients = rec.store, rec.kind, rec.coefficients
    t = r.ctype(r.array(store.array).dtype)
    name, what = _functor(seg, kind), ("term" if kind == "sum" else f"{kind} map")
    value = _TYPE[kind].format(t=t)
    buf.line(f"// {name}: the k-th iteration's {what} of the recurrence at {r.where(loop.line)};")
    buf.line("// the first takes in the element before it, so the inclusive scan yields the stored elements")
    with buf.block(f"struct {name}", closer="};"):
        for s in seg.scalars_in:
            buf.line(f"{r.ctype(r.dtype_of(s))} {r.var(s)};")
        for a in seg.arrays:
            buf.line(f"const {r.ctype(r.array(a).dtype)}* {cname(a)};")
        with buf.block(f"__host__ __device__ {value} operator()(const long long kt_k) const"):
            buf.lines(r.extents(seg.arrays))
            sign = "+" if const_int(loop.step) == 1 else "-"
            buf.line(f"const int {r.var(loop.var)} = {r.expr(loop.start)} {sign} (int)kt_k;")
            before, zero = r.expr(scan.first_read(loop)), r.literal(0, store.dtype)
            names = ["kt_b"] if kind == "sum" else ["kt_a", "kt_b", "kt_c", "kt_d"][:len(coefficients)]
            for n, e in zip(names, coefficients, strict=True):  # a missing coefficient is 0
                buf.line(f"const {t} {n} = {zero if e is None else r.expr(e)};")
            if kind == "sum":
                buf.line(f"return kt_k == 0 ? {before} + kt_b : kt_b;")
            elif kind == "affine":
                buf.line(f"return kt_k == 0 ? {value}{{{zero}, kt_a * {before} + kt_b}} : {value}{{kt_a, kt_b}};")
            else:
                one = r.literal(1, store.dtype)
                first = f"(kt_a * {before} + kt_b) / (kt_c * {before} + kt_d)"
                buf.line(f"return kt_k == 0 ? {value}{{{zero}, {first}, {zero}, {one}}} "
                         f": {value}{{kt_a, kt_b, kt_c, kt_d}};")


def launch_scan(r: CudaRenderer, buf: CodeBuffer, seg: DeviceSerial, loop: ir.Loop) -> None:
    """The launcher's block: the scan's temporary storage, the scan, and its release (stream-ordered)."""
    rec = scan.of(loop)
    store, kind = rec.store, rec.kind
    t = r.ctype(r.array(store.array).dtype)
    first = scan.at_start(store, loop)
    trip = f"{r.var(loop.var)}_trip"
    with buf.block("", opener="{"):
        what = "prefix sum" if kind == "sum" else f"scan of its {kind} maps"
        buf.line(f"// {seg.name} ({r.where(seg.line)}): the recurrence as a parallel {what} (cub::DeviceScan)")
        buf.line(f"const int {trip} = {r.trip(loop)};")
        with buf.block(f"if ({trip} > 0)"):
            functor = _functor(seg, kind)
            buf.line(f"const auto kt_in = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), "
                     f"{functor}{{{', '.join(_names(r, seg))}}});")
            target = f"&{r.expr(first)}"
            if const_int(loop.step) != 1:  # counting down: the k-th element k places before the first
                target = f"thrust::make_reverse_iterator({target} + 1)"
            if kind != "sum":
                stored = "KtAffineValue" if kind == "affine" else "KtRatioValue"
                target = f"thrust::make_transform_output_iterator({target}, {stored}<{t}>{{}})"
            buf.line(f"const auto kt_out = {target};")
            op = {"sum": f"cuda::std::plus<{t}>{{}}", "affine": f"KtAffineThen<{t}>{{}}",
                  "ratio": f"KtRatioThen<{t}>{{}}"}[kind]
            call = f"cub::DeviceScan::InclusiveScan(TEMP, kt_bytes, kt_in, kt_out, {op}, {trip}, stream)"
            buf.line("size_t kt_bytes = 0;  // the scan's temporary storage")
            buf.line(f"KT_CUDA_CHECK({call.replace('TEMP', 'nullptr')});")
            buf.line("void* kt_temp = nullptr;")
            buf.line("KT_CUDA_CHECK(cudaMallocAsync(&kt_temp, kt_bytes, stream));")
            buf.line(f"KT_CUDA_CHECK({call.replace('TEMP', 'kt_temp')});")
            buf.line("KT_CUDA_CHECK(cudaFreeAsync(kt_temp, stream));")
