"""tests/kt_apart.py: a call in a process of its own brings its arrays, return value and stderr
back, and a failure there (an assertion, a crash) fails the caller."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.kt_apart import call_apart, run_apart

SOURCE = r"""
#include <stdio.h>
int scale(int n, double a, char tag, double* x) {
    for (int i = 0; i < n; ++i) x[i] *= a;
    fprintf(stderr, "tag %c\n", tag);
    return n + 1;
}
int crash(void) { volatile int* p = 0; return *p; }
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc not found")
    tmp = tmp_path_factory.mktemp("apart")
    (tmp / "lib.c").write_text(SOURCE)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", "libapart.so", "lib.c"], cwd=tmp, check=True, timeout=120)
    return tmp / "libapart.so"


def test_arrays_return_value_and_stderr_come_back(lib: Path) -> None:
    x = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    memory = x.ravel(order="K").copy()  # column by column: 0 3 1 4 2 5
    done = call_apart(lib, "scale", 5, 2.0, b"Q", x)
    assert done.value == 6 and "tag Q" in done.stderr
    np.testing.assert_array_equal(x.ravel(order="K"), [*(2.0 * memory[:5]), memory[5]])
    assert x.flags.f_contiguous


def test_a_crash_fails_the_caller(lib: Path) -> None:
    with pytest.raises(AssertionError, match="exit -11"):
        call_apart(lib, "crash")


def fails(limit: int) -> int:
    assert limit > 3, "the child's own assertion"
    return limit


def test_a_failed_assertion_fails_the_caller() -> None:
    assert run_apart(fails, 5).value == 5
    with pytest.raises(AssertionError, match="the child's own assertion"):
        run_apart(fails, 2)
