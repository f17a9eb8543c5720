"""validation.pyaudit: a Triton answer is judged by its syntax tree. Every disguise of the
known escapes (dynamic attributes and imports, continuation lines, context managers that
swallow errors, module patching, torch compute on the host) is refused with its reason; the
honest launchers of the agent tests pass."""

from __future__ import annotations

import pytest

from validation.pyaudit import audit

HONEST = '''import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def saxpy_kernel(x, y, a, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    v = tl.load(x + i, mask=m) * a + tl.load(y + i, mask=m)
    tl.store(y + i, libdevice.fma(v, 1.0, 0.0), mask=m)


def saxpy(n: int, a: float, x: torch.Tensor, y: torch.Tensor) -> dict[str, object]:
    """Launcher: one program per block of 1024 elements."""
    part = torch.empty(triton.cdiv(n, 1024), dtype=torch.float32, device=x.device)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    saxpy_kernel[grid](x, y, a, n, BLOCK=1024)
    return {"parts": part.numel()}
'''

# (answer, a fragment of the reason)
ESCAPES = {
    "getattr_exec": ("import torch\nimport builtins\ngetattr(builtins, 'ex' + 'ec')('x = 1')", "getattr"),
    "vars_import": ("import torch\nm = vars(__builtins__)['__imp' + 'ort__']('os')", "vars"),
    "pydoc_locate": ("import pydoc\npydoc.locate('os.system')('true')", "import of pydoc"),
    "pkgutil": ("import pkgutil\npkgutil.resolve_name('os:system')", "import of pkgutil"),
    "import_list": ("import torch, numpy", "import of numpy"),
    "continuation": ("import torch, \\\n    subprocess", "import of subprocess"),
    "exit_true": ("import torch\nclass Quiet:\n    def __enter__(self):\n        return self\n"
                  "    def __exit__(self, *exc):\n        return True\n", "a class"),
    "with": ("import torch\ndef f(x, s):\n    with s:\n        raise ValueError\n", "with statement"),
    "subclasses": ("import torch\ndef f():\n    return ().__class__.__base__.__subclasses__()", "__base__"),
    "tl_builtins": ("import triton.language as tl\ndef f():\n    return tl.core.builtins", "the module builtins"),
    "patch_median": ("import statistics\nstatistics.median = min", "patching a module"),
    "patch_torch": ("import torch\ntorch.allclose = lambda *a, **k: True", "patching a module"),
    "aten": ("import torch\ndef f(x, y):\n    y.copy_(torch.ops.aten.mul(x, 2))", "torch.ops.aten.mul"),
    "cpp_extension": ("import torch\ntorch.utils.cpp_extension.load_inline('m', '')", "cpp_extension"),
    "host_sum": ("import torch\ndef f(x, y):\n    y.copy_(x.sum())", ".sum() outside @triton.jit"),
    "do_bench": ("import triton\nt = triton.testing.do_bench(lambda: 0)", "triton.testing.do_bench"),
    "annotation": ("import torch\ndef f(x: exec('1')) -> None:\n    pass", "a call in an annotation"),
    "global": ("import torch\nseen = 0\ndef f(x):\n    global seen\n    seen = 1", "global state"),
    "try": ("import torch\ndef f(x):\n    try:\n        pass\n    except Exception:\n        pass", "a fallback"),
    "cache_decorator": ("import functools\n@functools.cache\ndef f(x):\n    return x", "decorator"),
    "from_os": ("from os import system", "import from os"),
    "relative": ("from . import reference", "import from ."),
    "open_in_jit": ("import triton\n@triton.jit\ndef k(x):\n    open('/etc/passwd')", "open"),
    "torch_in_jit": ("import torch\nimport triton\n@triton.jit\ndef k(x):\n    torch.matmul(x, x)", "torch.matmul"),
    "dunder_dict": ("import triton.language as tl\ndef f():\n    return tl.__dict__", "__dict__"),
    "syntax": ("def f(:\n", "does not parse"),
}


def test_an_honest_launcher_passes() -> None:
    assert audit(HONEST) == []


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_escapes_are_refused(name: str) -> None:
    text, why = ESCAPES[name]
    found = audit(text)
    assert any(why in reason for _, reason in found), found
