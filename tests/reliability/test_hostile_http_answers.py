"""Malformed answers through the real CLI (issue 36): whatever a model server sends, the run
ends with one clear line (a malformed-response error, retried as the SDKs retry a failure to
read an answer), or reads the answer as leniently as the SDKs do — never `internal error`.

Seven of these ended as `internal error: …` (exit 1, not retried) before: `choices` an
object, token counts that are text, `tool_calls` not a list, a call's id or name not a
string, an Anthropic text block whose text is a number, gzip content that is not gzip, a
stream chunk whose `choices` is not a list. The SDKs (openai-python, anthropic-sdk-python)
retry what breaks while the answer is read (a cut body, bad framing, content that does not
decode: httpx2's RequestError); we retry the rest of what cannot be read too, as before.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from clitools import invoke
from providers.hostile import HostileServer, events, in_turn, model_args, raw, response

KEY = {"RECURSIVE_API_KEY": "sk-test-hostile-0123456789"}
JSON = "Content-Type: application/json"
OPENAI_OK = b'{"choices":[{"index":0,"message":{"role":"assistant","content":"fine"},"finish_reason":"stop"}]}'
ANTHROPIC_OK = b'{"content":[{"type":"text","text":"fine"}],"stop_reason":"end_turn"}'


def whole(body: bytes, *headers: str) -> bytes:
    return response("200 OK", body, JSON, *headers)


# (case, provider or "both", --no-stream?, the answer, what the error line says after the URL)
MALFORMED: list[tuple[str, str, bool, bytes, str]] = [
    ("not-json", "both", True, whole(b"<html>oops</html>"), "invalid JSON (Expecting value)"),
    ("html", "openai", True, response("200 OK", b"<html>oops</html>", "Content-Type: text/html"),
     "no choices in the response"),
    ("html", "anthropic", True, response("200 OK", b"<html>oops</html>", "Content-Type: text/html"),
     "no content in the response"),
    ("null", "openai", True, whole(b"null"), "no choices in the response"),
    ("list", "anthropic", True, whole(b"[1, 2]"), "no content in the response"),
    ("error-in-a-200", "openai", True, whole(b'{"error": {"message": "quota exceeded"}}'),
     "no choices in the response (it says: quota exceeded)"),
    ("error-in-a-200", "anthropic", True, whole(b'{"type": "error", "error": {"type": "api_error", "message": "x"}}'),
     "no content in the response (it says: x)"),
    ("choices-an-object", "openai", True, whole(b'{"choices": {"0": {"message": {"content": "x"}}}}'),
     "no choices in the response"),
    ("content-an-object", "anthropic", True, whole(b'{"content": {"0": {}}, "stop_reason": "end_turn"}'),
     "no content in the response"),
    ("nested-too-deep", "both", True, whole(b"[" * 100_000), "invalid JSON (maximum recursion depth exceeded"),
    ("number-too-long", "both", True, whole(b'{"n": ' + b"1" * 5000 + b"}"), "invalid JSON (Exceeds the limit"),
    ("not-utf8", "both", True, whole(b'{"choices": "\xff"}'), "bytes that are not UTF-8"),
    ("gzip-not-gzip", "both", True, whole(b"not gzip at all", "Content-Encoding: gzip"),
     "the answer's gzip content is corrupt"),
    ("unknown-encoding", "both", True, whole(b"{}", "Content-Encoding: br"), "unsupported content encoding 'br'"),
    ("bad-content-length", "both", True,
     b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}",
     "invalid Content-Length 'abc'"),
    ("bad-chunk-size", "both", True,
     b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
     "invalid chunk size b'zz'"),
    ("not-http", "both", True, b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "not an HTTP/1.1 answer: 'SSH-2.0-OpenSSH_9.6'"),
    ("stream-without-its-end", "openai", False, events(b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'),
     "the stream ended without a finish_reason"),
    ("stream-without-its-end", "anthropic", False,
     events(b'event: message_start\ndata: {"type":"message_start","message":{"usage":{}}}\n\n'),
     "the stream ended without a stop_reason"),
    ("stream-choices-not-a-list", "openai", False, events(b'data: {"choices": 5}\n\n', b"data: [DONE]\n\n"),
     "the stream ended without a finish_reason"),
    ("stream-stop-reason-an-object", "anthropic", False,
     events(b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":{}},"usage":[]}\n\n'),
     "the stream ended without a stop_reason"),
    ("stream-not-json", "both", False, events(b"event: content_block_delta\ndata: {not json\n\n"), "invalid JSON"),
    ("stream-not-utf8", "both", False, events(b'event: content_block_delta\ndata: {"x": "\xff"}\n\n'),
     "bytes that are not UTF-8"),
    ("stream-a-json-body", "openai", False, whole(OPENAI_OK), "the stream ended without a finish_reason"),
]
# Cut off: the SDKs retry these as connection errors, and so do we, in their words.
CUT = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\ndata:"


def cases(table: list[tuple[str, str, bool, bytes, str]]) -> list[Any]:
    out = []
    for case, provider, whole_answer, answer, said in table:
        for one in (("openai", "anthropic") if provider == "both" else (provider,)):
            out.append(pytest.param(one, whole_answer, answer, said, id=f"{one}-{case}"))
    return out


def run(provider: str, url: str, whole_answer: bool) -> tuple[int, list[dict[str, Any]], str]:
    result = invoke("run", "hi", *model_args(provider, url, stream=not whole_answer), "-o", "stream-json", env=KEY)
    records = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return result.returncode, records, result.stderr


@pytest.mark.parametrize(("provider", "whole_answer", "answer", "said"), cases(MALFORMED))
def test_a_malformed_answer_is_retried_then_one_clear_line(provider: str, whole_answer: bool, answer: bytes,
                                                           said: str) -> None:
    with HostileServer(raw(answer)) as server:
        code, records, stderr = run(provider, server.url, whole_answer)
        attempts = len(server.requests)
    base = f"{server.url}/v1" if provider == "openai" else server.url
    final = records[-1]
    assert code == 1 and final["subtype"] == "error_during_execution", stderr
    (error,) = final["errors"]
    assert error.startswith(f"malformed response from {base}: {said}"), error
    assert "\n" not in error and "internal error" not in stderr and "Traceback" not in stderr
    assert attempts == 6 and len([r for r in records if r.get("subtype") == "api_retry"]) == 5


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_stream_cut_off_is_retried_as_a_connection_error(provider: str) -> None:
    with HostileServer(raw(CUT)) as server:
        code, records, stderr = run(provider, server.url, whole_answer=False)
        attempts = len(server.requests)
    assert code == 75 and attempts == 6, stderr  # unavailable after the retries (issue 31)
    assert records[-1]["errors"][0].endswith("failed: the server closed the connection before the end of the "
                                             "answer (a chunked body without its last chunk)")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_error_event_in_a_stream_is_retried_then_reported(provider: str) -> None:
    error = (b'data: {"error": {"message": "the model is overloaded"}}\n\n' if provider == "openai" else
             b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n')
    with HostileServer(raw(events(error))) as server:
        code, records, stderr = run(provider, server.url, whole_answer=False)
        attempts = len(server.requests)
    assert code == 75 and attempts == 6, stderr  # unavailable after the retries (issue 31)
    expected = "the model is overloaded" if provider == "openai" else "overloaded_error (Overloaded)"
    assert records[-1]["errors"] == [f"error from {server.url}{'/v1' if provider == 'openai' else ''} "
                                     f"during the stream: {expected}"]


# Fields of the wrong type beside a readable answer: read as leniently as the SDKs read them
# (they build their models without validating): what is not a string is no text, what is not a
# count counts 0, what is not a list holds nothing.
LENIENT = [
    pytest.param("openai", whole(b'{"choices":[{"index":0,"message":{"content":"fine","tool_calls":5,"refusal":7},'
                                 b'"finish_reason":"stop"}],"usage":{"prompt_tokens":"abc","completion_tokens":-4,'
                                 b'"prompt_tokens_details":[]}}'), id="openai-odd-fields"),
    pytest.param("anthropic", whole(b'{"content":[{"type":"text","text":5},{"type":"text","text":"fine"}],'
                                    b'"stop_reason":"end_turn","usage":{"input_tokens":"x","output_tokens":1e400}}'),
                 id="anthropic-odd-fields"),
]


@pytest.mark.parametrize(("provider", "answer"), LENIENT)
def test_odd_fields_beside_an_answer_are_read_leniently(provider: str, answer: bytes) -> None:
    with HostileServer(raw(answer)) as server:
        result = invoke("run", "hi", *model_args(provider, server.url, stream=False), env=KEY)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "fine\n"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_tool_call_whose_fields_are_not_strings_gets_an_error_result(provider: str) -> None:
    """A call whose id, name and arguments are numbers: it gets an id of ours, names no tool,
    and its error result goes back to the model, whose next answer ends the run."""
    bad = (b'{"choices":[{"index":0,"message":{"content":null,"tool_calls":[{"id":1,"type":"function",'
           b'"function":{"name":5,"arguments":7}}]},"finish_reason":"tool_calls"}]}' if provider == "openai" else
           b'{"content":[{"type":"tool_use","id":1,"name":5,"input":7}],"stop_reason":"tool_use"}')
    with HostileServer(in_turn(whole(bad), whole(OPENAI_OK if provider == "openai" else ANTHROPIC_OK))) as server:
        result = invoke("run", "hi", *model_args(provider, server.url, stream=False), "-o", "stream-json", env=KEY)
        second = json.loads(server.requests[1].body)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 0 and records[-1]["result"] == "fine", result.stderr
    tool_results = [block for r in records if r["type"] == "user" for block in r["message"]["content"]]
    assert len(tool_results) == 1 and tool_results[0]["is_error"] is True
    assert "internal error" not in result.stderr and len(second["messages"]) >= 3
