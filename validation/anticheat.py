"""Static anti-cheat check applied to every kernel an LLM writes, before it is validated or timed.

``check(text, ctx)`` strips comments and string literals (Python through :mod:`tokenize`, C/C++
through a small lexer; both keep line numbers) and reports violations of five rules:

``calls-reference``  a call of a reference name: an identifier equal to one of ``ctx.reference_names``
    or that name with one or two trailing underscores (Fortran symbol mangling), followed by ``(``;
    case-insensitive unless ``ctx.replaces_torch``. An identifier that merely contains the name is the
    candidate's own (``kt_NAME``, ``NAME_cuda``, ``NAME_kokkos``, ``NAME_triton``, ``NAME_kernel``,
    ``NAME_loop1``); reference names shaped like that are ignored. Not flagged: definitions (``def
    NAME(``, a C++ function body), bare calls of a name the file itself defines (recursion) and calls
    qualified by a library (``tl.``, ``triton.``, ``math.``, ``torch.``, ``F.``, ``std::``, ...: torch
    is judged by the torch rule). Flagged wherever it appears: the validation's reference wrapper
    (``kt_ref_*``, ``ktref_*``); imports naming a reference name; dynamic loading or running other code
    (dlopen/dlsym, ctypes, cffi, importlib, ``__import__``, f2py, subprocess, os.system, system(),
    popen, exec/eval); numpy/scipy imports in a Triton file; with ``ctx.replaces_torch``: torch compute
    ops (``torch.OP`` / ``F.OP`` called or aliased, ``from torch... import OP``, and ``x.OP(`` and ``@`` outside
    ``@triton.jit`` functions, where they are Triton's own, for the ops in ``TORCH_OPS``; ``nn.``
    classes, ``Model(``, ``.forward(``, torch.compile/jit/ops, libtorch in C++). Allocation, view and
    conversion ops (empty, zeros, full, arange, view, reshape, contiguous, stride, numel, to, item,
    copy_) are allowed.
``fallback``  Python ``try:``/``except``, ``contextlib.suppress``, ``if`` statements testing the device
    (``torch.cuda.is_available()``, ``.is_cuda``, ``.device.type``; a ternary choosing ``torch.device``
    is allowed), C++ ``try {``/``catch (``, crash-signal handlers (signal, sigaction, setjmp), and in
    C++ an ``if``/``else`` on a CUDA error status (``cudaSuccess``, ``cudaGetLastError``, ...) whose body
    calls anything but error reporting and cleanup (printf family, cudaGetErrorString, cudaFree*,
    free, abort, exit, throwing ``std::*_error``, ``*CHECK*`` macros).
``timing-trick``  time/perf_counter/sleep, threading and friends, torch.cuda.synchronize/Stream/Event,
    monkey-patching torch/triton/time, functools caches, module-level empty containers, ``global``,
    mutable default arguments; CUDA events, cudaStreamCreate*, cudaDeviceSynchronize,
    cudaStreamSynchronize of the default/per-thread stream (synchronizing a stream variable, the
    launcher's ``stream``, is allowed), cudaStreamPerThread/Legacy/NonBlocking, clock()/clock64(),
    ``__nanosleep``, globaltimer (also inside inline-asm strings), std::chrono/thread/async, Kokkos
    timers and profiling hooks, ``static`` variables (``static constexpr`` and ``static const`` with a
    call-free initializer are allowed; static functions are fine), mutable namespace-scope variables
    (``__device__`` globals included; ``const``/``constexpr``/``__constant__`` are fine).
    cudaFuncSetAttribute, cudaGetDevice, cudaDeviceGetAttribute, cudaMallocAsync/cudaFreeAsync and
    Kokkos::fence are not flagged.
``hard-coded-shape``  an integer literal (code only) equal to one of ``ctx.sizes`` that is >= 16 and
    is not a power of two <= 1024 (those are block/tile sizes).
``hard-coded-output``  more than 16 numeric literals in one comma-separated list (brackets, braces,
    parentheses, signs and ``:`` may sit between them; any other token ends the list), a string literal
    holding more than 16 numbers, file reading (open(, np.load, torch.load, pickle, fopen, fread,
    ifstream, ...), ``golden`` or a data-file name (.npz, .npy, .pt, .pkl, .h5, .bin, .dat, .csv) inside
    a string, and environment variables (os.environ, getenv).
"""

from __future__ import annotations

import bisect
import io
import itertools
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from targets.base import TARGETS

RULES = ("calls-reference", "fallback", "timing-trick", "hard-coded-shape", "hard-coded-output")
# the source languages these rules read (a target's ``TargetInfo.language``); a target in
# another language is refused (check raises), never let through
LANGUAGES = {"c++": "cpp", "python": "py"}
LIST_LIMIT = 16  # numeric literals one list or string may hold
MIN_SIZE = 16  # smaller sizes are ordinary constants

TORCH_OPS = (
    "matmul", "mm", "bmm", "addmm", "addmv", "addbmm", "baddbmm", "mv", "dot", "vdot", "einsum", "tensordot",
    "outer", "linear", "bilinear", r"conv\w*", "softmax", "log_softmax", "softmin", r"\w*_norm", "normalize",
    r"relu\d?", "gelu", "silu", "mish", "elu", "selu", "celu", "leaky_relu", "prelu", "hardtanh", "hardswish",
    "hardsigmoid", "softplus", "softsign", "sigmoid", "logsigmoid", "tanh", "exp", "exp2", "expm1", "log",
    "log2", "log10", "log1p", "sqrt", "rsqrt", "pow", "square", "erf", "erfc", "sin", "cos", "abs", "sum",
    "nansum", "mean", "var", "std", "prod", "norm", "max", "min", "amax", "amin", "aminmax", "argmax", "argmin",
    "cumsum", "cumprod", "cummax", "logsumexp", "topk", "sort", "argsort", "kthvalue", "median", "clamp",
    "clip", "where", "add", "sub", "mul", "div", "addcmul", "addcdiv", "maximum", "minimum", r"\w*pool\dd",
    "scaled_dot_product_attention", "dropout", "cross_entropy", "nll_loss", r"\w+_loss", "kl_div",
    "cosine_similarity", "pairwise_distance", "cdist", "interpolate", "grid_sample", "embedding", "one_hot",
    "chain_matmul", "triu", "tril", "flip", "roll",
)
_TRITON_LIBS = frozenset({"tl", "triton", "libdevice", "math", "cmath"})
_LIBRARIES = _TRITON_LIBS | {"torch", "F", "nn", "np", "std", "Kokkos", "thrust", "cub", "at", "c10"}
_CPP_KEYWORDS = frozenset({"if", "for", "while", "switch", "return", "sizeof", "alignof", "decltype", "catch",
                           "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast", "throw", "else", "do",
                           "case", "new", "delete", "co_return", "defined"})
_ERROR_OK = re.compile(r"(std::)?(s?n?f?printf|fputs|puts|perror|cudaGetError\w*|cudaGetLastError|cudaFree\w*|free|"
                       r"abort|exit|assert|\w+_error|exception|to_string|string)|Kokkos::abort|\w*CHECK\w*")
_TORCH = "|".join(TORCH_OPS)
_TORCH_NS = r"((torch\.)?(nn\.functional|special|linalg|fft)|torch|F)"  # namespaces of functional torch ops
_IDENT_CALL = re.compile(r"(?<![\w$])([A-Za-z_]\w*)\s*\(")
_PP_NUMBER = re.compile(r"(?<![\w.])\.?\d(?:[eEpP][+-]|[\w.'])*")
_CPP_LEXEME = re.compile(r"""(?P<raw>(?:u8|[uUL])?R"(?P<d>[^()\\\s]{0,16})\(.*?\)(?P=d)")"""
                         r"""|(?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))|(?P<str>"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?)|[A-Za-z_]\w*|\.?\d(?:[eEpP][+-]|[\w.'])*""",
                         re.DOTALL)
_NUMBER_RUN = re.compile(r"(?<![\w.])(?:\.?\d(?:[eEpP][+-]|[\w.'])*+[\s,()\[\]{}+\-:]*+){" + str(LIST_LIMIT + 1) + ",}")
_PY_TEXT_TOKENS = frozenset({tokenize.COMMENT, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1)})
_INT = re.compile(r"(0[xX][0-9a-fA-F'_]+|0[bB][01'_]+|0[oO][0-7_]+|\d[\d'_]*)[uUlLzZ]*")


class _Pattern(NamedTuple):
    rule: str
    lang: str  # "py", "cpp" or "any"
    regex: re.Pattern[str]
    reason: str  # "{m}" is the matched text
    torch_only: bool = False


def _p(rule: str, lang: str, regex: str, reason: str, torch_only: bool = False) -> _Pattern:
    return _Pattern(rule, lang, re.compile(regex, re.MULTILINE), reason, torch_only)


_PATTERNS = (
    _p("calls-reference", "any", r"\bkt_?ref_\w*", "`{m}` is the validation's reference wrapper"),
    _p("calls-reference", "any", r"\b(dlopen|dlmopen|dlsym|LoadLibrary\w*|GetProcAddress)\s*\(|<dlfcn\.h>",
       "`{m}` loads a shared library at run time"),
    _p("calls-reference", "cpp", r"(?<![\w.])(system|popen|_popen|exec[lv]\w*|posix_spawn\w*|fork)\s*\(",
       "`{m}` runs another program"),
    _p("calls-reference", "py", r"\b(ctypes|cffi|importlib|runpy|subprocess|f2py|__import__)\b|\bsys\.modules\b"
       r"|\bos\.(system|popen|exec\w*|spawn\w*|fork)\b|(?<![\w.])(exec|eval|compile)\s*\(",
       "`{m}` loads or runs code other than this kernel"),
    _p("calls-reference", "py", r"^[ \t]*(import|from)\s+(numpy|scipy)\b",
       "`{m}`: numpy/scipy in a Triton kernel file would compute on the host, not in the kernel"),
    _p("calls-reference", "py", rf"(?<![\w.]){_TORCH_NS}\s*\.\s*({_TORCH})_?\b(\s*\()?"
       r"|\btorch\.(linalg|fft|compile|jit|ops|_C|_dynamo|_inductor)\b"
       rf"|^[ \t]*from\s+torch(\.\w+)*\s+import\s+[^\n]*\b({_TORCH})\b",
       "`{m}` is a torch compute op: the kernel must do this work itself", True),
    _p("calls-reference", "any", r"\b(torch\.)?nn\.[A-Z]\w*|\bModel\s*\(|\.\s*forward\s*\(",
       "`{m}` runs the PyTorch module this kernel replaces", True),
    _p("calls-reference", "cpp", r"\b(torch|at|c10)::\w+|<(torch|ATen)/",
       "`{m}` is libtorch: the kernel must do this work itself", True),
    _p("fallback", "py", r"^[ \t]*(try\s*:|except\b)|\bcontextlib\.suppress\b|\bsuppress\s*\(",
       "`{m}` can switch to another implementation when the kernel fails"),
    _p("fallback", "py", r"^[ \t]*(el)?if\b.*(torch\.cuda\.is_available|\.is_cuda\b|\.is_cpu\b|\.device\.type\b)",
       "`{m}` chooses between the kernel and another implementation by device"),
    _p("fallback", "py", r"^[ \t]*(import|from)\s+(signal|faulthandler)\b", "`{m}` intercepts crashes"),
    _p("fallback", "cpp", r"\btry\s*\{|\bcatch\s*\(", "`{m}` can switch to another implementation on an error"),
    _p("fallback", "cpp", r"\b(signal|sigaction|setjmp|longjmp|sigsetjmp|siglongjmp)\s*\(",
       "`{m}` intercepts crashes to recover from them"),
    _p("timing-trick", "py", r"^[ \t]*(import|from)\s+(time|timeit|threading|multiprocessing|concurrent|asyncio|"
       r"sched)\b|\btime\s*\.\s*\w+|(?<![\w.])(perf_counter(_ns)?|process_time|monotonic|sleep)\s*\(",
       "`{m}` measures or delays time or runs threads"),
    _p("timing-trick", "py", r"\btorch\.cuda\.(synchronize|[Ss]tream\w*|current_stream|set_stream|default_stream|"
       r"Event|graph|CUDAGraph|_sleep)\b|\btorch\.(Stream|Event)\b", "`{m}` interferes with synchronization"),
    _p("timing-trick", "py", r"^[ \t]*(torch|triton|tl|time|builtins|sys|os|np|numpy|functools)\.[\w.]+\s*=(?!=)"
       r"|\bsetattr\s*\(\s*(torch|triton|tl|time|builtins)\b", "`{m}` monkey-patches a library"),
    _p("timing-trick", "py", r"\b(lru_cache|cached_property|functools\.cache)\b|^[ \t]*@[ \t]*cache\b",
       "`{m}` caches results across calls"),
    _p("timing-trick", "py", r"^[A-Za-z_][\w.]*\s*(:[^=\n]+)?=\s*(\{\s*\}|\[\s*\]|(dict|list|set)\(\s*\)|"
       r"(collections\.)?(defaultdict|OrderedDict|Counter|deque)\(|(weakref\.)?Weak\w*\()",
       "`{m}`: a module-level container can cache results across calls"),
    _p("timing-trick", "py", r"^[ \t]*global\s+\w+", "`{m}` keeps state between calls"),
    _p("timing-trick", "cpp", r"\bcudaEvent\w*|\bcudaStreamCreate\w*|\bcudaDeviceSynchronize\b"
       r"|\bcudaThreadSynchronize\b|\bcudaStream(PerThread|Legacy|NonBlocking|WaitEvent|Query|AddCallback|BeginCapture|EndCapture)\b"
       r"|\bcudaStreamSynchronize\s*\(\s*(0|nullptr|NULL)\s*\)|\bcudaLaunchHostFunc\b|\bcudaProfiler\w*",
       "`{m}` interferes with timing or synchronization on the caller's stream"),
    _p("timing-trick", "cpp", r"\b(clock|clock64|clock_gettime|gettimeofday|__nanosleep|nanosleep|usleep|sleep|"
       r"timespec_get|time)\s*\(|\bglobaltimer\b|\bstd::(chrono|this_thread|thread|async|jthread)\b|\bpthread_\w+"
       r"|<(chrono|thread|future)>|\bKokkos::(Timer|Profiling|Tools)\b",
       "`{m}` measures or delays time or runs threads"),
    _p("hard-coded-output", "py", r"\bopen\s*\(|\bnp\.(load|loadtxt|fromfile|fromstring|frombuffer|genfromtxt|memmap)\b"
       r"|\btorch\.(load|from_file)\b|\bpickle\b|\bjson\.load|\bh5py\b|\bsafetensors\b|\bread_(csv|text|bytes)\b",
       "`{m}` reads a file: outputs must be computed, not loaded"),
    _p("hard-coded-output", "cpp", r"\b(fopen|fopen_s|freopen|fread|fscanf|fgets|mmap|open)\s*\(|\bi?fstream\b"
       r"|<fstream>", "`{m}` reads a file: outputs must be computed, not loaded"),
    _p("hard-coded-output", "any", r"\b(environ|(secure_)?getenv|putenv|_dupenv_s)\b",
       "`{m}` reads an environment variable"),
)
_STRING_PATTERNS = (
    _p("hard-coded-output", "any", r"golden|\.(npz|npy|pt|pth|pkl|pickle|h5|hdf5|bin|dat|csv)\b",
       "the string names a data file (`{m}`): outputs must be computed, not loaded"),
    _p("timing-trick", "any", r"globaltimer|%%?clock|nanosleep", "inline assembly `{m}` reads or delays time"),
)


@dataclass(frozen=True)
class Violation:
    rule: str  # one of RULES
    line: int  # 1-based line in the checked text
    text: str  # the offending source line, stripped
    reason: str  # a sentence a user understands, naming the construct


@dataclass(frozen=True)
class CheatContext:
    target: str  # "cuda" | "kokkos" | "triton"
    reference_names: tuple[str, ...]  # routine / module names the kernel replaces
    sizes: tuple[int, ...] = ()  # problem sizes the candidate was shown or validated at
    replaces_torch: bool = False  # the region came from a PyTorch module


class _Source(NamedTuple):
    lang: str  # "py" or "cpp"
    code: str  # comments removed, string contents blanked (quotes kept), same line structure
    strings: tuple[tuple[int, str], ...]  # (line, literal) of every string literal
    starts: tuple[int, ...]  # offset of each line

    def line(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos)


def _blank(s: str) -> str:
    return re.sub(r"[^\n]", " ", s)


def _strip_python(text: str) -> tuple[str, list[tuple[int, str]]]:
    offs = [0, *itertools.accumulate(len(line) for line in io.StringIO(text).readlines())]
    out, strings = list(text), []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type not in _PY_TEXT_TOKENS:
                continue
            a, b = offs[tok.start[0] - 1] + tok.start[1], offs[tok.end[0] - 1] + tok.end[1]
            out[a:b] = _blank(text[a:b])
            if tok.type != tokenize.COMMENT:
                strings.append((tok.start[0], tok.string))
                if tok.type == tokenize.STRING:
                    out[a], out[b - 1] = '"', '"'
    except (tokenize.TokenError, SyntaxError):
        pass  # keep what was stripped before the error
    return "".join(out), strings


def _strip_cpp(text: str) -> tuple[str, list[tuple[int, str]]]:
    out, strings, last = [], [], 0
    for m in _CPP_LEXEME.finditer(text):
        if m.lastgroup is None:
            continue  # an identifier or a number (digit separators are not character literals)
        out.append(text[last:m.start()])
        lit, last = m.group(), m.end()
        if m.lastgroup == "comment":
            out.append(_blank(lit))
        else:
            strings.append((text.count("\n", 0, m.start()) + 1, lit))
            out.append(lit[0] + _blank(lit[1:-1]) + lit[-1] if len(lit) > 1 else lit)
    out.append(text[last:])
    return "".join(out), strings


def _parse(text: str, target: str) -> _Source:
    info = TARGETS.get(target)
    if info is None or info.language not in LANGUAGES:
        known = [t.name for t in TARGETS.values() if t.language in LANGUAGES]
        raise ValueError(f"unknown target {target!r}: expected one of {', '.join(known)}")
    lang = LANGUAGES[info.language]
    code, strings = (_strip_python if lang == "py" else _strip_cpp)(text)
    starts = (0, *(m.end() for m in re.finditer("\n", code)))
    return _Source(lang, code, tuple(strings), starts)


def _closing(code: str, i: int) -> int:
    """Index just past the bracket matching the one at ``code[i]`` (end of text if unbalanced)."""
    pairs, depth = {"(": ")", "[": "]", "{": "}"}, 0
    opener, closer = code[i], pairs[code[i]]
    for j in range(i, len(code)):
        depth += (code[j] == opener) - (code[j] == closer)
        if depth == 0:
            return j + 1
    return len(code)


def _no_preprocessor(code: str) -> str:
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: _blank(m.group()), code, flags=re.MULTILINE)


def _is_own(name: str) -> bool:
    return bool(re.match(r"kt_(?!ref_)|.*_(cuda|kokkos|triton|kernel)$", name, re.IGNORECASE))


def _cpp_definition(code: str, m: re.Match[str]) -> bool:
    """A function definition ``type name(...) {`` rather than a call or a declaration."""
    before = re.search(r"([\w*&>]+)\s*$", code[max(0, m.start() - 120):m.start()])
    if not before or before.group(1) in _CPP_KEYWORDS:
        return False
    after = code[_closing(code, m.end() - 1):]
    return bool(re.match(r"(\s|\bconst\b|\bnoexcept\b|\boverride\b|\bfinal\b|->\s*[\w:<>*& ]+)*\{", after))


def _reference_calls(src: _Source, ctx: CheatContext) -> Iterator[tuple[int, str]]:
    names = [n for n in ctx.reference_names if n and not _is_own(n)]
    if not names:
        return
    ref = re.compile("|".join(rf"{re.escape(n)}_{{0,2}}" for n in names), 0 if ctx.replaces_torch else re.IGNORECASE)
    code = src.code
    calls = [m for m in _IDENT_CALL.finditer(code) if ref.fullmatch(m.group(1))]
    if src.lang == "py":
        defined = {m.group(1) for m in re.finditer(r"\b(?:def|class)\s+(\w+)", code)}
        definitions = {m.start() for m in calls
                       if re.search(r"\b(def|class)\s+$", code[max(0, m.start() - 40):m.start()])}
    else:
        definitions = {m.start() for m in calls if _cpp_definition(code, m)}
        defined = {m.group(1) for m in calls if m.start() in definitions}
    for m in calls:
        ident = m.group(1)
        qual = re.search(r"(\w+)\s*(?:\.|::|->)(?:\s*\w+\s*(?:\.|::|->))*\s*$", code[max(0, m.start() - 200):m.start()])
        if m.start() in definitions or (qual and qual.group(1) in _LIBRARIES) or (not qual and ident in defined):
            continue
        yield m.start(1), f"`{ident}(` calls {ident.rstrip('_')}, the routine this kernel replaces"
    if src.lang == "py":
        for m in re.finditer(r"^[ \t]*(from\s+[\w.]+\s+)?import\s+[^\n]*", code, re.MULTILINE):
            hit = next((w for w in re.findall(r"\w+", m.group()) if ref.fullmatch(w)), None)
            if hit:
                yield m.start(), f"`{m.group().strip()}` imports {hit}, the reference this kernel replaces"


def _jit_bodies(code: str) -> list[tuple[int, int]]:
    """Offsets of the ``@triton.jit`` functions (their own tensor methods and ``@`` are Triton's)."""
    spans = []
    decorated = r"^[ \t]*@[ \t]*(triton\.)?jit\b[^\n]*\n(?:[ \t]*@[^\n]*\n)*([ \t]*)def\b"
    for m in re.finditer(decorated, code, re.MULTILINE):
        indent = len(m.group(2))
        end = re.compile(rf"^[ \t]{{0,{indent}}}(?=\S)", re.MULTILINE).search(code, m.end())
        spans.append((m.start(), end.start() if end else len(code)))
    return spans


def _torch_host_ops(src: _Source) -> Iterator[tuple[int, str]]:
    """Tensor-method compute ops and ``@`` outside the Triton kernels (with ``ctx.replaces_torch``)."""
    jit = _jit_bodies(src.code)
    ops = re.finditer(rf"([\w.]*[\w)\]])\s*\.\s*({_TORCH})_?\s*\(|(?<=[\w)\]])[ \t]*(@)=?[ \t]*(?=[\w(])", src.code)
    for m in ops:
        receiver = m.group(1) or ""
        if any(a <= m.start() < b for a, b in jit) or receiver.split(".")[0] in _TRITON_LIBS \
                or re.fullmatch(_TORCH_NS, receiver):  # functional torch ops are the pattern's
            continue
        op = f".{m.group(2)}(" if m.group(2) else "@"
        yield m.start(2 if m.group(2) else 3), f"`{op}` is a torch compute op: the kernel must do this work itself"


def _literal_lists(code: str) -> Iterator[tuple[int, str]]:
    for m in _NUMBER_RUN.finditer(code):
        count = len(_PP_NUMBER.findall(m.group()))
        yield m.start(), f"a list of {count} numeric literals can hard-code outputs"


def _int_value(tok: str) -> int | None:
    if not _INT.fullmatch(tok):
        return None
    digits = re.sub(r"[uUlLzZ]+$", "", tok.replace("'", "").replace("_", ""))
    return int(digits, 8) if len(digits) > 1 and digits.isdigit() and digits[0] == "0" else int(digits, 0)


def _shapes(src: _Source, ctx: CheatContext) -> Iterator[tuple[int, str]]:
    sizes = {s for s in ctx.sizes if s >= MIN_SIZE and not (s <= 1024 and s & (s - 1) == 0)}
    for m in _PP_NUMBER.finditer(src.code) if sizes else ():
        if _int_value(m.group()) in sizes:
            yield m.start(), f"the literal {m.group()} equals a problem size: shapes must come from the arguments"


def _cpp_state(code: str) -> Iterator[tuple[int, str]]:
    """``static`` variables and mutable namespace-scope variables (state that survives between calls)."""
    for m in re.finditer(r"\bstatic\b", code):
        head = re.match(r"[^(=;\[{]*", code[m.start():]).group()
        rest = code[m.start() + len(head):]
        if rest[:1] in ("(", "") or re.search(r"\b(constexpr|__shared__)\b", head):
            continue
        init = rest[:max(rest.find(";"), 0)]
        if re.search(r"\bconst\b", head) and "(" not in init:
            continue
        yield m.start(), f"`{head.strip()}` is a static variable: it keeps values (results) between calls"
    stack: list[str] = []
    start = 0
    for brace in re.finditer(r"[{};]", code):
        i, ch = brace.start(), brace.group()
        if ch == "{":
            head = code[start:i]
            if re.search(r'(\bnamespace\b[\w:\s]*|\bextern\s*"\s*"\s*)$', head):
                stack.append("ns")
                start = i + 1
            else:
                stack.append("init" if head.rstrip()[-1:] in ("=", ",", "(") or stack[-1:] == ["init"] else "blk")
        elif ch == "}":
            if (stack.pop() if stack else "blk") != "init":
                start = i + 1
        elif ch == ";" and all(k == "ns" for k in stack):
            raw = code[start:i]
            stmt, pos, start = raw.strip(), start + len(raw) - len(raw.lstrip()), i + 1
            decl = stmt.split("=")[0]
            if (not stmt or "(" in decl or re.search(r"\b(const|constexpr|__constant__|static)\b", decl)
                    or re.match(r"(using|typedef|template|namespace|struct|class|union|enum|extern|static_assert|"
                                r"friend)\b", stmt)):
                continue
            yield pos, f"`{decl.strip()}` is a mutable file-scope variable: it keeps values (results) between calls"


def _cpp_error_fallbacks(code: str) -> Iterator[tuple[int, str]]:
    """Calls in an ``if``/``else`` on a CUDA error status (a literal status or a ``cudaError_t`` variable)."""
    status = "".join(f"|\\b{v}\\b" for v in set(re.findall(r"\bcudaError_t\s*&?\s*(\w+)", code)))
    err = re.compile(r"\bcuda(Success|GetLastError|PeekAtLastError|Error\w*)\b|\bCUDA_SUCCESS\b" + status)
    for m in re.finditer(r"\bif\s*(constexpr\s*)?\(", code):
        cond_end = _closing(code, m.end() - 1)
        if not err.search(code[m.end():cond_end]):
            continue
        end = cond_end
        for _ in range(2):  # the branch, then an else branch
            body = re.match(r"\s*(\{)?", code[end:])
            stop = _closing(code, end + body.start(1)) if body.group(1) else code.find(";", end) + 1 or len(code)
            for c in _IDENT_CALL.finditer(code, end, stop):
                full = re.search(r"[\w:]*$", code[max(0, c.start(1) - 80):c.start(1)]).group() + c.group(1)
                if c.group(1) not in _CPP_KEYWORDS and not _ERROR_OK.fullmatch(full):
                    yield c.start(1), f"`{full}(` runs when a CUDA error is detected: a fallback implementation"
            end = stop
            other = re.match(r"\s*else\b", code[end:])
            if not other:
                break
            end += other.end()


def _py_state(code: str) -> Iterator[tuple[int, str]]:
    for m in re.finditer(r"\bdef\s+\w+\s*\(", code):
        params = code[m.end():_closing(code, m.end() - 1) - 1]
        d = re.search(r"=\s*(\{|\[|(dict|list|set|defaultdict|OrderedDict)\s*\()", params)
        if d:
            yield m.end() + d.start(), "a mutable default argument keeps values (results) between calls"


def check(text: str, ctx: CheatContext) -> list[Violation]:
    """Every violation of the anti-cheat rules in ``text``, a kernel file for ``ctx.target``, by line."""
    src = _parse(text, ctx.target)
    found: list[tuple[str, int, str]] = []
    for pat in _PATTERNS:
        if pat.lang in ("any", src.lang) and (ctx.replaces_torch or not pat.torch_only):
            found += [(pat.rule, m.start(), pat.reason.format(m=" ".join(m.group().split())))
                      for m in pat.regex.finditer(src.code)]
    hits: list[tuple[str, Iterator[tuple[int, str]]]] = [
        ("calls-reference", _reference_calls(src, ctx)), ("hard-coded-shape", _shapes(src, ctx)),
        ("hard-coded-output", _literal_lists(src.code))]
    if ctx.replaces_torch and src.lang == "py":
        hits.append(("calls-reference", _torch_host_ops(src)))
    if src.lang == "cpp":
        structural = _no_preprocessor(src.code)
        hits += [("timing-trick", _cpp_state(structural)), ("fallback", _cpp_error_fallbacks(structural))]
    else:
        hits.append(("timing-trick", _py_state(src.code)))
    found += [(rule, pos, reason) for rule, it in hits for pos, reason in it]
    lines = text.split("\n")
    result = {Violation(rule, src.line(pos), lines[src.line(pos) - 1].strip(), reason) for rule, pos, reason in found}
    for line, literal in src.strings:
        for pat in _STRING_PATTERNS:
            result |= {Violation(pat.rule, line, lines[line - 1].strip(), pat.reason.format(m=m.group()))
                       for m in pat.regex.finditer(literal)}
        numbers = len(re.findall(r"(?<![\w.])[-+]?\d+(\.\d*)?([eE][-+]?\d+)?", literal))
        if numbers > LIST_LIMIT:
            reason = f"a string literal holding {numbers} numbers can hard-code outputs"
            result.add(Violation("hard-coded-output", line, lines[line - 1].strip(), reason))
    return sorted(result, key=lambda v: (v.line, v.rule, v.reason))
