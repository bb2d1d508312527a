"""`--model` aliases: Claude Code's short names on the Anthropic provider are sent as the model
they stand for (and priced as it, so --max-cost can run); other names go as they are."""

from __future__ import annotations

from pathlib import Path

import pytest
from clitools import invoke
from fakeserver import FakeLLMServer


@pytest.mark.parametrize("provider, given, sent", [
    ("anthropic", "sonnet", "claude-sonnet-4-5"),
    ("anthropic", "opus", "claude-opus-4-5"),
    ("anthropic", "haiku", "claude-haiku-4-5"),
    ("anthropic", "claude-opus-4-1", "claude-opus-4-1"),
    ("openai", "sonnet", "sonnet"),  # no aliases there: a compatible server's own name
])
def test_an_alias_is_sent_as_its_model(tmp_path: Path, provider: str, given: str, sent: str) -> None:
    with FakeLLMServer([{"text": "ok"}]) as server:
        base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
        extra = ["--max-cost", "1"] if provider == "anthropic" else []
        proc = invoke("run", "hi", "-C", str(tmp_path), "--provider", provider, "--api-base", base, "-m", given,
                      *extra, "--no-session", env={"RECURSIVE_API_KEY": "sk-test"})
        body = server.requests[0].body
    assert proc.returncode == 0, proc.stderr
    assert body["model"] == sent


def test_without_model_each_provider_has_its_default(tmp_path: Path, isolated_home: Path) -> None:
    shown = invoke("config", "show", "--provider", "openai")
    assert shown.returncode == 0 and "gpt-4.1-mini" in shown.stdout  # OpenAI's own API: its default
    with FakeLLMServer([{"text": "ok"}]) as server:
        proc = invoke("run", "hi", "-C", str(tmp_path), "--provider", "anthropic", "--api-base",
                      server.anthropic_base_url, "--no-session", env={"RECURSIVE_API_KEY": "sk-test"})
        assert proc.returncode == 0, proc.stderr
        assert server.requests[0].body["model"] == "claude-sonnet-4-5"
    with FakeLLMServer([{"text": "ok"}], served=["local-model"]) as server:  # another server: the one it serves
        proc = invoke("run", "hi", "-C", str(tmp_path), "--provider", "openai", "--api-base",
                      server.openai_base_url, "--no-session", env={"RECURSIVE_API_KEY": "sk-test"})
        assert proc.returncode == 0, proc.stderr
        assert server.requests[-1].body["model"] == "local-model"
