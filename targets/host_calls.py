"""Host-side statements that are not translated (``ir.HostCall``), as C++ host code.

* "call": the routine stays where it is (a timer, an I/O helper of the program). The
  generated code calls it through a weak declaration of its gfortran link name
  (``name_`` for an external procedure, ``__module_MOD_name`` for a module procedure),
  so the translation links alone (then the call is skipped) and, linked into the
  program, calls the original. Arguments go by reference, as Fortran passes them.
* "print": WRITE/PRINT of scalars and text: printed with ``std::printf``, list-directed.
* "stop": STOP: the message on stderr, then the program ends as the source's does.

The Python launcher (Triton) cannot call a Fortran routine; it prints and stops the same way
and names the calls it leaves out in its notes.
"""

from __future__ import annotations

from collections.abc import Callable

from translate import ir
from translate.ir import DType

# C types of arguments passed by reference to a Fortran routine (LOGICAL is a 4-byte integer)
FORTRAN_C_TYPES = {DType.F64: "double", DType.F32: "float", DType.I32: "int", DType.I64: "long long",
                   DType.BOOL: "int"}


def link_name(s: ir.HostCall) -> str:
    """gfortran's symbol of the routine a host call names."""
    name = s.routine.lower()
    return f"__{s.module.lower()}_MOD_{name}" if s.module else f"{name}_"


def callable_from_c(s: ir.HostCall) -> bool:
    """Numeric scalar arguments only (CHARACTER arguments carry hidden lengths), and not a
    procedure inside a main program (it has no symbol of its own)."""
    return (s.kind == "call" and not s.module.startswith("program:")
            and all(a.dtype in FORTRAN_C_TYPES for a in s.args))


def declaration(s: ir.HostCall) -> str:
    args = ", ".join(f"{FORTRAN_C_TYPES[a.dtype]}*" for a in s.args) or "void"
    return f'extern "C" void {link_name(s)}({args}) __attribute__((weak));'


def cpp_lines(s: ir.HostCall, expr: Callable[[ir.Expr], str], var: Callable[[str], str],
              writable: Callable[[str], bool], where: str) -> list[str]:
    """The C++ statements of one host call (``writable``: a host variable the call may write back to)."""
    if s.kind == "print":
        return [_printf(s.args, expr, s.routine if s.routine in ("stdout", "stderr") else "stdout")]
    if s.kind == "stop":
        code = next((a for a in s.args if a.dtype.is_int), None)
        text = [a for a in s.args if a.dtype is DType.CHAR]
        lines = [_printf(tuple(text), expr, "stderr", prefix="STOP ")] if text else []
        return [*lines, f"std::exit({expr(code) if code is not None else 0});  // STOP ({where})"]
    if not callable_from_c(s):
        why = "it is internal to a main program" if s.module.startswith("program:") else \
            "it takes CHARACTER arguments"
        return [f"// CALL {s.routine.upper()} ({where}) is not called here: {why}"]
    fn = link_name(s)
    body = [f"{FORTRAN_C_TYPES[a.dtype]} kt_arg{k} = {expr(a)};" for k, a in enumerate(s.args)]
    body.append(f"if ({fn}) {fn}({', '.join(f'&kt_arg{k}' for k in range(len(s.args)))});")
    for k, a in enumerate(s.args):
        if isinstance(a, ir.Var) and a.name in s.writes and writable(a.name):
            body.append(f"{var(a.name)} = kt_arg{k};")
    return [f"{{  // CALL {s.routine.upper()} ({where}): the original routine, where the program links it",
            *("  " + b for b in body), "}"]


def device_printf(s: ir.HostCall, expr: Callable[[ir.Expr], str]) -> str:
    """Output in device code: ``printf`` (CUDA and Kokkos device code have no streams)."""
    return _printf(s.args, expr, "", prefix="")


def _printf(args: tuple[ir.Expr, ...], expr: Callable[[ir.Expr], str], stream: str, prefix: str = "") -> str:
    fmt: list[str] = []
    values: list[str] = []
    for a in args:
        if a.dtype is DType.CHAR and isinstance(a, ir.Const):
            fmt.append(str(a.value).replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%"))
        elif a.dtype is DType.CHAR:
            fmt.append("%c")
            values.append(expr(a))
        elif a.dtype is DType.BOOL:
            fmt.append("%s")
            values.append(f'({expr(a)} ? "T" : "F")')
        elif a.dtype.is_int:
            fmt.append("%lld")
            values.append(f"(long long)({expr(a)})")
        else:
            fmt.append("%.17g")
            values.append(f"(double)({expr(a)})")
    text = prefix + " ".join(fmt)
    if not stream:
        return f'printf("{text}\\n"{"".join(", " + v for v in values)});'
    return f'std::fprintf({stream}, "{text}\\n"{"".join(", " + v for v in values)});'


def python_lines(s: ir.HostCall, expr: Callable[[ir.Expr], str], where: str) -> list[str]:
    """The Python launcher's lines of one host call."""
    if s.kind == "print":
        return [f"print({', '.join(expr(a) for a in s.args)})"]
    if s.kind == "stop":
        return [f"raise SystemExit({', '.join(expr(a) for a in s.args) or '0'})  # STOP ({where})"]
    return [f"pass  # CALL {s.routine.upper()}({', '.join(expr(a) for a in s.args)}) ({where}): a Fortran routine,"
            " not called from Python"]
