"""A Triton nest's reductions finished on the device: the programs' partials reduced and combined with
the value each reduction starts from, into a tensor (``NAME_out``) that stays on the device.

The launcher does not wait for them: the results are pending scalars (``targets.triton_pending``),
brought to the host only where host code reads them, and returned as 0-d tensors when nothing does.
A reduction starts from the host value of its variable, or from its pending tensor, or from a
constant that host code assigned just before (``Known``); a start that is the operator's identity
costs no device operation."""

from __future__ import annotations

from collections.abc import Callable

from targets.triton_expr import TORCH_DTYPE, py_name
from targets.triton_kernels import Lines
from targets.triton_partials import IDENTITY, by_dtype, partials_name
from targets.triton_pending import PendingScalars
from translate import ir
from translate.partition import HostBlock, HostIf, Segment

# a reduction's partials reduced on the device (one row, or each row of a shared array)
ON_DEVICE = {"add": "{p}.sum()", "mul": "{p}.prod()", "max": "{p}.max()", "min": "{p}.min()"}
ON_ROWS = {"add": "{p}.sum(dim=1)", "mul": "{p}.prod(dim=1)", "max": "{p}.amax(dim=1)", "min": "{p}.amin(dim=1)"}
# the start value (a host number or a tensor) combined with the device's result
_WITH_HOST = {"add": "{v} + {s}", "mul": "{v} * {s}", "max": "{s}.clamp_min({v})", "min": "{s}.clamp_max({v})"}
_WITH_DEVICE = {"add": "{v} + {s}", "mul": "{v} * {s}", "max": "torch.maximum({v}, {s})",
                "min": "torch.minimum({v}, {s})"}


class Known:
    """Constants the launcher's host code has assigned to scalars, while they hold: a name is
    dropped when anything else writes it, and everything is forgotten where control flow joins
    (after an IF, around a loop)."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {}

    def assigned(self, name: str, value: ir.Expr) -> None:
        if isinstance(value, ir.Const) and not isinstance(value.value, str):
            self.values[name] = value.value
        else:
            self.values.pop(name, None)

    def written(self, names: set[str] | tuple[str, ...]) -> None:
        for name in names:
            self.values.pop(name, None)

    def forget(self) -> None:
        self.values.clear()

    def snapshot(self) -> dict[str, object]:
        return dict(self.values)

    def restore(self, state: dict[str, object]) -> None:
        self.values = dict(state)

    def join(self, states: list[dict[str, object]]) -> None:
        """Where paths join: what every path (ending in ``states``) knows alike."""
        first, *rest = states or [{}]
        self.values = {k: v for k, v in first.items() if all(k in o and o[k] == v for o in rest)}

    def is_identity(self, r: ir.Reduction) -> bool:
        return r.op in ("add", "mul") and r.var in self.values and self.values[r.var] == IDENTITY[r.op]


def pair_names(r: ir.Reduction) -> list[tuple[str, ir.DType]]:
    """The variables a reduction writes and their types (a pair's value, then its iteration)."""
    return [(r.var, r.dtype), (r.loc, r.loc_dtype)] if r.loc else [(r.var, r.dtype)]


def device_results(out: Lines, partials: list[ir.Reduction], pending: PendingScalars, known: Known) -> None:
    """Lines that reduce each reduction's partials on the device and combine them with its start
    into ``NAME_out`` (a pair: ``NAME_out`` and ``LOC_out``), which become pending."""
    for r in partials:
        if r.loc:
            pair_result(out, r, pending)
    groups = by_dtype([r for r in partials if not r.loc])
    for dtype, group in groups.items():
        # a reduction starting from its identity is its result as it is
        plain = [known.is_identity(r) for r in group]
        sums = [f"{py_name(r.var)}_{'out' if p else 'sum'}" for r, p in zip(group, plain, strict=True)]
        if len(group) == 1:
            out(f"{sums[0]} = {ON_DEVICE[group[0].op].format(p=f'{py_name(group[0].var)}_part')}")
        else:
            rows = partials_name(dtype, groups)
            if len({r.op for r in group}) == 1:
                value = ON_ROWS[group[0].op].format(p=rows)
            else:
                each = (ON_DEVICE[r.op].format(p=f"{rows}[{n}]") for n, r in enumerate(group))
                value = f"torch.stack([{', '.join(each)}])"
            out(f"{', '.join(sums)} = {value}  # 0-d tensors, one per row")
        for r, s, p in zip(group, sums, plain, strict=True):
            v = py_name(r.var)
            if not p and r.var in pending.dtypes:
                out(f"{v}_out = {_WITH_DEVICE[r.op].format(v=f'{v}_out', s=s)}")
            elif not p:
                out(f"{v}_out = {_WITH_HOST[r.op].format(v=v, s=s)}")
            pending.add(r.var, r.dtype)
    known.written(ir.reduced(partials))


def pair_result(out: Lines, r: ir.Reduction, pending: PendingScalars) -> None:
    """A pair reduction's best pair over the programs, joined with its start pair on the device.
    Programs cover the iterations in order, so the first program holding the best value
    (``argmax``/``argmin`` return the first) holds its first iteration; the start pair loses to
    an equal value only at a later iteration (``loc_first``)."""
    v, loc = py_name(r.var), py_name(r.loc)
    pick = "argmax" if r.op == "maxloc" else "argmin"
    better = ">" if r.op == "maxloc" else "<"
    earlier = "<" if r.loc_first == "min" else ">"
    start, start_loc = (f"{n}_out" if name in pending.dtypes else n for name, n in ((r.var, v), (r.loc, loc)))
    # a 1-element index: indexing with the 0-d result itself would wait for the GPU (``.item()``)
    out(f"kt_at = {v}_part[0].{pick}().view(1)")
    out(f"{v}_top, {loc}_top = {v}_part[:, kt_at].view(2)  # the programs' best pair, 0-d tensors")
    out(f"kt_take = ({v}_top {better} {start}) | (({v}_top == {start}) & ({loc}_top {earlier} {start_loc}))")
    out(f"{v}_out = torch.where(kt_take, {v}_top, {start})")
    out(f"{loc}_out = torch.where(kt_take, {loc}_top.to({TORCH_DTYPE[r.loc_dtype]}), {start_loc})")
    for name, dtype in pair_names(r):
        pending.add(name, dtype)


def pushed(name: str, dtype: ir.DType) -> str:
    """The line that puts the host value of ``name`` in its tensor, so that it is pending on this path as
    on another that joins it."""
    return f"{py_name(name)}_out = torch.full((), {py_name(name)}, dtype={TORCH_DTYPE[dtype]}, device=dev)"


def joined_if(out: Lines, pending: PendingScalars, known: Known, cond: str, then: Callable[[], None],
              orelse: Callable[[], None] | None, ends: tuple[bool, bool]) -> None:
    """An IF whose branches both start from what is pending (and known) before it; where they
    join, a name pending at the end of one that does not return is put in its tensor at the
    end of the others (``targets.triton_pending``). ``ends``: whether each branch returns."""
    before, knew = pending.snapshot(), known.snapshot()
    with out.block(f"if {cond}:"):
        then()
        ends_at = [(len(out.lines), out.level, pending.snapshot(), known.snapshot())]
    pending.restore(before)
    known.restore(knew)
    if orelse is not None:
        with out.block("else:"):
            orelse()
            ends_at.append((len(out.lines), out.level, pending.snapshot(), known.snapshot()))
    else:
        ends_at.append((-1, out.level + 1, before, knew))  # -1: no ELSE in the source
    live = [end for end, returns in zip(ends_at, ends, strict=True) if not returns]
    joined: dict[str, ir.DType] = {}
    for _, _, state, _ in live:
        joined.update(state)
    for at, level, state, _ in reversed(live):  # the ELSE's lines first: the THEN's index holds
        missing = [pushed(n, dt) for n, dt in joined.items() if n not in state]
        if missing and at < 0:
            out("else:")
            at = len(out.lines)
        out.lines[at:at] = ["    " * level + line for line in missing]
    pending.restore(joined if live else before)
    known.join([k for _, _, _, k in live])


def stmts_return(stmts: tuple[ir.Stmt, ...]) -> bool:
    """Whether host statements end in a return on every path (code after them does not run)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ir.Return, ir.ErrorCall)) or (isinstance(last, ir.HostCall) and last.kind == "stop"):
        return True
    return isinstance(last, ir.If) and stmts_return(last.then) and stmts_return(last.orelse)


def segments_return(segments: tuple[Segment, ...]) -> bool:
    """:func:`stmts_return` for a segment list."""
    if not segments:
        return False
    last = segments[-1]
    if isinstance(last, HostBlock):
        return stmts_return(last.stmts)
    return isinstance(last, HostIf) and segments_return(last.then) and segments_return(last.orelse)
