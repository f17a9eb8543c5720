"""Fortran wrappers that make any routine callable through f2py.

For each kernel a subroutine ``kt_ref_NAME`` takes every parameter
explicitly: arrays flat (``dimension(ktn_X)``, passed in place, Fortran
order), out/inout scalars as 1-element arrays, CHARACTER*1 flags as
``character(len=1)``, COMMON-block, module and main-program variables
(``binding``; a program's from its ``kt_host_`` module, see
:mod:`validation.fsources`) as extra arguments ``kv_X`` that are copied in
before the call and out after it, the extents of assumed-shape and allocatable
arrays (bound ``extent:<array>:<k>``) as arguments of the wrapper that give
those arrays their rank and shape, and a function's value stored into
``kt_result(1)``. Only the wrappers are
given to f2py (through a generated ``.pyf``), so f2py never has to parse the
project's own sources.
"""

from __future__ import annotations

from translate import ir
from validation.signature import ValidationError

FTYPE = {"f64": "real(8)", "f32": "real(4)", "i32": "integer(4)", "i64": "integer(8)", "bool": "logical",
         "char": "character(len=1)", "f16": "real(4)", "bf16": "real(4)"}

XERBLA_STUB = """\
      subroutine xerbla(srname, info)
      character*(*) srname
      integer info
      write(0, '(a,a,a,i3,a)') ' ** On entry to ', trim(srname),
     $     ' parameter number ', info, ' had an illegal value'
      end
"""

LSAME_STUB = """\
      logical function lsame(ca, cb)
      character ca, cb
      integer ia, ib
      ia = ichar(ca)
      ib = ichar(cb)
      if (ia .ge. 97 .and. ia .le. 122) ia = ia - 32
      if (ib .ge. 97 .and. ib .le. 122) ib = ib - 32
      lsame = ia .eq. ib
      end
"""

HOST_PREFIX = "kt_host_"


def host_module(program: str) -> str:
    """The module the reference build makes of main program ``program`` (its variables and
    contained procedures), see :mod:`validation.fsources`."""
    return f"{HOST_PREFIX}{program.lower()}"


def stubs_needed(defined: set[str]) -> dict[str, str]:
    """Stand-ins for the LAPACK error handlers the sources call but do not define
    (``defined``: every routine name the sources define, lower case)."""
    out = {}
    if "xerbla" not in defined:
        out["kt_xerbla_stub.f"] = XERBLA_STUB
    if "lsame" not in defined:
        out["kt_lsame_stub.f"] = LSAME_STUB
    return out


def _binding(p: ir.Decl) -> tuple[str, str] | None:
    if not p.binding:
        return None
    kind, _, rest = p.binding.partition(":")
    if kind == "common":
        return "common", rest.strip().strip("/").lower()
    if kind == "module":
        return "module", rest.strip().lower()
    if kind == "program":  # a main program's variable: the program is compiled as a module
        return "module", host_module(rest.strip())
    raise ValidationError(f"unknown binding '{p.binding}' of '{p.name}' (use common:/blk/, module:name "
                          "or program:name)")


def _shape_of(p: ir.Array, name: str) -> str:
    """The shape a global array is copied in with: its constant extents where the frontend
    knows them, so that an ALLOCATABLE module array not allocated yet is allocated by the
    assignment (``shape()`` of it would be undefined), else the array's own shape."""
    try:
        return "[" + ", ".join(str(int(ir.evaluate(e, {}))) for e in p.shape) + "]"  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError, ArithmeticError):
        return f"shape({name})"


def _constant_bounds(p: ir.Array) -> str | None:
    """``lo:hi`` per dimension where shape and lower bounds are constants, else None."""
    try:
        out = []
        for k, e in enumerate(p.shape):
            lo = int(ir.evaluate(p.lower[k], {})) if k < len(p.lower) else 1  # type: ignore[arg-type]
            out.append(f"{lo}:{lo + int(ir.evaluate(e, {})) - 1}")  # type: ignore[arg-type]
        return ", ".join(out)
    except (KeyError, TypeError, ValueError, ArithmeticError):
        return None


def _extents(kernel: ir.Kernel) -> dict[str, list[str]]:
    """Assumed-shape and allocatable arrays -> the parameters giving their extents, in order
    (bound "extent:<array>:<k>": the caller passes size(array, k))."""
    found: dict[str, dict[int, str]] = {}
    for p in kernel.params:
        kind, _, rest = (p.binding or "").partition(":")
        if kind == "extent":
            array, _, k = rest.rpartition(":")
            found.setdefault(array.lower(), {})[int(k)] = p.name.lower()
    return {a: [ks[k] for k in sorted(ks)] for a, ks in found.items()}


def _bounds(p: ir.Array, extents: list[str]) -> str:
    """``lo:lo+n-1`` per dimension of an array allocated from its extent parameters, with the
    lower bounds it is declared with where they are constants."""
    out = []
    for k, n in enumerate(extents):
        try:
            lo = int(ir.evaluate(p.lower[k], {})) if k < len(p.lower) else 1  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError, ArithmeticError):
            lo = 1
        out.append(n if lo == 1 else f"{lo}:{lo - 1}+{n}")
    return ", ".join(out)


def _lines(head: str, items: list[str], tail: str = "") -> list[str]:
    """``head`` + comma-separated ``items`` + ``tail`` with free-form continuations."""
    out, cur = [], "  " + head
    for k, it in enumerate(items):
        piece = it + (", " if k < len(items) - 1 else "")
        if len(cur) + len(piece) > 100:
            out.append(cur + "&")
            cur = "      & "
        cur += piece
    out.append(cur + tail)
    return out


def wrapper(kernel: ir.Kernel, units: dict[str, str | None]) -> str:
    """The Fortran source of ``kt_ref_NAME`` for one kernel."""
    name = kernel.name.lower()
    args: list[str] = []
    dims: list[str] = []
    decls: list[str] = []
    pre: list[str] = []
    post: list[str] = []
    actual: list[str] = []
    uses: dict[str, list[str]] = {}
    commons: dict[str, list[str]] = {}
    extents = _extents(kernel)
    pointers: list[str] = []
    for p in kernel.params:
        pn = p.name.lower()
        ft = FTYPE[p.dtype.value]
        if (p.binding or "").startswith("extent:"):  # size(array, k): the wrapper's argument, not the routine's
            args.append(pn)
            decls.append(f"  {ft}, intent(in) :: {pn}")
            continue
        bound = _binding(p)
        an = f"kv_{pn}" if bound else pn
        args.append(an)
        if isinstance(p, ir.Array) and p.complex:
            # the parts interleaved, as the routine's COMPLEX array holds them: seen as one
            dims.append(f"ktn_{an}")
            kind = 8 if p.dtype == ir.DType.F64 else 4
            decls += [f"  {ft}, intent(inout), target :: {an}(ktn_{an})", f"  complex({kind}), pointer :: kc_{an}(:)"]
            pointers.append(f"  call c_f_pointer(c_loc({an}), kc_{an}, [ktn_{an} / 2])")
            ref = f"kc_{an}"
            p = ir.replace(p, shape=p.shape[1:], lower=p.lower[1:])
        elif isinstance(p, ir.Array):
            dims.append(f"ktn_{an}")
            decls.append(f"  {ft}, intent(inout) :: {an}(ktn_{an})")
            ref = an
        elif p.intent == ir.Intent.IN or p.dtype == ir.DType.CHAR:
            decls.append(f"  {ft}, intent(in) :: {an}")
            ref = an
        else:
            decls.append(f"  {ft}, intent(inout) :: {an}(1)")
            ref = f"{an}(1)"
        if bound is None and isinstance(p, ir.Array) and pn in extents:
            # an assumed-shape or allocatable dummy: passed as an array of its rank and extents
            local = f"kt_{pn}"
            decls.append(f"  {ft}, allocatable :: {local}({', '.join(':' * len(extents[pn]))})")
            pre += [f"  allocate({local}({_bounds(p, extents[pn])}))", f"  {local} = reshape({an}, shape({local}))"]
            if p.intent.writes:
                post.append(f"  {an} = reshape({local}, [size({local})])")
            actual.append(local)
            continue
        if bound is None:
            actual.append(ref)
            continue
        kind, where = bound
        if kind == "module":
            uses.setdefault(where, []).append(pn)
        else:
            if isinstance(p, ir.Array):
                try:
                    size = 1
                    for e in p.shape:
                        size *= int(ir.evaluate(e, {}))  # type: ignore[arg-type]
                except KeyError:
                    raise ValidationError(f"COMMON array '{p.name}' of {kernel.name} needs a constant shape") from None
                decls.append(f"  {ft} :: {pn}({size})")
            else:
                decls.append(f"  {ft} :: {pn}")
            commons.setdefault(where, []).append(pn)
        is_arr = isinstance(p, ir.Array)
        if isinstance(p, ir.Array) and kind == "module":
            # always copied in: an output's unwritten elements come back as the caller's (the
            # poison a candidate sees too), and an unallocated ALLOCATABLE gets allocated
            if pn in extents:  # allocated here at the extents the case gives
                pre += [f"  if (allocated({pn})) deallocate({pn})", f"  allocate({pn}({_bounds(p, extents[pn])}))",
                        f"  {pn} = reshape({ref}, shape({pn}))"]
            elif p.allocatable and (fixed := _constant_bounds(p)) is not None:
                # allocated with the bounds of the program's ALLOCATE (an assignment would make them 1)
                pre += [f"  if (allocated({pn})) deallocate({pn})", f"  allocate({pn}({fixed}))",
                        f"  {pn} = reshape({ref}, shape({pn}))"]
            else:
                pre.append(f"  {pn} = reshape({ref}, {_shape_of(p, pn)})")
        elif p.intent.reads or not is_arr:
            if is_arr:
                pre.append(f"  {pn} = reshape({ref}, shape({pn}))")
            elif p.intent.reads:
                pre.append(f"  {pn} = {ref}")
        if p.intent.writes:
            post.append(f"  {ref} = reshape({pn}, [size({pn})])" if is_arr else f"  {ref} = {pn}")
    if kernel.result is not None:
        args.append("kt_result")
        decls.append(f"  {FTYPE[kernel.result.value]}, intent(inout) :: kt_result(1)")
    home = units.get(name)
    if home:
        uses.setdefault(home, []).append(name)
    lines = _lines(f"subroutine kt_ref_{name}(", args + dims, ")")
    if pointers:
        lines.append("  use iso_c_binding, only: c_f_pointer, c_loc")
    for m, vs in uses.items():  # continued: f2py compiles the wrappers at the standard line length
        lines += _lines(f"use {m}, only: ", vs)
    lines.append("  implicit none")
    lines += [f"  integer, intent(in) :: {d}" for d in dims]
    lines += decls
    for blk, vs in commons.items():
        lines += _lines(f"common /{blk}/ ", vs)
    if kernel.result is not None:
        if not home:
            lines.append(f"  {FTYPE[kernel.result.value]}, external :: {name}")
        lines += pointers + pre
        lines += _lines(f"kt_result(1) = {name}(", actual, ")")
    else:
        if not home:
            lines.append(f"  external :: {name}")
        lines += pointers + pre
        lines += _lines(f"call {name}(", actual, ")")
    lines += post
    lines.append(f"end subroutine kt_ref_{name}")
    return "\n".join(lines) + "\n"


def wrappers(kernels: list[ir.Kernel], units: dict[str, str | None]) -> str:
    """The wrappers of ``kernels``; ``units``: routine -> the module holding it (None: external)."""
    return "\n".join(wrapper(k, units) for k in kernels)
