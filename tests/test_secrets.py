"""validation.secrets: which variables are secret, what children inherit, and the redactor."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation import golden, stopping
from validation.secrets import MASK, child_environment, is_secret, redact


def test_children_inherit_no_secret_and_the_redactor_removes_values_and_shapes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-7c1f-canary-value")
    monkeypatch.setenv("LOCAL_LLM", "plain-named-key-value")
    assert is_secret("OPENAI_API_KEY") and is_secret("hf_token") and not is_secret("PATH")
    env = child_environment(extra=["LOCAL_LLM"])
    assert "MY_SERVICE_TOKEN" not in env and "LOCAL_LLM" not in env and "PATH" in env
    text = ("failed: tok-7c1f-canary-value; OPENAI_API_KEY=whatever-it-is\x00HOME=/root "
            "sk-proj-abcdefghijklmnop ghp_abcdefghijklmnopqrstuvwxyz Authorization: Bearer abc.def.ghijklmnop "
            "plain-named-key-value")
    out = redact(text, extra=["LOCAL_LLM"])
    for secret in ("tok-7c1f-canary-value", "whatever-it-is", "sk-proj-abcdefghijklmnop",
                   "ghp_abcdefghijklmnopqrstuvwxyz", "abc.def.ghijklmnop", "plain-named-key-value"):
        assert secret not in out, (secret, out)
    assert out.count(MASK) >= 6 and "HOME=/root" in out


def test_code_and_short_placeholders_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_LLM_KEY", "none")  # a local server's placeholder: too short to search for
    code = "      KEY = IKEY(I) + 1\n    cache_key = self.cache_key(m)\n  none of these change\n"
    assert redact(code) == code


def test_a_stopped_run_records_no_golden_case(tmp_path: Path) -> None:
    stopping.request_stop()
    try:
        with pytest.raises(stopping.Interrupted):
            golden.record_all(tmp_path / "r", None, [(None, {})])  # type: ignore[arg-type]
    finally:
        stopping.clear()
    assert not (tmp_path / "r").exists()
