"""Provider faults through the real providers (our own HTTP client): each is retried with an `api_retry` event, or ends the
run with one `error:` line and exit 1 — and the session is saved either way.

The gauntlet of transient faults (dropped connections, timeouts, broken streams) runs as a real
process, so a hang fails at the timeout and nothing is printed at exit; the failing runs run in
this process (`in_process`), which is seconds faster per case (no interpreter start per run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeLLMServer

from .doctable import PROVIDERS, Row, check_row
from .harness import API_KEY, Scrub, agent, inspect_session, provider_args

TIMEOUT_ENV = {"RECURSIVE_REQUEST_TIMEOUT": "0.5"}

# One run survives every transient fault: five on each of its two requests.
GAUNTLET: list[tuple[str | None, dict[str, Any]]] = [
    ("429", {"error": {"status": 429, "message": "slow down", "headers": {"retry-after": "0"}}}),
    ("500", {"error": {"status": 500, "message": "internal error"}}),
    ("502", {"error": {"status": 502, "message": "bad gateway"}}),
    ("503", {"error": {"status": 503, "message": "unavailable"}}),
    ("529", {"error": {"status": 529, "message": "overloaded"}}),
    (None, {"tool_calls": [{"id": "call-1", "name": "run_shell", "arguments": {"command": "echo one"}}]}),
    ("drop", {"drop": True}),
    ("drop-mid", {"drop": "mid", "text": "half of an answer that never ends"}),
    ("timeout", {"delay": 1.5, "text": "too late"}),
    ("malformed", {"malformed": True, "text": "broken"}),
    ("not-utf8", {"malformed": "utf8", "text": "garbled"}),
    (None, {"text": "recovered"}),
]
EXPECTED_STATUS = {"429": 429, "500": 500, "502": 502, "503": 503, "529": 529}
CONTEXT_ERRORS = {
    "openai": {"status": 400, "code": "context_length_exceeded",
               "message": "This model's maximum context length is 128000 tokens. However, your "
                          "messages resulted in 130017 tokens. Please reduce the length of the messages."},
    "anthropic": {"status": 400, "message": "prompt is too long: 215003 tokens > 200000 maximum"},
}


def run_against(server: FakeLLMServer, provider: str, workspace: Path, session_id: str,
                *extra: str, env: dict[str, str] | None = None,
                in_process: bool = True):  # type: ignore[no-untyped-def]
    return agent("run", "do the task", "-C", str(workspace), *provider_args(server, provider),
                 "--session-id", session_id, *extra, env={**TIMEOUT_ENV, **(env or {})},
                 in_process=in_process)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_transient_faults_are_retried(provider: str, workspace: Path, isolated_home: Path) -> None:
    with FakeLLMServer([reply for _, reply in GAUNTLET]) as server:
        run = run_against(server, provider, workspace, "gauntlet", "-o", "stream-json", in_process=False)
        scrub = Scrub(ws=workspace, home=isolated_home)
        assert len(server.requests) == len(GAUNTLET)
    assert run.code == 0, run.stderr
    run.assert_clear(errors=0)
    records = run.records()
    assert records[-1]["subtype"] == "success" and records[-1]["result"] == "recovered"
    retries = [r for r in records if r.get("subtype") == "api_retry"]
    faults = [fault for fault, _ in GAUNTLET if fault is not None]
    assert [r["error_status"] for r in retries] == [EXPECTED_STATUS.get(f) for f in faults]
    retry_lines = [line for line in run.stderr.splitlines() if line.startswith("retrying in")]
    assert len(retry_lines) == len(faults)
    session = inspect_session(isolated_home, "gauntlet")
    assert session.status == "completed"
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert session.messages[-1].content == "recovered"
    for fault, retry, line in zip(faults, retries, retry_lines):
        assert retry["attempt"] >= 1 and retry["max_retries"] == 5
        check_row(Row(f"{provider}-{fault}", (scrub(line), "then the answer on stdout"), str(run.code),
                      session.summary("the failed attempts left nothing in it")))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_outage_fails_in_one_line_and_resumes(provider: str, workspace: Path,
                                                 isolated_home: Path) -> None:
    outage = [{"error": {"status": 503, "message": "unavailable"}}] * 6
    with FakeLLMServer(outage) as server:
        run = run_against(server, provider, workspace, "outage")
        scrub = Scrub(ws=workspace, home=isolated_home)
        assert len(server.requests) == 6
    assert run.code == 75  # EX_TEMPFAIL: unavailable after the retries (issue 31)
    run.assert_clear(errors=1)
    assert "503" in run.error_lines()[0] and "debug:" not in run.stderr
    assert sum(line.startswith("retrying in") for line in run.stderr.splitlines()) == 5
    session = inspect_session(isolated_home, "outage")
    assert session.status == "failed" and [m.role for m in session.messages] == ["user"]
    with FakeLLMServer([{"text": "back again"}]) as server:
        resumed = agent("resume", "outage", "-C", str(workspace), "--api-base", _base(server, provider),
                        in_process=True)
        assert len(server.requests) == 1
    assert resumed.code == 0 and resumed.stdout == "back again\n", resumed.stderr
    check_row(Row(f"{provider}-outage", ("5 × retrying in T s …", scrub(run.error_lines()[0])),
                  str(run.code), session.summary("`resume` once the server is back → exit 0")))


def test_a_bad_key_fails_at_once(workspace: Path, isolated_home: Path) -> None:
    provider = "openai"  # (not retrying a 4xx is provider-independent: retry.py)
    with FakeLLMServer([{"error": {"status": 401, "message": "invalid x-api-key"}}]) as server:
        run = run_against(server, provider, workspace, "badkey")
        scrub = Scrub(ws=workspace, home=isolated_home)
        assert len(server.requests) == 1  # not retried
    assert run.code == 1
    run.assert_clear(errors=1)
    assert "invalid API key" in run.error_lines()[0] and "debug:" not in run.stderr
    session = inspect_session(isolated_home, "badkey")
    assert session.status == "failed"
    check_row(Row(f"{provider}-401", (scrub(run.error_lines()[0]),), str(run.code), session.summary()))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_context_overflow_is_a_clear_error(provider: str, workspace: Path, isolated_home: Path) -> None:
    with FakeLLMServer([{"error": CONTEXT_ERRORS[provider]}]) as server:
        run = run_against(server, provider, workspace, "overflow")
        scrub = Scrub(ws=workspace, home=isolated_home)
        assert len(server.requests) == 1  # retrying the same request cannot help
    assert run.code == 1
    run.assert_clear(errors=1)
    assert "too long for the model's context window" in run.error_lines()[0]
    session = inspect_session(isolated_home, "overflow")
    assert session.status == "failed" and [m.role for m in session.messages] == ["user"]
    check_row(Row(f"{provider}-context", (scrub(run.error_lines()[0]),), str(run.code), session.summary()))


def test_verbose_shows_the_cause(workspace: Path, isolated_home: Path) -> None:
    with FakeLLMServer([{"error": {"status": 401, "message": f"bad key {API_KEY}"}}]) as server:
        run = run_against(server, "openai", workspace, "verbose", "-v")
        scrub = Scrub(ws=workspace, home=isolated_home)
    assert run.code == 1 and len(run.error_lines()) == 1
    debug = [line for line in run.stderr.splitlines() if line.startswith("debug:")]
    assert debug and "401" in debug[0]
    assert "Traceback (most recent call last)" in run.stderr and "HttpStatusError: HTTP 401" in run.stderr
    assert API_KEY not in run.stderr and "***" in run.stderr
    session = inspect_session(isolated_home, "verbose")
    check_row(Row("openai-verbose", (scrub(debug[0]), "Traceback (most recent call last): … "
                                     "HttpStatusError: HTTP 401 … (API key masked)",
                                     scrub(run.error_lines()[0])), str(run.code), session.summary()))


def _base(server: FakeLLMServer, provider: str) -> str:
    return server.openai_base_url if provider == "openai" else server.anthropic_base_url
