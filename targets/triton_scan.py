"""A linear recurrence (``translate.scan``) as a parallel scan in three Triton kernels.

``X(f(i)) = A(i) * X(f(i - step)) + B(i)`` over ``trip`` iterations, cut into programs of ``TILES``
blocks: (1) ``NAME_totals``: each program's composed map (a sum where ``A`` is 1); (2)
``NAME_carries``, one program: the value after each program's iterations, from the element before
the first (a scan over the programs' maps, in blocks); (3) ``NAME``: each program's scan of its
maps (``tl.cumsum``, or ``tl.associative_scan`` with ``_kt_affine``) applied to the value before
its first iteration, stored. The coefficients are read twice and the array written once (three
passes where the loop makes two); only the order of the operations differs from the loop's. Lanes
past the end hold the identity map, so a block's last lane holds the value after its last
iteration."""

from __future__ import annotations

from targets.triton_expr import TORCH_DTYPE, HostExpr, dev_dtype, literal, py_name
from targets.triton_kernels import Lines, _Emitter
from translate import ir, scan
from translate.partition import DeviceSerial
from translate.simplify import const_int

SCAN_TILES = 8  # blocks per program
CARRY_BLOCK = 1024  # the programs' maps the carry kernel scans at a time
_LAST = "tl.sum(tl.where(tl.arange(0, BLOCK) == BLOCK - 1, {v}, {zero}), axis=0)"  # the block's last lane


class ScanEmitter(_Emitter):
    def __init__(self, kernel: ir.Kernel, seg: DeviceSerial, loop: ir.Loop, host: HostExpr) -> None:
        super().__init__(kernel)
        self.seg, self.loop, self.host = seg, loop, host
        self.rec = scan.of(loop)
        self.store = self.rec.store
        self.dtype = kernel.param(self.store.array).dtype
        self.dev.vector = {loop.var}
        self.zero, self.one = literal(0, self.dtype, True), literal(1, self.dtype, True)

    def emit(self) -> tuple[str, list[str]]:
        """The three kernels' source and the launcher's lines."""
        seg, loop = self.seg, self.loop
        self.add_arrays(seg.arrays)
        self.add_scalars(seg.scalars_in)
        var, dt, zero = py_name(loop.var), dev_dtype(self.dtype), self.zero
        start = self.dev.typed(loop.start, ir.DType.I64)
        arr = py_name(self.store.array)
        first = scan.first_read(loop)
        before = f"tl.load({arr} + {self.dev.offset(first.array, first.index)})"  # the element before the first
        self.dev.mask = "mask"
        stored = self.stored = f"{arr} + {self.dev.offset(self.store.array, self.store.index)}"
        where = f"{self.kernel.origin.path}:{loop.line}" if loop.line else str(self.kernel.origin)
        tiles = ["for tile in tl.static_range(TILES):",
                 "    kt_k = (pid * TILES + tile) * BLOCK + tl.arange(0, BLOCK)",
                 "    mask = kt_k < kt_trip",
                 f"    {var} = {start} {'+' if const_int(loop.step) == 1 else '-'} kt_k"]
        previous = f"tl.load(kt_totals + pid - 1, mask=pid > 0, other={zero})"  # the program before's last value
        start_carry = f"kt_carry = tl.where(pid > 0, {previous}, {before})"
        if self.is_sum:  # a prefix sum
            tiles.append(f"    kt_terms = {self.coefficient(self.rec.coefficients[0], zero)}")
            totals = [f"kt_carry = tl.zeros([], {dt})", *tiles, "    kt_carry += tl.sum(kt_terms, axis=0)",
                      "tl.store(kt_totals + pid, kt_carry)"]
            carries = [f"kt_sums = tl.load(kt_totals + kt_p, mask=kt_p < kt_programs, other={zero})",
                       "tl.store(kt_totals + kt_p, tl.cumsum(kt_sums, axis=0) + kt_carry, mask=kt_p < kt_programs)",
                       "kt_carry += tl.sum(kt_sums, axis=0)"]
            stores = [start_carry, *tiles, f"    tl.store({stored}, tl.cumsum(kt_terms, axis=0) + kt_carry, mask=mask)",
                      "    kt_carry += tl.sum(kt_terms, axis=0)"]
        else:  # maps: x -> a*x + b (affine), or x -> (a*x + b) / (c*x + d) (ratio)
            totals, carries, stores = self.map_lines(tiles, start_carry)
        what = "prefix sum" if self.is_sum else "scan"
        texts = [
            self.kernel_text(f"{seg.name}_totals", "BLOCK: tl.constexpr, TILES: tl.constexpr",
                             f"Parallel {what} of the recurrence at {where}, step 1 of 3: each program's "
                             + ("sum of its terms." if self.is_sum else "composed map."),
                             ["pid = tl.program_id(0).to(tl.int64)", *totals]),
            self.kernel_text(f"{seg.name}_carries", "kt_programs, BLOCK: tl.constexpr",
                             "Step 2 of 3 (one program): the value after each program's iterations, from the "
                             "element before the first.",
                             [f"kt_carry = {before}", "for first in range(0, kt_programs, BLOCK):",
                              "    kt_p = first + tl.arange(0, BLOCK)", *("    " + c for c in carries)]),
            self.kernel_text(seg.name, "BLOCK: tl.constexpr, TILES: tl.constexpr",
                             f"Step 3 of 3: each program's {what} from the value before its first iteration, "
                             f"stored (the recurrence at {where}).",
                             ["pid = tl.program_id(0).to(tl.int64)", *stores]),
        ]
        return "\n\n".join(texts), self.launch_lines(what, where)

    @property
    def is_sum(self) -> bool:
        return self.rec.kind == "sum"

    @property
    def ratio(self) -> bool:
        return self.rec.kind == "ratio"

    def components(self) -> list[tuple[str, ir.Expr | None, str]]:
        """(name, coefficient, identity) of each component of the iterations' maps: the identity
        map is 1 on the diagonal (a, and a ratio's d), 0 elsewhere."""
        names = ("kt_a", "kt_b", "kt_c", "kt_d")
        return [(n, e, self.one if n in ("kt_a", "kt_d") else self.zero)
                for n, e in zip(names, self.rec.coefficients, strict=False)]

    def map_lines(self, tiles: list[str], start_carry: str) -> tuple[list[str], list[str], list[str]]:
        """The three kernels' lines of a scan of maps (affine or ratio)."""
        helper = "_kt_ratio" if self.ratio else "_kt_affine"
        self.dev.helpers.add(helper)
        comps = self.components()
        names = [n for n, _, _ in comps]
        ident = [i for _, _, i in comps]
        # each lane's map (a missing coefficient is 0); lanes past the end hold the identity map
        lanes = [f"    {n} = {self.coefficient(e, i)}" for n, e, i in comps]
        joined = ", ".join(names)
        scanned = [*tiles, *lanes, f"    {joined} = tl.associative_scan(({joined}), 0, {helper})"]
        last = ", ".join(_LAST.format(v=n, zero=self.zero) for n in names)
        dt = dev_dtype(self.dtype)
        program = ", ".join(f"kt_p{n[3:]}" for n in names)
        value = "(kt_a * kt_carry + kt_b) / (kt_c * kt_carry + kt_d)" if self.ratio else "kt_a * kt_carry + kt_b"
        totals = [f"{program} = {', '.join(f'tl.full([], {i}, {dt})' for i in ident)}", *scanned,
                  f"    {program} = {helper}({program}, {last})",
                  *(f"tl.store(kt_totals + {k} * tl.num_programs(0) + pid, kt_p{n[3:]})" for k, n in enumerate(names))]
        carries = [*(f"{n} = tl.load(kt_totals + {k} * kt_programs + kt_p, mask=kt_p < kt_programs, "
                     f"other={i})" for k, (n, i) in enumerate(zip(names, ident, strict=True))),
                   f"{joined} = tl.associative_scan(({joined}), 0, {helper})",
                   f"kt_values = {value}",
                   "tl.store(kt_totals + kt_p, kt_values, mask=kt_p < kt_programs)",
                   f"kt_carry = {_LAST.format(v='kt_values', zero=self.zero)}"]
        stores = [start_carry, *scanned, f"    kt_values = {value}",
                  f"    tl.store({self.stored}, kt_values, mask=mask)",
                  f"    kt_carry = {_LAST.format(v='kt_values', zero=self.zero)}"]
        return totals, carries, stores

    def coefficient(self, e: ir.Expr | None, identity: str) -> str:
        """A coefficient on the lanes (0 where there is none: a map's, or the sum's term), the
        identity past the end."""
        zeros = f"tl.full([BLOCK], {self.zero}, {dev_dtype(self.dtype)})"
        if e is None and identity == self.zero:
            return zeros
        # a tensor of the array's type where the coefficient is missing: tl.where of two literals is float32
        return f"tl.where(mask, {zeros if e is None else self.dev.typed(e, self.dtype)}, {identity})"

    def kernel_text(self, name: str, extra: str, doc: str, lines: list[str]) -> str:
        out = Lines()
        out("@triton.jit")
        out(f"def {name}({', '.join(self.params)}, kt_trip, kt_totals, {extra}):")
        out.level = 1
        out(f'"""{doc}"""')
        for line in self.prologue + lines:
            out(line)
        return out.text()

    def launch_lines(self, what: str, where: str) -> list[str]:
        seg, args = self.seg, ", ".join(self.launch_args)
        trip = f"{py_name(self.loop.var)}_trip"
        # the programs' sums, or a row per component of their maps
        rows = "grid[0]" if self.is_sum else f"({len(self.components())}, grid[0])"
        start, stop = self.host(self.loop.start), self.host(self.loop.stop)
        count = f"max(0, {stop} - {start})" if const_int(self.loop.step) == 1 else f"max(0, {start} - {stop})"
        return [
            f"# {seg.name}: the recurrence at {where} as a parallel {what} (three kernels)",
            f"{trip} = {count}",
            f"if {trip} > 0:",
            f"    grid = (triton.cdiv({trip}, block * {SCAN_TILES}),)",
            f"    kt_totals = torch.empty({rows}, dtype={TORCH_DTYPE[self.dtype]}, device=dev)",
            f"    {seg.name}_totals[grid]({args}, {trip}, kt_totals, BLOCK=block, TILES={SCAN_TILES})",
            f"    {seg.name}_carries[(1,)]({args}, {trip}, kt_totals, grid[0], BLOCK={CARRY_BLOCK})",
            f"    {seg.name}[grid]({args}, {trip}, kt_totals, BLOCK=block, TILES={SCAN_TILES})",
        ]
