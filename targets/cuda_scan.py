"""A linear recurrence (``translate.scan``) as one ``cub::DeviceScan::InclusiveScan`` (CUDA).

``X(f(i)) = A(i) * X(f(i - step)) + B(i)`` is an inclusive scan of the iterations' terms (a prefix
sum where ``A`` is 1) or of their affine maps ``x -> A(i)*x + B(i)``, composed by ``KtAffineThen``.
A functor named after the segment, ``NAME_terms`` or ``NAME_maps``, gives the k-th iteration's
term or map from the arrays; the first one takes in the element before the first iteration (the
term is added to it; the map becomes the constant map to its image), so the scan's k-th value is
the k-th stored element. The scan reads the coefficients once and writes the array once (CUB's
single pass with decoupled look-back); only the order of the operations differs from the loop's.
The elements are stored through a pointer (step 1) or a reverse iterator (step -1); an affine
scan's values through ``KtAffineValue``, which keeps the map's constant."""

from __future__ import annotations

from typing import TYPE_CHECKING

from targets.base import CodeBuffer
from targets.cstyle import cname
from translate import ir, scan
from translate.schedule import DeviceSerial
from translate.simplify import const_int, simplify

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


def _names(r: CudaRenderer, seg: DeviceSerial) -> list[str]:
    return [r.var(s) for s in seg.scalars_in] + [cname(a) for a in seg.arrays]


def scan_functor(r: CudaRenderer, buf: CodeBuffer, seg: DeviceSerial, loop: ir.Loop) -> None:
    """The struct giving the k-th iteration's term (a prefix sum) or map (affine)."""
    store, _, mul, add = scan.parts(loop)
    t = r.ctype(r.array(store.array).dtype)
    name, what = (f"{seg.name}_terms", "term") if mul is None else (f"{seg.name}_maps", "affine map")
    value = t if mul is None else f"KtAffine<{t}>"
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
            before = r.expr(scan.first_read(loop))
            term = r.literal(0, store.dtype) if add is None else r.expr(add)
            buf.line(f"const {t} kt_b = {term};")
            if mul is None:
                buf.line(f"return kt_k == 0 ? {before} + kt_b : kt_b;")
                return
            buf.line(f"const {t} kt_a = {r.expr(mul)};")
            buf.line(f"return kt_k == 0 ? {value}{{{r.literal(0, store.dtype)}, kt_a * {before} + kt_b}} "
                     f": {value}{{kt_a, kt_b}};")


def launch_scan(r: CudaRenderer, buf: CodeBuffer, seg: DeviceSerial, loop: ir.Loop) -> None:
    """The launcher's block: the scan's temporary storage, the scan, and its release (stream-ordered)."""
    store, _, mul, _ = scan.parts(loop)
    t = r.ctype(r.array(store.array).dtype)
    first = ir.Load(store.array, tuple(simplify(ir.substitute(i, {loop.var: loop.start})) for i in store.index),
                    store.dtype)
    trip = f"{r.var(loop.var)}_trip"
    with buf.block("", opener="{"):
        kind = "prefix sum" if mul is None else "scan of its affine maps"
        buf.line(f"// {seg.name} ({r.where(seg.line)}): the recurrence as a parallel {kind} (cub::DeviceScan)")
        buf.line(f"const int {trip} = {r.trip(loop)};")
        with buf.block(f"if ({trip} > 0)"):
            functor = f"{seg.name}_terms" if mul is None else f"{seg.name}_maps"
            buf.line(f"const auto kt_in = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), "
                     f"{functor}{{{', '.join(_names(r, seg))}}});")
            target = f"&{r.expr(first)}"
            if const_int(loop.step) != 1:  # counting down: the k-th element k places before the first
                target = f"thrust::make_reverse_iterator({target} + 1)"
            if mul is not None:
                target = f"thrust::make_transform_output_iterator({target}, KtAffineValue<{t}>{{}})"
            buf.line(f"const auto kt_out = {target};")
            op = f"cuda::std::plus<{t}>{{}}" if mul is None else f"KtAffineThen<{t}>{{}}"
            call = f"cub::DeviceScan::InclusiveScan(TEMP, kt_bytes, kt_in, kt_out, {op}, {trip}, stream)"
            buf.line("size_t kt_bytes = 0;  // the scan's temporary storage")
            buf.line(f"KT_CUDA_CHECK({call.replace('TEMP', 'nullptr')});")
            buf.line("void* kt_temp = nullptr;")
            buf.line("KT_CUDA_CHECK(cudaMallocAsync(&kt_temp, kt_bytes, stream));")
            buf.line(f"KT_CUDA_CHECK({call.replace('TEMP', 'kt_temp')});")
            buf.line("KT_CUDA_CHECK(cudaFreeAsync(kt_temp, stream));")
