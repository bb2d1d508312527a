"""A model that rejects a parameter (OpenAI reasoning models and `temperature`, a server that
knows no `reasoning_effort`) is told once in one clear line, exit 1 as for any provider error:
one request, never a retry, even when the server says `x-should-retry: true`."""

from __future__ import annotations

from pathlib import Path

import pytest
from clitools import invoke
from fakeserver import FakeLLMServer

OPENAI_MESSAGE = "Unsupported parameter: 'temperature' is not supported with this model."


@pytest.mark.parametrize("provider, message, code, named", [
    ("openai", OPENAI_MESSAGE, "unsupported_parameter", "the parameter 'temperature'"),
    ("openai", "Unrecognized request argument supplied: reasoning_effort", None, "a parameter"),
    ("anthropic", "thinking: `thinking` is not supported on this model", None, "the parameter 'thinking'"),
])
@pytest.mark.parametrize("command", [["run", "hi"], ["loop", "hi", "--max-iterations", "3"]])
def test_a_rejected_parameter_is_one_error_and_one_request(tmp_path: Path, provider: str, message: str,
                                                          code: str | None, named: str, command: list[str]) -> None:
    error = {"status": 400, "message": message, "code": code, "headers": {"x-should-retry": "true"}}
    with FakeLLMServer([{"error": error}] * 6) as server:
        base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
        proc = invoke(*command, "-C", str(tmp_path), "--provider", provider, "--api-base", base, "-m", "o3",
                      "--no-session", env={"RECURSIVE_API_KEY": "sk-test"})
        requests = len(server.requests)
    assert proc.returncode == 1
    assert requests == 1
    [line] = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert f"the model does not take {named} recursive sent" in line
    assert message in line and "retry" not in proc.stderr.lower()
