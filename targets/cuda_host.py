"""Serial code of a CUDA translation: one device thread, or on the host (``DeviceSerial.on_host``:
loops one device thread would take long over), where the launcher copies the segment's arrays to
host memory once the stream's work is done, calls the segment's host function on the copies, and
copies the arrays it writes back."""

from __future__ import annotations

from typing import TYPE_CHECKING

from targets.base import CodeBuffer
from targets.cstyle import cname
from translate.ir import DType
from translate.irquery import arrays_written, many, scalar_writes
from translate.partition import DeviceSerial

if TYPE_CHECKING:
    from targets.cuda import CudaRenderer

HOST_COPY = """// a device array's copy in host memory, for serial code that runs on the host (freed on return)
template <typename T>
struct kt_host_copy {
    T* ptr = nullptr;
    size_t count = 0;
    explicit kt_host_copy(size_t n) : ptr(static_cast<T*>(std::malloc((n > 0 ? n : 1) * sizeof(T)))), count(n) {}
    ~kt_host_copy() { std::free(ptr); }
    kt_host_copy(const kt_host_copy&) = delete;
    kt_host_copy& operator=(const kt_host_copy&) = delete;
};"""


def launch_on_host(r: CudaRenderer, buf: CodeBuffer, seg: DeviceSerial) -> None:
    """A serial segment run on the host: its arrays copied there once the stream's work is
    done, the ones it writes copied back."""
    written = many(seg.stmts, arrays_written)
    with buf.block("", opener="{"):
        buf.line(f"// {seg.name} ({r.where(seg.line)}): on the host")
        buf.line("KT_CUDA_CHECK(cudaStreamSynchronize(stream));")
        for a in seg.arrays:
            n, t = cname(a), r.ctype(r.array(a).dtype)
            buf.line(f"kt_host_copy<{t}> {n}_host({r.count(r.array(a).shape)});")
            buf.line(f"if ({n}_host.ptr == nullptr) return cudaErrorMemoryAllocation;")
            buf.line(f"KT_CUDA_CHECK(cudaMemcpy({n}_host.ptr, {n}, {n}_host.count * sizeof({t}),"
                     " cudaMemcpyDeviceToHost));")
        args = [r.var(s) for s in seg.scalars_in] + [f"&{r.var(s)}" for s in seg.scalars_out]
        args += [f"{cname(a)}_host.ptr" for a in seg.arrays]
        buf.line(f"{seg.name}({', '.join(args)});")
        for a in seg.arrays:
            if a in written:
                n, t = cname(a), r.ctype(r.array(a).dtype)
                buf.line(f"KT_CUDA_CHECK(cudaMemcpy({n}, {n}_host.ptr, {n}_host.count * sizeof({t}),"
                         " cudaMemcpyHostToDevice));")


def serial_function(r: CudaRenderer, buf: CodeBuffer, seg: DeviceSerial) -> None:
    """A serial segment as a ``<<<1, 1>>>`` kernel, or where it runs on the host, a host function
    of the same parameters and body."""
    writes = set().union(*(scalar_writes(s) for s in seg.stmts)) if seg.stmts else set()
    renamed = [s for s in seg.scalars_in if s in writes]
    params = [f"const {r.ctype(r.dtype_of(s))} {r.var(s)}{'_in' if s in renamed else ''}"
              for s in seg.scalars_in]
    params += [f"{r.ctype(r.dtype_of(s, DType.F64))}* __restrict__ {r.var(s)}_io" for s in seg.scalars_out]
    params += [r.ptr(a, seg.stmts) for a in seg.arrays]
    if seg.on_host:
        buf.line(f"// {seg.name}: serial code at {r.where(seg.line)}, run on the host (loops one device"
                 " thread would take long over)")
    else:
        buf.line(f"// {seg.name}: serial device code at {r.where(seg.line)} (launched <<<1, 1>>>)")
    qualifier = "static void" if seg.on_host else "__global__ void"
    with buf.block(r.signature(f"{qualifier} {seg.name}", params)):
        buf.lines(r.extents(seg.arrays))
        for s in renamed:
            buf.line(f"{r.ctype(r.dtype_of(s))} {r.var(s)} = {r.var(s)}_in;")
        for s in seg.scalars_out:
            buf.line(f"{r.ctype(r.dtype_of(s, DType.F64))} {r.var(s)} = *{r.var(s)}_io;")
        local = sorted(w for w in writes if w not in seg.scalars_in and w not in seg.scalars_out)
        r.body_with_privates(buf, seg.stmts, local)
        for s in seg.scalars_out:
            buf.line(f"*{r.var(s)}_io = {r.var(s)};")
