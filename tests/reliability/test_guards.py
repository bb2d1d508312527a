"""The guards the fault cases rely on, tested directly: error classification, timeouts, text
that is not UTF-8, protected folders and special files, broken pipes, terminal escapes."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from recursive_cli.core import utf8
from recursive_cli.core.messages import Message, ToolCall
from recursive_cli.core.provider import ContextLengthError
from recursive_cli.core.tool import ToolError
from recursive_cli.features.sessions.reader import _conversation
from recursive_cli.features.sessions.records import MessageRecord, TurnStartRecord
from recursive_cli.launch.stdio import PipeGuard
from recursive_cli.providers.retry import http_error, request_timeout
from recursive_cli.sinks.terminal import printable
from recursive_cli.tools.sandbox import WorkspaceSandbox

URL = "https://api.example.test/v1"


@pytest.mark.parametrize(("status", "message", "code"), [
    (400, "This model's maximum context length is 8192 tokens. However, you requested 9000", None),
    (400, "Your input exceeds the context window of this model.", "context_length_exceeded"),
    (400, "prompt is too long: 215003 tokens > 200000 maximum", None),
    (400, "the request exceeds the available context size, try increasing it", None),
])
def test_context_overflow_is_classified(status: int, message: str, code: str | None) -> None:
    error = http_error(status, URL, message, {}, code=code)
    assert isinstance(error, ContextLengthError) and not error.retryable
    assert "too long for the model's context window" in error.reason and error.status == status


def test_other_bad_requests_are_not_context_errors() -> None:
    error = http_error(400, URL, "unknown parameter: foo", {})
    assert not isinstance(error, ContextLengthError) and "bad request" in error.reason
    assert http_error(503, URL, "context length service down", {}).retryable  # 5xx stays transient


def test_request_timeout_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECURSIVE_REQUEST_TIMEOUT", raising=False)
    assert request_timeout() == 600.0
    for raw, expected in (("2.5", 2.5), ("0", 600.0), ("-1", 600.0), ("soon", 600.0), ("nan", 600.0)):
        monkeypatch.setenv("RECURSIVE_REQUEST_TIMEOUT", raw)
        assert request_timeout() == expected, raw


def test_lone_surrogates_become_replacement_characters() -> None:
    assert utf8.scrub("a\ud800b\udcffc😀") == "a\ufffdb\ufffdc😀"
    assert utf8.encode("x\udcff") == "x\ufffd".encode()
    assert utf8.encode("plain é") == "plain é".encode()
    assert utf8.decode(b"\xff ok") == "\ufffd ok"


def test_home_is_protected_inside_the_workspace(tmp_path: Path) -> None:
    home = tmp_path / ".rhome"
    (home / "sessions" / "s1").mkdir(parents=True)
    sandbox = WorkspaceSandbox(tmp_path, protected=[home])
    assert sandbox.resolve(".rhome/sessions/s1/meta.json") == home / "sessions" / "s1" / "meta.json"
    for path in (".rhome", ".rhome/config.toml", ".rhome/sessions/s1/transcript.jsonl",
                 str(home / "new.txt"), "sub/../.rhome/x"):
        with pytest.raises(ToolError, match="recursive's own folder"):
            sandbox.resolve(path, write=True)
    (tmp_path / "link").symlink_to(home)
    with pytest.raises(ToolError, match="recursive's own folder"):
        sandbox.resolve("link/config.toml", write=True)
    assert sandbox.resolve("notes.txt", write=True) == tmp_path / "notes.txt"


def test_special_files_and_absurd_paths_are_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    sandbox = WorkspaceSandbox(tmp_path, [Path("/dev")])
    for path, kind in (("fifo", "a FIFO"), ("/dev/zero", "a character device"),
                       ("/dev/urandom", "a character device")):
        with pytest.raises(ToolError, match=kind):
            sandbox.resolve(path)
    for path, problem in (("x" * 5000, "characters long"), ("a\x00b", "NUL"), ("a\ud800", "surrogate"),
                          ("  ", "empty")):
        with pytest.raises(ToolError, match=problem):
            sandbox.resolve(path)
    assert sandbox.resolve("bad\udcffname") == tmp_path / "bad\udcffname"  # a real non-UTF-8 name


class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        raise io.UnsupportedOperation  # nothing to point at /dev/null


def test_a_broken_pipe_is_absorbed_and_reported_once() -> None:
    closed: list[int] = []
    guard = PipeGuard(_ClosedPipe(), lambda: closed.append(1))
    assert guard.write("first\n") == 6 and guard.write("second\n") == 7
    guard.flush()
    assert guard.broken and closed == [1]
    out = io.StringIO()
    PipeGuard(out, lambda: None).write("name \udcff\n")
    assert out.getvalue() == "name \ufffd\n"


def test_terminal_escapes_are_shown_not_obeyed() -> None:
    assert printable("a\x1b]0;title\x07b\x00c\td\ne\x9b") == "a\\x1b]0;title\\x07b\\x00c\td\ne\\x9b"


def test_a_continued_turn_does_not_invent_a_prompt() -> None:
    call = ToolCall(id="c1", name="run_shell", arguments="{}")
    records = [TurnStartRecord(turn=1, prompt="work", time="t"),
               MessageRecord(turn=1, message=Message.user("work"), time="t"),
               MessageRecord(turn=1, message=Message(role="assistant", tool_calls=(call,)), time="t"),
               TurnStartRecord(turn=2, prompt="", time="t"),  # `resume` with no prompt carries on
               MessageRecord(turn=2, message=Message.tool_result(call, "done"), time="t"),
               MessageRecord(turn=2, message=Message(role="assistant", content="ok"), time="t")]
    warnings: list[str] = []
    messages, turns = _conversation(records, warnings)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert warnings == [] and turns == 2
