"""A sum recurrence (``translate.scan``) as a parallel prefix sum in three Triton kernels.

``X(f(i)) = X(f(i - step)) + E(i)`` over ``trip`` iterations, the iterations cut into programs of
``TILES`` blocks: (1) ``NAME_totals``: each program's sum of its terms; (2) ``NAME_carries``, one
program: the running value after each program, from the element before the first iteration
(``tl.cumsum`` over the programs' sums, in blocks); (3) ``NAME``: each program's prefix sums of its
terms (``tl.cumsum``) from the value before its first iteration, stored. The terms are read twice
and the array written once (three passes where the loop makes two); only the order of the additions
differs from the loop's."""

from __future__ import annotations

from targets.triton_expr import TORCH_DTYPE, HostExpr, dev_dtype, py_name
from targets.triton_kernels import Lines, _Emitter
from translate import ir, scan
from translate.schedule import DeviceSerial
from translate.simplify import const_int

SCAN_TILES = 8  # blocks per program
CARRY_BLOCK = 1024  # the programs' sums the carry kernel scans at a time


def scan_segment(seg: DeviceSerial) -> ir.Loop | None:
    """The recurrence a serial segment runs, where the segment is one marked loop."""
    if len(seg.stmts) == 1 and isinstance(seg.stmts[0], ir.Loop) and seg.stmts[0].scan:
        return seg.stmts[0]
    return None


class ScanEmitter(_Emitter):
    def __init__(self, kernel: ir.Kernel, seg: DeviceSerial, loop: ir.Loop, host: HostExpr) -> None:
        super().__init__(kernel)
        self.seg, self.loop, self.host = seg, loop, host
        self.store, self.prev, self.term = scan.parts(loop)
        self.dtype = kernel.param(self.store.array).dtype
        self.dev.vector = {loop.var}

    def emit(self) -> tuple[str, list[str]]:
        """The three kernels' source and the launcher's lines."""
        seg, loop = self.seg, self.loop
        self.add_arrays(seg.arrays)
        self.add_scalars(seg.scalars_in)
        step = const_int(loop.step)
        var = py_name(loop.var)
        start = self.dev.typed(loop.start, ir.DType.I64)
        at_k = f"{var} = {start} + kt_k" if step == 1 else f"{var} = {start} - kt_k"
        dt, arr = dev_dtype(self.dtype), py_name(self.store.array)
        zero = "0.0" if self.dtype.is_float else "0"
        first = tuple(ir.substitute(i, {loop.var: loop.start}) for i in self.prev.index)
        before = f"tl.load({arr} + {self.dev.offset(self.prev.array, first)})"  # the element before the first
        where = f"{self.kernel.origin.path}:{loop.line}" if loop.line else str(self.kernel.origin)
        self.dev.mask = "mask"
        term = f"tl.where(mask, {self.dev.typed(self.term, self.dtype)}, {zero})"
        stored = f"{arr} + {self.dev.offset(self.store.array, self.store.index)}"
        params = ", ".join(self.params)
        texts = []

        def kernel(name: str, extra: str, doc: str, lines: list[str]) -> None:
            out = Lines()
            out("@triton.jit")
            out(f"def {name}({params}, kt_trip, kt_totals, {extra}):")
            out.level = 1
            out(f'"""{doc}"""')
            for line in self.prologue + lines:
                out(line)
            texts.append(out.text())

        tiles = [
            "for tile in tl.static_range(TILES):",
            "    kt_k = (pid * TILES + tile) * BLOCK + tl.arange(0, BLOCK)",
            "    mask = kt_k < kt_trip",
            f"    {at_k}",
            f"    kt_terms = {term}",
        ]
        kernel(f"{seg.name}_totals", "BLOCK: tl.constexpr, TILES: tl.constexpr",
               f"Prefix sum of the recurrence at {where}, step 1 of 3: each program's sum of its terms.",
               ["pid = tl.program_id(0).to(tl.int64)", f"kt_carry = tl.zeros([], {dt})", *tiles,
                "    kt_carry += tl.sum(kt_terms, axis=0)", "tl.store(kt_totals + pid, kt_carry)"])
        kernel(f"{seg.name}_carries", "kt_programs, BLOCK: tl.constexpr",
               "Step 2 of 3 (one program): the value after each program's iterations, from the element "
               "before the first.",
               [f"kt_carry = {before}",
                "for first in range(0, kt_programs, BLOCK):",
                "    kt_p = first + tl.arange(0, BLOCK)",
                f"    kt_sums = tl.load(kt_totals + kt_p, mask=kt_p < kt_programs, other={zero})",
                "    tl.store(kt_totals + kt_p, tl.cumsum(kt_sums, axis=0) + kt_carry, mask=kt_p < kt_programs)",
                "    kt_carry += tl.sum(kt_sums, axis=0)"])
        kernel(seg.name, "BLOCK: tl.constexpr, TILES: tl.constexpr",
               f"Step 3 of 3: each program's prefix sums of its terms from the value before its first "
               f"iteration, stored (the recurrence at {where}).",
               ["pid = tl.program_id(0).to(tl.int64)",
                f"kt_carry = tl.where(pid > 0, tl.load(kt_totals + pid - 1, mask=pid > 0, other={zero}), {before})",
                *tiles,
                f"    tl.store({stored}, tl.cumsum(kt_terms, axis=0) + kt_carry, mask=mask)",
                "    kt_carry += tl.sum(kt_terms, axis=0)"])
        args = ", ".join(self.launch_args)
        trip = f"{var}_trip"
        lines = [
            f"# {seg.name}: the sum recurrence at {where} as a parallel prefix sum (three kernels)",
            f"{trip} = {self.host_trip()}",
            f"if {trip} > 0:",
            f"    grid = (triton.cdiv({trip}, block * {SCAN_TILES}),)",
            f"    kt_totals = torch.empty(grid[0], dtype={TORCH_DTYPE[self.dtype]}, device=dev)",
            f"    {seg.name}_totals[grid]({args}, {trip}, kt_totals, BLOCK=block, TILES={SCAN_TILES})",
            f"    {seg.name}_carries[(1,)]({args}, {trip}, kt_totals, grid[0], BLOCK={CARRY_BLOCK})",
            f"    {seg.name}[grid]({args}, {trip}, kt_totals, BLOCK=block, TILES={SCAN_TILES})",
        ]
        return "\n\n".join(texts), lines

    def host_trip(self) -> str:
        start, stop = self.host(self.loop.start), self.host(self.loop.stop)
        return f"max(0, {stop} - {start})" if const_int(self.loop.step) == 1 else f"max(0, {start} - {stop})"
