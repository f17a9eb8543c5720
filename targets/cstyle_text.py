"""Fixed C++ text the C-style targets (CUDA, Kokkos) emit as it is: the helper functions a
translation may use (``{q}``: the target's qualifier of device-callable functions) and the
weak declarations through which a shim finds a migrated program's data region runtime."""

from __future__ import annotations

from types import MappingProxyType

PRESENT_DECL = """\
// the data region of a migrated program (its kt_data runtime, linked into the program only): a
// host array's buffer in device memory while a region is open, else null (copied per call);
// writes: 0 the call only reads it, 1 it writes it, 2 it sets every element before reading any
extern "C" void* kt_present(const void* host, size_t bytes, int writes) __attribute__((weak));
// the region's clock of its calls' time in the kernels (the same runtime: it reads the clock)
extern "C" void kt_call_begin() __attribute__((weak));
extern "C" void kt_call_end(const char* routine) __attribute__((weak));"""

HELPERS = MappingProxyType({
    "kt_min": "template <typename T>\n{q} T kt_min(T a, T b) {{ return b < a ? b : a; }}",
    "kt_max": "template <typename T>\n{q} T kt_max(T a, T b) {{ return a < b ? b : a; }}",
    "kt_sign": "// Fortran SIGN for integers: |a| with the sign of b (b >= 0 gives +|a|)\n"
               "template <typename T>\n{q} T kt_sign(T a, T b) {{\n    const T m = a < T(0) ? -a : a;\n"
               "    return b < T(0) ? -m : m;\n}}",
    "kt_ipow": "// integer power, exponent >= 0 (a negative one truncates to 0 as Fortran does, except for |b| = 1)\n"
               "template <typename T>\n{q} T kt_ipow(T b, int e) {{\n    if (e < 0) return (b == 1 || b == -1) ? "
               "((e % 2 == 0) ? T(1) : b) : T(0);\n    T r = 1;\n    while (e > 0) {{\n"
               "        if (e & 1) r *= b;\n        b *= b;\n        e >>= 1;\n    }}\n    return r;\n}}",
    "kt_lsame": "// BLAS LSAME: case-insensitive comparison of two characters\n"
                "{q} bool kt_lsame(char a, char b) {{\n    const char ua = (a >= 'a' && a <= 'z') ? char(a - 32) : a;\n"
                "    const char ub = (b >= 'a' && b <= 'z') ? char(b - 32) : b;\n    return ua == ub;\n}}",
    "kt_trip": "// trip count of the half-open loop start, start+step, ... towards stop (0 if empty)\n"
               "{q} int kt_trip(int start, int stop, int step) {{\n"
               "    if (step > 0) return stop > start ? (stop - start + step - 1) / step : 0;\n"
               "    return start > stop ? (start - stop - step - 1) / (-step) : 0;\n}}",
})
