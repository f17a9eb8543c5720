"""The portable regression suite's C++ side: per region a small driver that reads the golden
cases (the format of :mod:`validation.golden_export`), calls the region's ``kt_NAME`` shim and
judges its outputs as validation does; and the CMake project (CTest) that builds each driver
with the region's Kokkos or CUDA translation. Nothing in it needs Python or kernel-translate.
"""

from __future__ import annotations

from collections.abc import Iterable

from targets.base import shim_symbol
from targets.cmake import RELEASE_BY_DEFAULT, cmake_name, cuda_architectures, kokkos_link
from targets.cstyle import cname
from targets.kokkos import KokkosRenderer, abi_params
from translate import ir

_STORAGE = {"f64": "double", "f32": "float", "i32": "int", "i64": "long long", "bool": "int", "char": "char"}

RUNTIME = r"""namespace {

// one case file: its lines by kind and name (kt_golden_case format, validation/golden_export.py)
struct Case {
    std::string folder, name;
    std::map<std::string, std::vector<std::string>> items;  // "kind name" -> the rest of the line
    double tol = 0.0, tol_l2 = 0.0;
    bool ok = true;

    bool load() {
        std::ifstream in(folder + "/" + name + ".txt");
        if (!in) return fail("cannot read " + folder + "/" + name + ".txt");
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream words(line);
            std::vector<std::string> w;
            for (std::string x; words >> x;) w.push_back(x);
            if (w.empty()) continue;
            if (w[0] == "tolerance" && w.size() == 3) {
                tol = std::stod(w[1]);
                tol_l2 = std::stod(w[2]);
            } else if (w[0] == "expect_result" && w.size() == 3) {
                items["expect_result result"] = {w[1], w[2]};
            } else if (w.size() >= 3) {
                items[w[0] + " " + w[1]] = std::vector<std::string>(w.begin() + 2, w.end());
            }
        }
        return ok;
    }

    bool fail(const std::string& why) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), why.c_str());
        ok = false;
        return false;
    }

    const std::vector<std::string>* find(const std::string& key) {
        auto it = items.find(key);
        if (it == items.end()) {
            fail("no '" + key + "' in the case file");
            return nullptr;
        }
        return &it->second;
    }

    template <class T>
    T scalar(const std::string& name_) {
        const auto* w = find("scalar " + name_);
        return w ? static_cast<T>(std::stod((*w)[1])) : T();
    }

    template <class T>
    std::vector<T> array(const std::string& kind, const std::string& name_) {
        const auto* w = find(kind + " " + name_);
        if (!w) return {};
        std::vector<T> data(std::stoull((*w)[1]));
        std::ifstream in(folder + "/" + (*w)[2], std::ios::binary);
        in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(T)));
        if (!in) fail("cannot read " + (*w)[2]);
        return data;
    }

    // integers equal; floats within tol * max|ref| elementwise and tol_l2 in relative L2; an
    // element the reference left unwritten (NaN) left unwritten
    template <class T>
    void judge(const std::string& what, const std::vector<T>& got, const std::vector<T>& ref) {
        if (got.size() != ref.size()) {
            fail(what + ": " + std::to_string(got.size()) + " values where the reference has " +
                 std::to_string(ref.size()));
            return;
        }
        if constexpr (std::is_integral_v<T>) {
            for (std::size_t k = 0; k < ref.size(); ++k) {
                if (got[k] != ref[k]) {
                    fail(what + "[" + std::to_string(k) + "]: " + std::to_string(got[k]) + ", reference " +
                         std::to_string(ref[k]));
                    return;
                }
            }
        } else {
            double scale = 0.0, diff2 = 0.0, ref2 = 0.0;
            for (std::size_t k = 0; k < ref.size(); ++k) {
                if (!std::isnan(ref[k])) scale = std::max(scale, std::fabs(double(ref[k])));
            }
            for (std::size_t k = 0; k < ref.size(); ++k) {
                const double r = ref[k], g = got[k];
                if (std::isnan(r)) {
                    if (!std::isnan(g)) {
                        fail(what + "[" + std::to_string(k) + "]: written where the reference leaves it unwritten");
                        return;
                    }
                    continue;
                }
                if (!std::isfinite(g) || std::fabs(g - r) > tol * scale) {
                    char text[160];
                    std::snprintf(text, sizeof text, "[%zu]: %.17g, reference %.17g (beyond %g * max|ref|)", k, g,
                                  r, tol);
                    fail(what + text);
                    return;
                }
                diff2 += (g - r) * (g - r);
                ref2 += r * r;
            }
            if (ref2 > 0 && std::sqrt(diff2 / ref2) > tol_l2) fail(what + ": relative L2 error beyond tolerance");
        }
    }

    template <class T>
    void judge_scalar(const std::string& key, T got) {
        const auto* w = find(key);
        if (!w) return;
        const std::vector<T> ref{static_cast<T>(std::stod(w->back()))};
        judge(key.substr(key.find(' ') + 1), std::vector<T>{got}, ref);
    }
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CASES_FOLDER\n", argv[0]);
        return 2;
    }
    std::ifstream list(std::string(argv[1]) + "/cases.txt");
    int failed = 0, ran = 0;
    for (std::string name; std::getline(list, name);) {
        if (name.empty()) continue;
        Case c{argv[1], name};
        if (c.load()) run_case(c);
        ++ran;
        failed += c.ok ? 0 : 1;
    }
    std::printf("%d of %d cases match the reference\n", ran - failed, ran);
    return failed == 0 && ran > 0 ? 0 : 1;
}
"""


def check_driver(kernel: ir.Kernel) -> str:
    """``check_<name>.cpp``: the driver of one region (any target with the C ABI shim)."""
    name = kernel.name.lower()
    r = KokkosRenderer()
    ret = r.ABI_TYPES[kernel.result] if kernel.result is not None else "void"
    lines = [f"// check_{name}.cpp: runs {shim_symbol(kernel)} ({kernel.origin}) on the golden cases recorded by",
             "// kernel-translate and judges its outputs as validation did. Build it with the region's",
             "// translation; run: check_" + name + " <cases folder>.",
             "#include <algorithm>", "#include <cmath>", "#include <cstdio>", "#include <fstream>", "#include <map>",
             "#include <sstream>", "#include <string>", "#include <type_traits>", "#include <vector>", "",
             f'extern "C" {ret} {shim_symbol(kernel)}({", ".join(abi_params(r, kernel))});', "",
             "namespace {", "struct Case;", "void run_case(Case& c);", "}  // namespace", "",
             RUNTIME.rstrip(), "", "namespace {", "", "void run_case(Case& c) {"]
    args = []
    for p in kernel.params:
        n, t = cname(p.name), _STORAGE[p.dtype.value]
        if isinstance(p, ir.Array):
            lines.append(f'    auto {n} = c.array<{t}>("array", "{p.name}");')
            args.append(f"{n}.data()")
        else:
            lines.append(f'    {t} {n} = c.scalar<{t}>("{p.name}");')
            args.append(f"&{n}" if p.intent.writes else n)
    lines.append("    if (!c.ok) return;")
    call = f"{shim_symbol(kernel)}({', '.join(args)})"
    if kernel.result is not None:
        lines.append(f"    const {_STORAGE[kernel.result.value]} kt_result = {call};")
    else:
        lines.append(f"    {call};")
    for p in kernel.params:
        n, t = cname(p.name), _STORAGE[p.dtype.value]
        if isinstance(p, ir.Array) and p.intent.writes:
            lines.append(f'    c.judge("{p.name}", {n}, c.array<{t}>("expect", "{p.name}"));')
        elif not isinstance(p, ir.Array) and p.intent.writes:
            lines.append(f'    c.judge_scalar("expect_scalar {p.name}", {n});')
    if kernel.result is not None:
        lines.append('    c.judge_scalar("expect_result result", kt_result);')
    lines += ["}", "", "}  // namespace", ""]
    return "\n".join(lines)


def suite_cmake(workflow: str, regions: dict[str, Iterable[str]]) -> str:
    """The CTest project: per target (``regions[target]``: its regions) and region a driver
    built with that region's translation and run on its cases. ``KT_KOKKOS`` (on) and
    ``KT_CUDA`` (off) choose the targets."""
    parts = [f"""cmake_minimum_required(VERSION 3.18)
project({cmake_name(workflow)}_regression LANGUAGES CXX)
{RELEASE_BY_DEFAULT}
set(CMAKE_CXX_STANDARD 17)
option(KT_KOKKOS "test the Kokkos translations" ON)
option(KT_CUDA "test the CUDA translations" OFF)
enable_testing()
"""]
    kokkos = sorted(regions.get("kokkos", ()))
    if kokkos:
        body = "\n".join(f"  kt_check(kokkos {r} ../kokkos/{r}_kokkos.cpp)" for r in kokkos)
        parts.append(f"""
if(KT_KOKKOS)
  find_package(Kokkos REQUIRED)
  function(kt_check target region translation)
    add_executable(check_${{region}}_${{target}} check_${{region}}.cpp ${{translation}})
{kokkos_link("check_${region}_${target}", "    ")}
    add_test(NAME ${{region}}_${{target}}
             COMMAND check_${{region}}_${{target}} ${{CMAKE_CURRENT_SOURCE_DIR}}/cases/${{region}})
  endfunction()
{body}
endif()
""")
    cuda = sorted(regions.get("cuda", ()))
    if cuda:
        body = "\n".join(f"  kt_check_cuda({r})" for r in cuda)
        parts.append(f"""
if(KT_CUDA)
{cuda_architectures(indent="  ")}
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  function(kt_check_cuda region)
    add_executable(check_${{region}}_cuda check_${{region}}.cpp ../cuda/${{region}}_cuda.cu)
    target_link_libraries(check_${{region}}_cuda PRIVATE CUDA::cudart_static)
    add_test(NAME ${{region}}_cuda COMMAND check_${{region}}_cuda ${{CMAKE_CURRENT_SOURCE_DIR}}/cases/${{region}})
  endfunction()
{body}
endif()
""")
    return "".join(parts)
