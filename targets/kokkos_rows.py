"""Row kernels of the Kokkos target: a nest that ``targets.rows.row_nest`` accepts
runs as a ``TeamPolicy`` with ONE TEAM per row. The team's threads split each
inner loop (``TeamThreadRange``), so on a GPU build neighbouring threads read
neighbouring elements of the row; a reduction into a private scalar is a nested
``parallel_reduce`` whose result every thread of the team receives; stores
outside the inner loops are made once per team (``Kokkos::single(PerTeam)``); inner
loops that share a row's elements (NPB MG's scratch rows) are separated by a team barrier.
On the CPU backends a team is one thread and this is the plain row loop.

Used when ``Schedule.row_programs`` is on (the default). Inner loops with more
than one reduction scalar, first-max/min updates or narrow-float reductions
keep the flat ``RangePolicy`` form."""

from __future__ import annotations

from typing import TYPE_CHECKING

from targets.base import CodeBuffer
from targets.cstyle import cname
from targets.rows import accumulators, arg_update, inner_loops, loop_chain, needs_barrier, row_nest
from translate import ir
from translate.ir import DType
from translate.partition import DeviceNest

if TYPE_CHECKING:
    from targets.kokkos import KokkosRenderer

_REDUCERS = {"add": "Sum", "max": "Max", "min": "Min"}
_REDUCED = (DType.F32, DType.F64, DType.I32, DType.I64)


def team_row_nest(r: KokkosRenderer, nest: DeviceNest) -> bool:
    """Whether ``nest`` runs as one team per row under the renderer's schedule."""
    if not r.schedule.row_programs or not row_nest(nest, r.kernel, scratch=True):
        return False
    for lp in inner_loops(nest):
        accs = accumulators(lp)
        if len(accs) > 1 or any(arg_update(s) is not None for s in loop_chain(lp)[-1].body):
            return False
        if any(r.dtype_of(v, DType.F64) not in _REDUCED for v in accs):
            return False
    return True


def team_function(r: KokkosRenderer, buf: CodeBuffer, nest: DeviceNest) -> None:
    r.current = nest.body
    params = r.seg_params(nest.arrays, r.nest_scalars(nest))
    loops = ", ".join(lp.var for lp in nest.loops)
    buf.line(f"// {nest.name}: row kernel for the nest at {r.where(nest.line)}: one team per ({loops}), its")
    buf.line("// threads split the inner loops along the contiguous dimension (TeamThreadRange)")
    with buf.block(r.signature(f"void {nest.name}", params)):
        buf.lines(r.chain_bounds_lines(nest.loops))
        rows = " * ".join(f"{r.var(lp.var)}_trip" for lp in nest.loops)
        buf.line("using member_type = Kokkos::TeamPolicy<>::member_type;")
        chip = r.chip_rows.get(nest.name, ())
        policy = f"Kokkos::TeamPolicy<>({rows}, Kokkos::AUTO)"
        if chip:
            names = ", ".join(a.name for a in chip)
            buf.line(f"// {names}: the team's scratch rows (one row's copy each), in team scratch memory")
            for a in chip:
                layout = "Kokkos::LayoutLeft" if a.layout is ir.Layout.LEFT else "Kokkos::LayoutRight"
                buf.line(f"using {cname(a.name)}_row = Kokkos::View<{r.element_type(a.dtype)}{'*' * a.rank}, {layout}, "
                         "Kokkos::DefaultExecutionSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;")
            size = " + ".join(f"{cname(a.name)}_row::shmem_size({_extents(r, a)})" for a in chip)
            policy += f".set_scratch_size(0, Kokkos::PerTeam({size}))"
        buf.line(f'Kokkos::parallel_for("{nest.name}", {policy},')
        with buf.indent(), buf.block("KOKKOS_LAMBDA(const member_type& team)", closer="});"):
            for a in chip:
                buf.line(f"{cname(a.name)}_row {cname(a.name)}(team.team_scratch(0), {_extents(r, a)});")
            buf.line("const int row = team.league_rank();")
            buf.lines(r.index_lines(nest.loops, "row", "int"))
            inner_local = {c.var for lp in inner_loops(nest) for c in loop_chain(lp)}
            inner_local |= {s.target.name for lp in inner_loops(nest) for s in loop_chain(lp)[-1].body
                            if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var)} - \
                set().union(*(accumulators(lp) for lp in inner_loops(nest)))
            first_assign = r.row_privates(buf, nest.body, [p for p in nest.private if p not in inner_local])
            barrier, looped = needs_barrier(nest), False
            for s in nest.body:
                if id(s) in first_assign:
                    r.declare_on_assign.add(first_assign[id(s)])
                if isinstance(s, ir.Loop):
                    if barrier and looped:
                        buf.line("team.team_barrier();  // the loops share the row's elements: the last one done first")
                    _team_loop(r, buf, s, sorted(inner_local & set(nest.private)))
                    looped = True
                elif isinstance(s, ir.Assign) and isinstance(s.target, ir.Load):
                    with buf.block("Kokkos::single(Kokkos::PerTeam(team), [&]()", closer="});"):
                        r.stmt(buf, s)
                else:
                    r.stmt(buf, s)
            if chip:
                buf.line("team.team_barrier();  // the team's next row refills its scratch rows")


def _extents(r: KokkosRenderer, a: ir.Array) -> str:
    return ", ".join(r.expr(e) for e in a.shape)


def _team_loop(r: KokkosRenderer, buf: CodeBuffer, lp: ir.Loop, temps: list[str]) -> None:
    """One inner loop (or a perfect chain, flattened) over the team's threads."""
    chain = loop_chain(lp)
    inner = chain[-1]
    accs = accumulators(lp)
    if lp.line:
        buf.line(f"// {r.where(lp.line)}")
    if len(chain) == 1:
        index, lo, hi = r.var(inner.var), r.expr(inner.start), r.expr(inner.stop)
        prologue: list[str] = []
    else:  # one flat index over the chain (TeamThreadMDRange is Kokkos 4 only)
        buf.lines(r.chain_bounds_lines(chain))
        index, lo = "flat", "(long long)0"
        hi = " * ".join(f"(long long){r.var(c.var)}_trip" for c in chain)
        prologue = r.index_lines(chain, "flat", "long long")
    own = [t for t in temps if any(t in {n.name for n in ir.walk(s) if isinstance(n, ir.Var)}
                                   for s in inner.body)]
    itype = "int" if len(chain) == 1 else "long long"
    if accs:
        (v, op), = accs.items()
        t = r.ctype(r.dtype_of(v, DType.F64))
        buf.line(f"{t} {r.var(v)}_part = {r.zero(r.dtype_of(v, DType.F64))};")
        head = f"Kokkos::parallel_reduce(Kokkos::TeamThreadRange(team, {lo}, {hi}), [&](const {itype} {index}, " \
               f"{t}& {r.var(v)})"
        closer = f"}}, Kokkos::{_REDUCERS[op]}<{t}>({r.var(v)}_part));"
    else:
        head = f"Kokkos::parallel_for(Kokkos::TeamThreadRange(team, {lo}, {hi}), [&](const {itype} {index})"
        closer = "});"
    with buf.block(head, closer=closer):
        buf.lines(prologue)
        r.body_with_privates(buf, inner.body, own)
    for v, op in accs.items():
        name = r.var(v)
        buf.line(f"{name} = {name} + {name}_part;" if op == "add" else
                 f"{name} = {name}_part {'>' if op == 'max' else '<'} {name} ? {name}_part : {name};")
