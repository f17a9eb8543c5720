"""What a built C++/CUDA candidate calls, read from its object file, against an allowlist.

A text filter looks at spelling; a name pasted by the preprocessor, declared by hand or
reached through a macro still ends up as an undefined symbol of the compiled object. So a
candidate is compiled to an object first (``-c``), its undefined symbols are read with
``nm`` and demangled with ``c++filt``, and each must be one the target's runtime needs:

- the target's runtime: Kokkos (``Kokkos::``), the CUDA runtime API (``cuda*``, and the
  ``__cuda*`` registration calls nvcc emits), OpenMP (``omp_*``, ``GOMP_*``), and the weak
  ``kt_present``, ``kt_call_begin`` and ``kt_call_end`` of a migrated program's data regions (``targets.data_runtime``);
- the C++ standard library and its ABI (``std::``, ``operator new/delete``, ``__cxa_*``,
  ``_Unwind_*``, type information), but not its threads, clocks, files or processes;
- libm (``MATH``) and a small part of libc (``LIBC``: memory, formatted printing, exit);
- weak references to the routines the region's host code calls (``extern_ok``, from
  ``ir.HostCall``: the program's timers and I/O helpers).

Everything else is refused with what it is: the Python C API, dynamic loading, processes,
sockets, files, clocks, signals, the CUDA driver API. ``check_object`` returns the refusals
(empty when the object passes), each naming the symbol and why.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

MATH = frozenset(
    f + s for f in (
        "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "sqrt", "cbrt", "hypot", "fabs", "fmod",
        "remainder", "floor", "ceil", "round", "lround", "llround", "trunc", "rint", "lrint", "llrint", "nearbyint",
        "fmax", "fmin", "fdim", "fma", "erf", "erfc", "tgamma", "lgamma", "copysign", "frexp", "ldexp", "modf",
        "scalbn", "ilogb", "logb", "nextafter", "sincos", "nan", "signbit", "isnan", "isinf", "finite")
    for s in ("", "f", "l")) | {"__isnan", "__isinf", "__isnanf", "__isinff", "__finite", "__finitef"}
LIBC = frozenset({
    "memcpy", "memmove", "memset", "memcmp", "strlen", "strcmp", "strncmp", "strchr", "strerror",
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign",
    "printf", "fprintf", "sprintf", "snprintf", "vsnprintf", "vfprintf", "puts", "fputs", "fputc", "putchar", "fflush",
    "fwrite", "stdout", "stderr", "abort", "exit", "_exit", "atexit", "__cxa_atexit", "__cxa_finalize",
    "__dso_handle", "__stack_chk_fail", "__assert_fail", "__tls_get_addr", "_GLOBAL_OFFSET_TABLE_",
    "__printf_chk", "__fprintf_chk", "__sprintf_chk", "__snprintf_chk", "__vsnprintf_chk", "__vfprintf_chk",
    "__memcpy_chk", "__memmove_chk", "__memset_chk", "__errno_location", "abs", "labs", "llabs", "qsort",
    # weak references libstdc++'s headers make to the thread library (std::call_once, static locals)
    "__pthread_key_create", "pthread_once", "pthread_mutex_lock", "pthread_mutex_unlock", "pthread_key_create",
    "pthread_getspecific", "pthread_setspecific", "__gmon_start__", "_ITM_registerTMCloneTable",
    "_ITM_deregisterTMCloneTable", "strtol", "strtod",
})
RUNTIME_PATTERNS = (
    r"Kokkos::.*", r"Kokkos_Profiling_\w+", r"(typeinfo|typeinfo name|vtable|VTT|guard variable) for .*",
    r"operator (new|delete)(\[\])?\(.*", r"__cxa_\w+", r"__gxx_personality_v0", r"_Unwind_\w+",
    r"__cudaRegister\w+", r"__cudaUnregisterFatBinary", r"__cuda(Push|Pop)CallConfiguration", r"__cudaGetKernel",
    r"__cudaLaunchKernel\w*", r"__cudaInitModule", r"cuda(?!Event|LaunchHostFunc|StreamAddCallback|Graph)\w+",
    r"omp_\w+", r"GOMP_\w+", r"std::.*", r"__gnu_cxx::.*", r"__cxxabiv1::.*",
    r"kt_present", r"kt_call_begin", r"kt_call_end",  # the shims' weak references to a migrated program's data runtime
)
# inside the allowed families, what is still refused (the standard library's threads, clocks,
# files, processes, randomness from the system), with the reason the message gives
REFUSED = (
    (r"std::(thread|jthread|this_thread)\b.*|.*std::chrono::.*_clock::now.*|pthread_create", "threads or clocks"),
    (r"std::(filesystem|__cxx11::basic_[io]?fstream|basic_[io]?fstream|basic_filebuf|__basic_file)\b.*", "files"),
    (r"std::random_device.*", "the system's randomness"),
    (r"cudaEvent\w*|cudaLaunchHostFunc|cudaStreamAddCallback|cudaGraph\w*", "CUDA events, graphs or host callbacks"),
)
FAMILIES = (  # why a symbol outside the allowlist is refused, for the message
    (r"_?Py\w+|_Py\w+", "the Python C API"),
    (r"dl(open|sym|close|error|info|vsym|mopen)|__libc_dl\w+", "dynamic loading"),
    (r"system|popen|pclose|fork|vfork|exec\w*|posix_spawn\w*|clone\w*|kill|wait\w*|syscall", "running processes"),
    (r"socket|connect|bind|listen|accept\w*|send\w*|recv\w*|getaddrinfo|gethostbyname\w*", "the network"),
    (r"f?open\w*|creat|read|pread\w*|fread|fgets|fscanf|scanf|getline|mmap\w*|stat\w*|access|unlink|"
     r"getenv|secure_getenv|environ", "files or the environment"),
    (r"time|clock\w*|gettimeofday|nanosleep|usleep|sleep|timer_\w+|__rdtsc", "clocks or sleeping"),
    (r"signal|sigaction|setjmp|longjmp|_setjmp|__sigsetjmp|siglongjmp|mprotect", "signals or jumps"),
    (r"cu[A-Z]\w*", "the CUDA driver API"),
)


def undefined_symbols(obj: Path) -> list[tuple[str, str, bool]]:
    """(mangled, demangled, weak) of every undefined symbol of an object file."""
    nm = shutil.which("nm")
    if nm is None:
        raise FileNotFoundError("nm (binutils) not found: the symbol check needs it")
    out = subprocess.run([nm, "-u", str(obj)], capture_output=True, text=True, timeout=60, check=True).stdout
    rows = [ln.split() for ln in out.splitlines() if ln.strip()]
    names = [(r[-1], r[0] in ("w", "v")) for r in rows if r]
    filt = shutil.which("c++filt")
    demangled = [n for n, _ in names]
    if filt and names:
        res = subprocess.run([filt], input="\n".join(n for n, _ in names), capture_output=True, text=True,
                             timeout=60, check=True).stdout.splitlines()
        if len(res) == len(names):
            demangled = res
    return [(m, d, w) for (m, w), d in zip(names, demangled, strict=True)]


def refusal(mangled: str, demangled: str, weak: bool, extern_ok: Iterable[str] = ()) -> str:
    """Why the object may not call this symbol ("" when it may)."""
    name = mangled.split("@", 1)[0]
    for pattern, what in REFUSED:
        if re.fullmatch(pattern, demangled) or re.fullmatch(pattern, name):
            return f"`{demangled}` ({what})"
    if name in LIBC or name in MATH or (weak and name in set(extern_ok)):
        return ""
    if any(re.fullmatch(p, demangled) for p in RUNTIME_PATTERNS):
        return ""
    for pattern, what in FAMILIES:
        if re.fullmatch(pattern, name):
            return f"`{demangled}` ({what})"
    return f"`{demangled}` (not part of the target's runtime, the C++ standard library or libm)"


def check_object(obj: Path, extern_ok: Iterable[str] = ()) -> list[str]:
    """The refused symbols of a compiled candidate, each with why (empty: it passes)."""
    allowed = set(extern_ok)
    found = [refusal(m, d, w, allowed) for m, d, w in undefined_symbols(obj)]
    return sorted({f for f in found if f})
