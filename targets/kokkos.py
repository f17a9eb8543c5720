"""Kokkos C++ target: ``kokkos/NAME_kokkos.cpp`` with the kernel API
``NAME_kokkos(...)`` (LayoutLeft/LayoutRight Views in the default memory
space, ``parallel_for`` / ``parallel_reduce`` over ``RangePolicy`` or
``MDRangePolicy``; a team per row for row nests, ``targets.kokkos_rows``) and the C ABI
shim ``kt_NAME``. Written against the API
common to Kokkos 3.4 and 4.x (no ``Kokkos::Experimental`` names)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from targets.base import CodeBuffer, Rendered, register, shim_symbol, with_fortran_interface
from targets.c_extern import conv_unsupported, kokkos_matmul_function
from targets.cstyle import CStyleRenderer, cname
from targets.cstyle_text import PRESENT_DECL
from targets.defaults import KOKKOS
from targets.kokkos_rows import team_function, team_row_nest
from targets.row_scratch import on_chip
from translate import ir, scan
from translate.coverage import overwritten
from translate.forward import forwarded
from translate.ir import DType
from translate.irquery import scalar_reads, scalar_writes
from translate.partition import (
    DeviceExtern,
    DeviceNest,
    DeviceSerial,
    device_segments,
    fastest_first,
    host_scalars,
    scan_segment,
    walk_segments,
)
from translate.schedule import Schedule
from translate.simplify import const_int

_REDUCERS = {"add": "Sum", "mul": "Prod", "max": "Max", "min": "Min"}


RESIDENT = """\
// a View over the data region's buffer of a host array (kt_present), where one is open (writes:
// 0 the call reads it only, 1 it writes it, 2 it sets every element before reading any)
template <class V, class H>
bool kt_resident(V& dev, const H& host, int writes) {
    void* p = kt_present ? kt_present(host.data(), host.span() * sizeof(typename H::value_type), writes)
                         : nullptr;
    if (p == nullptr) return false;
    dev = V(static_cast<typename V::pointer_type>(p), host.layout());
    return true;
}"""


@register
class KokkosRenderer(CStyleRenderer):
    name = "kokkos"
    FUNC_QUAL: ClassVar[str] = "KOKKOS_INLINE_FUNCTION"

    # ------------------------------------------------------------------ types

    def element_type(self, dtype: DType) -> str:
        """An array element's C type: a LOGICAL array holds Fortran's 4-byte integers, not bool."""
        return self.ABI_TYPES[dtype] if dtype is DType.BOOL else self.ctype(dtype)

    def view_type(self, arr: ir.Array, const: bool = False, host: bool = False, random: bool = False) -> str:
        """``random``: a kernel's View, RandomAccess where it is read-only (``const``: on a GPU its
        loads go through the read-only data cache and may be issued ahead of the kernel's stores, as
        the CUDA target's ``const __restrict__`` pointers are)."""
        base = f"{'const ' if const else ''}{self.element_type(arr.dtype)}{'*' * arr.rank}"
        layout = "Kokkos::LayoutLeft" if arr.layout is ir.Layout.LEFT else "Kokkos::LayoutRight"
        if host:
            return f"Kokkos::View<{base}, {layout}, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>"
        if random and const:
            return f"Kokkos::View<{base}, {layout}, Kokkos::MemoryTraits<Kokkos::RandomAccess>>"
        return f"Kokkos::View<{base}, {layout}>"

    def array_ref(self, name: str, index: tuple[ir.Expr, ...]) -> str:
        decl = self.array(name)
        if len(index) != decl.rank:
            raise self.unsupported(name, f"'{name}' has rank {decl.rank}, indexed with {len(index)}")
        return f"{cname(name)}({', '.join(self.expr(i) for i in index)})"

    def host_return(self) -> str:
        return f"return {self.var(self.kernel.name)};" if self.kernel.result is not None else "return;"

    def api_params(self, kernel: ir.Kernel) -> list[str]:
        out = []
        for p in kernel.params:
            if isinstance(p, ir.Array):
                out.append(f"{self.view_type(p, const=not p.intent.writes)} {cname(p.name)}")
            elif p.intent.writes:
                out.append(f"{self.ctype(p.dtype)}& {cname(p.name)}")
            else:
                out.append(f"{self.ctype(p.dtype)} {cname(p.name)}")
        return out

    # ----------------------------------------------------------------- render

    def render(self, kernel: ir.Kernel, schedule: Schedule | None = None) -> Rendered:
        # Views promise the compiler nothing about overlap: the element values of long runs of
        # assignments are carried in scalars by the translation instead (translate.forward)
        kernel = forwarded(kernel)
        scheduled, segs = self.segments(kernel, schedule)
        self.begin(scheduled)
        self.current: tuple[ir.Stmt, ...] = ()
        chip = on_chip(scheduled, segs, lambda n: team_row_nest(self, n))
        self.kernel, segs, self.chip_rows = chip.kernel, chip.segments, chip.rows
        name = kernel.name.lower()
        ns = f"kt_{name}_detail"
        api = f"{name}_kokkos"
        ret = self.ctype(kernel.result) if kernel.result is not None else "void"

        body = CodeBuffer(self.INDENT)
        for seg in device_segments(segs):
            body.blank()
            if isinstance(seg, DeviceNest) and team_row_nest(self, seg):
                team_function(self, body, seg)
            elif isinstance(seg, DeviceNest):
                self.nest_function(body, seg)
            else:
                self.serial_function(body, seg)
        self.extern_args: dict[str, list[str]] = {}
        for seg in walk_segments(segs):
            if isinstance(seg, DeviceExtern):
                if seg.op.op != "matmul":
                    raise conv_unsupported(self, seg)
                body.blank()
                self.extern_args[seg.name] = kokkos_matmul_function(self, body, seg, self.view_type)

        fn = CodeBuffer(self.INDENT)
        fn.line(f"// Kernel API: Views in the default memory space. Source: {kernel.name.upper()} ({kernel.origin}).")
        with fn.block(self.signature(f"{ret} {api}", self.api_params(kernel))):
            fn.line(f"using namespace {ns};")
            for local in host_scalars(scheduled, segs):
                dt = self.dtype_of(local)
                fn.line(f"{self.ctype(dt)} {self.var(local)} = {self.zero(dt)};")
            at = self.allocation_point(segs)
            self.host_segments(fn, segs[:at])
            for arr in self.local_arrays():
                ext = ", ".join(f"kt_extent({self.expr(s)})" for s in arr.shape)
                args = ", ".join([f'"{arr.name}"'] + ([ext] if ext else []))
                fn.line(f'{self.view_type(arr)} {cname(arr.name)}({args});  // local array')
            self.host_segments(fn, segs[at:])
            if kernel.result is not None:
                fn.line(self.host_return())

        shim = self.shim(kernel, ns, api)  # before the helpers: shapes may use some
        out = CodeBuffer(self.INDENT)
        out.line(f"// {name}_kokkos.cpp: Kokkos translation of {kernel.name.upper()} ({kernel.origin}).")
        out.line(f"// Generated by kernel-translate. API: {api}(...); C ABI shim: {shim_symbol(kernel)}(...).")
        pairs = any(r.loc for seg in device_segments(segs) if isinstance(seg, DeviceNest) for r in seg.reductions)
        arrays = any(isinstance(p, ir.Array) for p in kernel.params)
        out.lines(["#include <Kokkos_Core.hpp>", "", *(["#include <climits>"] if pairs else []), "#include <cmath>",
                   "#include <cstdio>", "#include <cstdlib>", *(["#include <limits>"] if pairs else [])])
        out.blank()
        if self.host_decls:
            out.lines(["// routines of the program called from the host code (skipped where not linked)",
                       *sorted(self.host_decls)])
            out.blank()
        if arrays:
            out.splice(PRESENT_DECL)
            out.blank()
        out.line(f"namespace {ns} {{")
        out.blank()
        out.splice(self.init_function())
        out.blank()
        if arrays:
            out.splice(RESIDENT)
            out.blank()
        out.splice(self.helper_text())
        out.splice(body)
        out.blank()
        out.line(f"}}  // namespace {ns}")
        out.blank()
        out.splice(fn)
        out.blank()
        out.splice(shim)
        path = f"kokkos/{name}_kokkos.cpp"
        files = with_fortran_interface({path: out.text()}, kernel)
        return Rendered(files=files, entry=path, symbol=shim_symbol(kernel), target=self.name)

    def init_function(self) -> str:
        b = CodeBuffer(self.INDENT)
        b.line("// Initialise Kokkos on first use if the caller has not; finalise at exit.")
        with b.block("inline void ensure_kokkos()"):
            with b.block("if (!Kokkos::is_initialized())"):
                b.line("Kokkos::initialize();")
                b.line("std::atexit([] { if (Kokkos::is_initialized()) Kokkos::finalize(); });")
        return b.text()

    # ------------------------------------------------------------- functions

    def used_scalars(self, scalars: Iterable[str], nodes: Iterable[object]) -> list[str]:
        """Views carry their extents: drop scalars only the linearisation needed."""
        used = set().union(*(scalar_reads(n) | scalar_writes(n) for n in nodes))
        return [s for s in scalars if s in used]

    def nest_scalars(self, seg: DeviceNest) -> list[str]:
        heads = [e for lp in seg.loops for e in (lp.start, lp.stop, lp.step)]
        return self.used_scalars(seg.scalars_in, [*seg.body, *heads])

    def seg_params(self, arrays: Iterable[str], scalars: Iterable[str], refs: Iterable[str] = (),
                   renamed: Iterable[str] = ()) -> list[str]:
        out = [f"const {self.ctype(self.dtype_of(s))} {self.var(s)}{'_in' if s in set(renamed) else ''}"
               for s in scalars]
        out += [f"{self.ctype(self.dtype_of(s, DType.F64))}& {self.var(s)}" for s in refs]
        for a in arrays:
            arr = self.array(a)
            out.append(f"{self.view_type(arr, const=not _writes(arr.name, self.current), random=True)} {cname(a)}")
        return out

    def nest_function(self, buf: CodeBuffer, seg: DeviceNest) -> None:
        self.current = seg.body
        reds = seg.reductions
        # one parallel_reduce over a generated struct value and reducer (a pair reduction: value and loc)
        multi = len(reds) > 1 or any(r.loc for r in reds)
        if multi:
            self.multi_reducer(buf, seg)
        params = self.seg_params(seg.arrays, self.nest_scalars(seg), refs=[n for r in reds for n in r.names])
        buf.line(f"// {seg.name}: parallel loop nest at {self.where(seg.line)}")
        with buf.block(self.signature(f"void {seg.name}", params)):
            order = [seg.loops[k] for k in fastest_first(seg, self.kernel)]
            k_names = {lp.var: f"k_{self.var(lp.var)}" for lp in order if not self.direct(lp)}
            for lp in order:
                if lp.var in k_names:
                    buf.line(f"const int {self.var(lp.var)}_lo = {self.expr(lp.start)};")
            trips = [f"{self.var(lp.var)}_trip" for lp in order]
            for lp, t in zip(order, trips, strict=True):
                buf.line(f"const int {t} = {self.trip(lp)};")
            idx = [f"const int {k_names.get(lp.var, self.var(lp.var))}" for lp in order]
            if len(order) == 1:
                policy = f"Kokkos::RangePolicy<>(0, {trips[0]})"
            else:
                rank = f"Kokkos::Rank<{len(order)}, Kokkos::Iterate::Left, Kokkos::Iterate::Left>"
                zeros = ", ".join("0" for _ in order)
                if (rows := self.schedule.block_rows) and self.schedule.block % rows == 0:
                    # tiles of block // rows iterations of the fastest loop by rows of the next
                    dims = [str(self.schedule.block // rows), str(rows)] + ["1"] * (len(order) - 2)
                else:  # the GPU tile of targets.defaults where the default space is a GPU's
                    buf.line(f"const int kt_rows = kt_tile_rows({' * '.join(['1LL', *trips])});")
                    dims = ["kt_tile_fast", "kt_rows"] + ["kt_tile_rest"] * (len(order) - 2)
                    self.use("kt_gpu_tile")
                tile = f", {{{', '.join(dims)}}}"
                policy = f"Kokkos::MDRangePolicy<{rank}>({{{zeros}}}, {{{', '.join(trips)}}}{tile})"
            red_arg = ""
            if multi:
                buf.line(f"{seg.name}_values kt_part{{}};")
                red_arg = f", {seg.name}_values& kt_acc"
            elif reds:
                r = reds[0]
                ct = self.ctype(r.dtype)
                buf.line(f"{ct} {self.var(r.var)}_part = {self.zero(r.dtype)};")
                red_arg = f", {ct}& {self.var(r.var)}"
            kind = "parallel_reduce" if reds else "parallel_for"
            buf.line(f"// fastest index first: {', '.join(lp.var for lp in order)}")
            buf.line(f'Kokkos::{kind}("{seg.name}", {policy},')
            with buf.indent():
                with buf.block(f"KOKKOS_LAMBDA({', '.join(idx)}{red_arg})", closer="}" + ("," if reds else ");")):
                    buf.lines(self.loop_var_lines(seg, k_names))
                    if multi:  # each reduction variable names its member of the thread's value
                        for k, r in enumerate(reds):
                            buf.line(f"{self.ctype(r.dtype)}& {self.var(r.var)} = kt_acc.v{k};")
                            if r.loc:
                                buf.line(f"{self.ctype(r.loc_dtype)}& {self.var(r.loc)} = kt_acc.l{k};")
                    self.body_with_privates(buf, seg.body, seg.private)
                if multi:
                    buf.line(f"{seg.name}_reducer(kt_part));")
                elif reds:
                    r = reds[0]
                    buf.line(f"Kokkos::{_REDUCERS[r.op]}<{self.ctype(r.dtype)}>({self.var(r.var)}_part));")
            if multi:
                for k, r in enumerate(reds):
                    buf.line(self.combine(r, f"kt_part.v{k}", f"kt_part.l{k}"))
            elif reds:
                buf.line(self.combine(reds[0]))

    def multi_reducer(self, buf: CodeBuffer, seg: DeviceNest) -> None:
        """``<nest>_values`` (one member per reduction) and ``<nest>_reducer``, a custom
        reducer joining each member with its own operation: Kokkos 3.4 has no variadic
        reducers. The interface is the one of Kokkos's built-in reducers in 3.4 and 4.x;
        the volatile join overload only exists for Kokkos 3, whose backends may call it."""
        reds = seg.reductions
        for r in reds:
            if r.op not in _REDUCERS and not r.loc:
                raise self.unsupported(r, f"reduction '{r.op}'")
        vals, red = f"{seg.name}_values", f"{seg.name}_reducer"
        if len(reds) == 1 and reds[0].loc:  # a pair reduction alone: value and first iteration
            buf.line(f"// {seg.name}: the {reds[0].op} of {reds[0].var} and its first iteration {reds[0].loc} "
                     "as one value")
        else:
            buf.line(f"// {seg.name}: its {len(reds)} reductions as one value (Kokkos 3.4 has no variadic reducers)")
        with buf.block(f"struct {vals}", closer="};"):
            for k, r in enumerate(reds):
                buf.line(f"{self.ctype(r.dtype)} v{k};  // {r.var} ({r.op})")
                if r.loc:
                    buf.line(f"{self.ctype(r.loc_dtype)} l{k};  // {r.loc}: the iteration that first reached v{k}")
        buf.blank()
        buf.line(f"// custom reducer of {vals}: each member joins with its own operation")
        with buf.block(f"struct {red}", closer="};"):
            buf.line(f"using reducer = {red};")
            buf.line(f"using value_type = {vals};")
            buf.line("using result_view_type = Kokkos::View<value_type, Kokkos::HostSpace>;")
            buf.line("result_view_type value;")
            buf.line("bool references_scalar_v;")
            buf.blank()
            buf.line("KOKKOS_INLINE_FUNCTION")
            buf.line(f"{red}(value_type& value_) : value(&value_), references_scalar_v(true) {{}}")
            buf.line("KOKKOS_INLINE_FUNCTION")
            buf.line(f"{red}(const result_view_type& value_) : value(value_), references_scalar_v(false) {{}}")
            joins = []
            for k, r in enumerate(reds):
                d, s = f"dest.v{k}", f"src.v{k}"
                if r.loc:
                    better = self.pair_better(r, s, f"src.l{k}", d, f"dest.l{k}")
                    joins.append(f"if ({better}) {{ {d} = {s}; dest.l{k} = src.l{k}; }}")
                    continue
                joins.append({"add": f"{d} = {d} + {s};", "mul": f"{d} = {d} * {s};",
                              "max": f"if ({s} > {d}) {d} = {s};", "min": f"if ({s} < {d}) {d} = {s};"}[r.op])
            buf.blank()
            buf.line("KOKKOS_INLINE_FUNCTION")
            with buf.block("void join(value_type& dest, const value_type& src) const"):
                buf.lines(joins)
            with buf.indent(-buf.level):  # preprocessor lines at column 0
                buf.line("#if KOKKOS_VERSION < 30700  // Kokkos 3 backends may join through volatile references")
            buf.line("KOKKOS_INLINE_FUNCTION")
            with buf.block("void join(volatile value_type& dest, const volatile value_type& src) const"):
                buf.lines(joins)
            with buf.indent(-buf.level):
                buf.line("#endif")
            buf.line("KOKKOS_INLINE_FUNCTION")
            with buf.block("void init(value_type& val) const"):
                for k, r in enumerate(reds):
                    if r.loc:  # +-inf, not Kokkos 3.4's -+DBL_MAX: an element -DBL_MAX must enter the pair
                        buf.line(f"val.v{k} = {self.extreme_identity(r)};")
                        buf.line(f"val.l{k} = {self.loc_identity(r)};")
                        continue
                    ident = {"add": "sum", "mul": "prod", "max": "max", "min": "min"}[r.op]
                    buf.line(f"val.v{k} = Kokkos::reduction_identity<{self.ctype(r.dtype)}>::{ident}();")
            buf.line("KOKKOS_INLINE_FUNCTION")
            buf.line("value_type& reference() const { return *value.data(); }")
            buf.line("KOKKOS_INLINE_FUNCTION")
            buf.line("result_view_type view() const { return value; }")
            buf.line("KOKKOS_INLINE_FUNCTION")
            buf.line("bool references_scalar() const { return references_scalar_v; }")
        buf.blank()

    def combine(self, r: ir.Reduction, part: str = "", loc_part: str = "") -> str:
        s, p = self.var(r.var), part or f"{self.var(r.var)}_part"
        if r.loc:
            ls = self.var(r.loc)
            return f"if ({self.pair_better(r, p, loc_part, s, ls)}) {{ {s} = {p}; {ls} = {loc_part}; }}"
        if r.op == "add":
            return f"{s} = {s} + {p};"
        if r.op == "mul":
            return f"{s} = {s} * {p};"
        if r.op in ("max", "min"):
            return f"{s} = {self.use('kt_' + r.op)}({s}, {p});"
        raise self.unsupported(r, f"reduction '{r.op}'")

    def serial_function(self, buf: CodeBuffer, seg: DeviceSerial) -> None:
        self.current = seg.stmts
        loop = scan_segment(seg)
        if loop is not None and scan.kind(loop) == "sum":
            self.prefix_sum(buf, seg, loop)
            return
        writes = _scalar_writes(seg.stmts)
        scalars_in = self.used_scalars(seg.scalars_in, seg.stmts)
        renamed = [s for s in scalars_in if s in writes]
        params = self.seg_params(seg.arrays, scalars_in, refs=seg.scalars_out, renamed=renamed)
        local = sorted(w for w in writes if w not in seg.scalars_in and w not in seg.scalars_out)
        if seg.on_host:
            self.host_function(buf, seg, params, renamed, local)
            return
        buf.line(f"// {seg.name}: serial device code at {self.where(seg.line)} (one thread)")
        with buf.block(self.signature(f"void {seg.name}", params)):
            for s in seg.scalars_out:
                ct = self.ctype(self.dtype_of(s, DType.F64))
                buf.line(f'Kokkos::View<{ct}> {self.var(s)}_d("{s}");')
                buf.line(f"Kokkos::deep_copy({self.var(s)}_d, {self.var(s)});")
            buf.line(f'Kokkos::parallel_for("{seg.name}", Kokkos::RangePolicy<>(0, 1),')
            with buf.indent(), buf.block("KOKKOS_LAMBDA(const int)", closer="});"):
                for s in renamed:
                    buf.line(f"{self.ctype(self.dtype_of(s))} {self.var(s)} = {self.var(s)}_in;")
                for s in seg.scalars_out:
                    buf.line(f"{self.ctype(self.dtype_of(s, DType.F64))} {self.var(s)} = {self.var(s)}_d();")
                self.body_with_privates(buf, seg.stmts, local)
                for s in seg.scalars_out:
                    buf.line(f"{self.var(s)}_d() = {self.var(s)};")
            for s in seg.scalars_out:
                buf.line(f"Kokkos::deep_copy({self.var(s)}, {self.var(s)}_d);")

    def host_function(self, buf: CodeBuffer, seg: DeviceSerial, params: list[str], renamed: list[str],
                      local: list[str]) -> None:
        """Serial code run on the host: host copies of its Views (the Views themselves where the
        default memory space is the host's) stand for them in the body; the ones it writes are
        copied back."""
        buf.line(f"// {seg.name}: serial code at {self.where(seg.line)}, run on the host (loops one device thread"
                 " would take long over)")
        with buf.block(self.signature(f"void {seg.name}", params)):
            for a in seg.arrays:
                buf.line(f"const auto {cname(a)}_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(),"
                         f" {cname(a)});")
            with buf.block("", opener="{"):
                for a in seg.arrays:
                    buf.line(f"const auto {cname(a)} = {cname(a)}_host;")
                for v in renamed:
                    buf.line(f"{self.ctype(self.dtype_of(v))} {self.var(v)} = {self.var(v)}_in;")
                self.body_with_privates(buf, seg.stmts, local)
            for a in seg.arrays:
                if _writes(a, seg.stmts):
                    buf.line(f"Kokkos::deep_copy({cname(a)}, {cname(a)}_host);")

    def prefix_sum(self, buf: CodeBuffer, seg: DeviceSerial, loop: ir.Loop) -> None:
        """A sum recurrence (``translate.scan``) as ``Kokkos::parallel_scan``: each iteration adds its
        term to the running partial, and the final pass stores the element before the first plus it."""
        rec = scan.of(loop)
        store, term = rec.store, rec.coefficients[0]
        assert term is not None
        ct = self.ctype(self.array(store.array).dtype)
        params = self.seg_params(seg.arrays, self.used_scalars(seg.scalars_in, seg.stmts))
        buf.line(f"// {seg.name}: the prefix sum at {self.where(seg.line)} (Kokkos::parallel_scan)")
        with buf.block(self.signature(f"void {seg.name}", params)):
            buf.line(f"const int kt_count = {self.trip(loop)};")
            buf.line(f'Kokkos::parallel_scan("{seg.name}", Kokkos::RangePolicy<>(0, kt_count),')
            with buf.indent(), buf.block(f"KOKKOS_LAMBDA(const int kt_k, {ct}& kt_partial, const bool kt_final)",
                                         closer="});"):
                sign = "+" if const_int(loop.step) == 1 else "-"
                buf.line(f"const int {self.var(loop.var)} = {self.expr(loop.start)} {sign} kt_k;")
                buf.line(f"kt_partial += {self.expr(term)};")
                with buf.block("if (kt_final)"):
                    buf.line(f"{self.expr(store)} = {self.expr(scan.first_read(loop))} + kt_partial;")

    # ------------------------------------------------------------- launches

    def launch_nest(self, buf: CodeBuffer, seg: DeviceNest) -> None:
        args = [self.var(s) for s in self.nest_scalars(seg)] + [self.var(n) for r in seg.reductions for n in r.names]
        args += [cname(a) for a in seg.arrays]
        buf.line(f"{seg.name}({', '.join(args)});")

    def launch_extern(self, buf: CodeBuffer, seg: DeviceExtern) -> None:
        buf.line(f"{seg.name}({', '.join(self.extern_args[seg.name])});")

    def launch_serial(self, buf: CodeBuffer, seg: DeviceSerial) -> None:
        scalars_in = self.used_scalars(seg.scalars_in, seg.stmts)
        args = [self.var(s) for s in (*scalars_in, *seg.scalars_out)] + [cname(a) for a in seg.arrays]
        buf.line(f"{seg.name}({', '.join(args)});")

    # ------------------------------------------------------------------ shim

    def shim(self, kernel: ir.Kernel, ns: str, api: str) -> str:
        b = CodeBuffer(self.INDENT)
        ret = self.ABI_TYPES[kernel.result] if kernel.result is not None else "void"
        b.line("// C ABI shim (CONVENTIONS.md): host arrays in, copied to the default memory space and back, or")
        b.line("// inside a migrated program's data region, the region's buffers (no copies).")
        with b.block(self.signature(f'extern "C" {ret} {shim_symbol(kernel)}', abi_params(self, kernel))):
            b.line(f"using namespace {ns};")
            b.line("ensure_kokkos();")
            copies, entry = shim_shapes(kernel)
            whole = overwritten(kernel)  # set whole before any read: a region need not copy them in
            for p in kernel.params:
                if p.name in copies:
                    b.line(f"const {self.ABI_TYPES[p.dtype]} {cname(p.name)}_in = *{cname(p.name)};")
            args = []
            for p in kernel.params:
                n = cname(p.name)
                if isinstance(p, ir.Array):
                    ext = ", ".join(f"kt_extent({self.expr(ir.substitute(s, entry))})" for s in p.shape)
                    ptr = f"const_cast<{self.element_type(p.dtype)}*>({n})" if not p.intent.writes else n
                    args_h = ", ".join([ptr] + ([ext] if ext else []))  # a 0-d View takes the pointer only
                    b.line(f"{self.view_type(p, host=True)} {n}_h({args_h});")
                    b.line(f"{self.view_type(p, const=not p.intent.writes)} {n}_v;")
                    writes = 2 if p.name in whole else 1 if p.intent.writes else 0
                    b.line(f"const bool {n}_kept = kt_resident({n}_v, {n}_h, {writes});")
                    b.line(f"if (!{n}_kept) {n}_v = Kokkos::create_mirror_view_and_copy("
                           f"Kokkos::DefaultExecutionSpace::memory_space(), {n}_h);")
                    args.append(f"{n}_v")
                else:
                    args.append(self.shim_scalar_arg(p, b))
            call = f"{api}({', '.join(args)})"
            timed = any(isinstance(p, ir.Array) for p in kernel.params)
            if timed:
                b.line("if (kt_call_begin) kt_call_begin();")
            b.line(f"{'const auto kt_result = ' if kernel.result is not None else ''}{call};")
            if timed:
                b.line("Kokkos::fence();")
                b.line(f'if (kt_call_end) kt_call_end("{kernel.name.lower()}");')
            for p in kernel.params:
                n = cname(p.name)
                if isinstance(p, ir.Array) and p.intent.writes:
                    b.line(f"if (!{n}_kept) Kokkos::deep_copy({n}_h, {n}_v);")
                elif isinstance(p, ir.Scalar) and p.intent.writes and p.dtype is DType.BOOL:
                    b.line(f"*{n} = {n}_b ? 1 : 0;")
            b.line("Kokkos::fence();")
            if kernel.result is not None:
                b.line("return kt_result;")
        return b.text()

    def helper_text(self) -> str:
        text = super().helper_text()
        parts = ["// a View extent from a shape expression (never negative)\n"
                 "inline size_t kt_extent(long long n) { return n > 0 ? (size_t)n : 0; }"]
        if "kt_gpu_tile" in self.helpers:
            fast, nxt = KOKKOS.gpu_tile
            parts.append(
                "// MDRange tiles: on a GPU a warp along the fastest index by rows of the next; 0 on the\n"
                "// host, where Kokkos chooses (whole rows of the fastest loop)\n"
                "constexpr bool kt_on_device = !Kokkos::SpaceAccessibility<\n"
                "    Kokkos::HostSpace, Kokkos::DefaultExecutionSpace::memory_space>::accessible;\n"
                f"constexpr int kt_tile_fast = kt_on_device ? {fast} : 0;\n"
                f"constexpr int kt_tile_next = kt_on_device ? {nxt} : 0;\n"
                "constexpr int kt_tile_rest = kt_on_device ? 1 : 0;\n\n"
                "// rows per tile of a nest of ``iterations``: a nest too small to give every SM a tile of\n"
                "// kt_tile_next rows takes one row per tile (more blocks of one warp each)\n"
                "inline int kt_tile_rows(long long iterations) {\n"
                "    if (!kt_on_device) return 0;\n"
                "    const long long resident = Kokkos::DefaultExecutionSpace().concurrency();\n"
                f"    return iterations * {KOKKOS.small_nest_share} < resident ? 1 : kt_tile_next;\n"
                "}")
        return "\n\n".join([*parts, *([text] if text else [])])


def abi_params(r: CStyleRenderer, kernel: ir.Kernel) -> list[str]:
    """``kt_NAME`` parameters per CONVENTIONS.md."""
    out = []
    for p in kernel.params:
        t = r.ABI_TYPES[p.dtype]
        if isinstance(p, ir.Array):
            out.append(f"{'const ' if not p.intent.writes else ''}{t}* {cname(p.name)}")
        elif p.intent.writes:
            out.append(f"{t}* {cname(p.name)}")
        else:
            out.append(f"{t} {cname(p.name)}")
    return out


def shim_shapes(kernel: ir.Kernel) -> tuple[set[str], dict[str, ir.Expr]]:
    """Array extents in a shim, where a scalar the routine writes is a pointer: the shim copies
    its value on entry first (``const int n_in = *n;``). Returns the scalars copied and the
    substitution that makes the shapes read the copies."""
    used = {v.name for p in kernel.params if isinstance(p, ir.Array) for e in p.shape for v in ir.walk(e)
            if isinstance(v, ir.Var)}
    copied = [p for p in kernel.params if isinstance(p, ir.Scalar) and p.intent.writes and p.name in used]
    return {p.name for p in copied}, {p.name: ir.Var(f"{p.name}_in", p.dtype) for p in copied}


def _scalar_writes(stmts: Iterable[ir.Stmt]) -> set[str]:
    return {n.target.name for s in stmts for n in ir.walk(s)
            if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)}


def _writes(array: str, stmts: Iterable[ir.Stmt]) -> bool:
    return any(isinstance(n, ir.Assign) and isinstance(n.target, ir.Load) and n.target.array == array
               for s in stmts for n in ir.walk(s))
