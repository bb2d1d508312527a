"""Hostile tool calls through both real providers: each gets an error result (or a safe one) the
model can read, nothing outside the workspace or inside recursive's own files is touched,
nothing hangs, and the run goes on to its answer."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeLLMServer

from .doctable import PROVIDERS, Row, check_row
from .harness import Run, Scrub, agent, call, inspect_session, provider_args

# The module-scoped fixture is costly: with the suite spread over cores (pytest-xdist), keep
# this module on one worker so it is built once.
pytestmark = pytest.mark.xdist_group("hostile")

TEN_MB = 10 * 1024 * 1024
RESULT_CHARS = 140  # of each tool result shown in the table


@dataclass(frozen=True)
class Hostile:
    """One hostile call: its case id, the call, and whether its result must be an error."""

    case: str
    name: str
    arguments: dict[str, Any] | str
    is_error: bool = True


def hostile_calls(session_id: str) -> list[Hostile]:
    patch = "*** Begin Patch\n*** Update File: pipe\n@@\n-a\n+b\n*** End Patch"
    return [
        Hostile("args-wrong-type", "read_file", {"path": 5}),
        Hostile("args-missing-field", "read_file", {}),
        Hostile("args-invalid-json", "write_file", "not json{"),
        Hostile("args-not-object", "write_file", "[1, 2]"),
        Hostile("args-unknown-tool", "no_such_tool", {}),
        Hostile("args-10mb-content", "write_file", {"path": "big.txt", "content": "A" * TEN_MB}, False),
        Hostile("args-10mb-path", "read_file", {"path": "B" * TEN_MB}),
        Hostile("args-nul-path", "read_file", {"path": "ok.txt\x00.png"}),
        Hostile("args-nul-command", "run_shell", {"command": "echo a\x00b"}),
        Hostile("args-terminal-escape", "read_file", {"path": "\x1b[2J\x1b]0;pwned\x07.txt"}),
        Hostile("args-surrogate-path", "write_file", '{"path": "x\\ud800.txt", "content": "x"}'),
        Hostile("args-surrogate-content", "write_file", '{"path": "s.txt", "content": "x\\ud800y"}'),
        Hostile("path-dotdot", "write_file", {"path": "../outside.txt", "content": "x"}),
        Hostile("path-absolute", "read_file", {"path": "/etc/passwd"}),
        Hostile("path-symlink-read", "read_file", {"path": "etc-link/passwd"}),
        Hostile("path-symlink-write", "write_file", {"path": "out-link/planted.txt", "content": "x"}),
        Hostile("path-git", "write_file", {"path": ".git/config", "content": "x"}),
        Hostile("path-home", "write_file", {"path": ".rhome/config.toml", "content": "model = 'x'"}),
        Hostile("path-session", "edit_file", {"path": f".rhome/sessions/{session_id}/transcript.jsonl",
                                              "old_string": "session", "new_string": "hacked"}),
        Hostile("device-absolute", "read_file", {"path": "/dev/zero"}),
        Hostile("device-node-zero", "read_file", {"path": "zero-node"}),
        Hostile("device-node-urandom", "write_file", {"path": "urandom-node", "content": "x"}),
        Hostile("fifo-read", "read_file", {"path": "pipe"}),
        Hostile("fifo-write", "write_file", {"path": "pipe", "content": "x"}),
        Hostile("fifo-patch", "apply_patch", {"patch": patch}),
        Hostile("fifo-search", "search_files", {"pattern": "x", "path": "pipe"}),
        Hostile("file-binary", "read_file", {"path": "binary.bin"}),
        Hostile("file-name-not-utf8", "list_dir", {"path": "names"}, False),
        Hostile("output-binary", "run_shell", {"command": "head -c 100000 /dev/urandom"}, False),
    ]


def hostile_workspace(root: Path) -> tuple[Path, bool]:
    """A workspace with a FIFO, device nodes, escaping symlinks, a .git folder, a binary file and
    a file name that is not UTF-8; returns it and whether device nodes could be made here."""
    workspace = root / "ws"
    (workspace / ".git").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n")
    (workspace / "ok.txt").write_text("fine\n")
    (workspace / "binary.bin").write_bytes(b"\x7fELF\x00\x01\x02" * 100)
    (workspace / "names").mkdir()
    with open(os.fsencode(workspace / "names") + b"/bad\xffname.txt", "w") as handle:
        handle.write("x\n")
    os.mkfifo(workspace / "pipe")
    (root / "outside").mkdir()
    (workspace / "etc-link").symlink_to("/etc")
    (workspace / "out-link").symlink_to(root / "outside")
    try:
        os.mknod(workspace / "zero-node", stat.S_IFCHR | 0o666, os.makedev(1, 5))
        os.mknod(workspace / "urandom-node", stat.S_IFCHR | 0o666, os.makedev(1, 9))
    except OSError:
        return workspace, False
    return workspace, True


def reply_calls(calls: list[Hostile]) -> list[dict[str, Any]]:
    """Each hostile call followed by a valid one, so stuck detection (exit 5) does not end the run
    before every case has been seen."""
    out: list[dict[str, Any]] = []
    for index, hostile in enumerate(calls):
        out.append(call(hostile.name, hostile.arguments, f"h{index}"))
        out.append(call("read_file", {"path": "ok.txt"}, f"ok{index}"))
    return out


@dataclass
class HostileRun:
    """One provider's run over every hostile call, and where it ran."""

    run: Run
    calls: list[Hostile]
    devices: bool  # whether device nodes could be made here (root, or CAP_MKNOD)
    workspace: Path
    home: Path
    session_id: str
    server: FakeLLMServer


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, HostileRun]:
    """One run per provider over every hostile call (module scope: 10 MB twice is enough).

    Each is a real process, so that a call that hangs (a FIFO, a device) fails at the timeout
    instead of hanging the suite; the two run side by side. Their folders are made here, before
    the threads: pytest makes its base temp folder on first use, and an xdist worker's (a given
    `--basetemp`) is emptied then, so two threads making the first folders of a worker at once
    had one delete the other's workspace ("workspace does not exist")."""
    roots = {provider: tmp_path_factory.mktemp(f"hostile-{provider}") for provider in PROVIDERS}

    def observe(provider: str) -> HostileRun:
        workspace, devices = hostile_workspace(roots[provider])
        home = workspace / ".rhome"  # RECURSIVE_HOME inside the workspace
        session_id = "hostile"  # (each provider has its own home)
        calls = hostile_calls(session_id)
        with FakeLLMServer([{"tool_calls": reply_calls(calls)}, {"text": "done"}]) as server:
            run = agent("run", "poke at everything", "-C", str(workspace), *provider_args(server, provider),
                        "--session-id", session_id, "-o", "stream-json",
                        env={"RECURSIVE_HOME": str(home)}, timeout=60)
        return HostileRun(run, calls, devices, workspace, home, session_id, server)

    with ThreadPoolExecutor(max_workers=len(PROVIDERS)) as pool:
        return dict(zip(PROVIDERS, pool.map(observe, PROVIDERS)))


def test_hostile_calls_get_clear_results(observed: dict[str, HostileRun]) -> None:
    results: dict[str, dict[str, str]] = {}
    for provider, seen in observed.items():
        run = seen.run
        assert run.code == 0, run.stderr
        run.assert_clear(errors=0)
        records = run.records()  # every line is one JSON object, valid UTF-8, binary output included
        assert records[-1]["result"] == "done"
        session = inspect_session(seen.home, seen.session_id)
        assert session.status == "completed" and session.unanswered_calls() == []
        tool_lines = [line for line in run.stderr.splitlines() if line.startswith(("✓", "✗"))]
        scrub = Scrub(ws=seen.workspace, home=seen.home, tmp=seen.workspace.parent)
        results[provider] = {}
        for index, hostile in enumerate(seen.calls):
            if hostile.case.startswith("device-node") and not seen.devices:
                continue  # cannot make device nodes here; the doc keeps the row from a machine that can
            result = session.result_of(f"h{index}")
            assert result.is_error is hostile.is_error, (provider, hostile.case, result.content[:300])
            shown = model_view(hostile.case, scrub(result.content))
            results[provider][hostile.case] = shown
            if provider == "openai":
                sees = (user_view(scrub(tool_lines[2 * index])), "model gets: " + shown)
                check_row(Row(hostile.case, sees, str(run.code), f"`{session.status}`; the call and its "
                              "result are in it; `sessions show` loads it"))
        check_effects(seen)
    volatile = {"output-binary"}  # random bytes
    assert {k: v for k, v in results["openai"].items() if k not in volatile} == \
        {k: v for k, v in results["anthropic"].items() if k not in volatile}


def model_view(case: str, content: str) -> str:
    """The result as the table shows it: its start, or for random bytes what was done to them."""
    if case == "output-binary":  # the bytes are random: show how the output was cut and closed
        marker = re.search(r"\[\d+ bytes of output omitted\]", content)
        assert marker and "\ufffd" in content, content[:300]
        return f"… {marker[0]} … {content.splitlines()[-1]} (bytes that are not UTF-8 as U+FFFD)"
    flat = " ".join(content.split())
    return flat if len(flat) <= RESULT_CHARS else flat[: RESULT_CHARS - 1] + "…"


def user_view(line: str) -> str:
    """A stderr tool line, without a summary that a temp path made machine-dependent."""
    head, _, summary = line.partition(" (")
    return head if "<tmp>" in summary or summary.endswith("…)") else line


def check_effects(seen: HostileRun) -> None:
    """What the hostile calls must and must not have done on disk and on the wire."""
    workspace, home, session_id, server = seen.workspace, seen.home, seen.session_id, seen.server
    assert (workspace / "big.txt").stat().st_size == TEN_MB
    assert not (workspace.parent / "outside.txt").exists()
    assert not (workspace.parent / "outside" / "planted.txt").exists()
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert not (home / "config.toml").exists()
    transcript = (home / "sessions" / session_id / "transcript.jsonl").read_bytes()
    assert transcript.startswith(b'{"type":"session"')  # the edit would have made it "hacked"
    assert not (workspace / "s.txt").exists()
    second = server.requests[1].body
    assert any("bad\ufffdname.txt" in text for text in strings(second)), \
        "a file name that is not UTF-8 reaches the model as U+FFFD"


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys too (rather than the repr of a body of 40 MB)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_two_hundred_calls_in_one_response(workspace: Path, isolated_home: Path) -> None:
    provider = "anthropic"  # the harder wire form: 200 results grouped into one user message
    (workspace / "ok.txt").write_text("".join(f"line {i}\n" for i in range(1, 201)))
    calls = [call("read_file", {"path": "ok.txt", "offset": i, "limit": 1}, f"c{i}") for i in range(1, 201)]
    with FakeLLMServer([{"tool_calls": calls}, {"text": "read them all"}]) as server:
        run = agent("run", "read every line", "-C", str(workspace), *provider_args(server, provider),
                    "--session-id", "many", in_process=True)
        body = server.requests[1].body
    assert run.code == 0 and run.stdout == "read them all\n", run.stderr
    run.assert_clear(errors=0)
    answered = [b["tool_use_id"] for m in body["messages"] if isinstance(m["content"], list)
                for b in m["content"] if b.get("type") == "tool_result"]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert answered == [f"c{i}" for i in range(1, 201)]
    session = inspect_session(isolated_home, "many")
    assert session.unanswered_calls() == [] and len(session.messages) == 203
    check_row(Row("calls-200", ("200 × ✓ read_file ok.txt (lines N-N)", "then the answer on stdout"),
                  str(run.code), session.summary("all 200 results, sent back in one request "
                                                 "(one user message of 200 tool results)")))
