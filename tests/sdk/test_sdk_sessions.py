"""Sessions run through `recursive` (as the SDK's `cli_path=`) seen through the Agent SDK's own
session API: `list_sessions()`, `get_session_info()`, `get_session_messages()`, a `SessionStore`
fed by `--session-mirror`, and the truncating resume (`resume_session_at`, `resume_drops_turn`)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from clitools import json_lines, require, run_cli, write_script

from .conftest import AgentCli
from .test_python_sdk import collect_until_error as run

sdk = require("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeAgentOptions,
    InMemorySessionStore,
    ResultMessage,
    UserMessage,
    fork_session,
    get_session_info,
    get_session_messages,
    get_session_messages_from_store,
    list_sessions,
    project_key_for_directory,
)

TIMEOUT = 60


def options(cli: AgentCli, **kwargs: Any) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(cli_path=str(cli.path), cwd=str(cli.workspace), env=cli.env(), **kwargs)


def ok(prompt: str, opts: ClaudeAgentOptions) -> list[Any]:
    messages, error = run(prompt, opts)
    assert error is None, error
    return messages


def session_of(messages: list[Any]) -> str:
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert len(results) == 1 and not results[0].is_error, messages
    return results[0].session_id


def texts(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of each user and assistant message the model received (tool results as `tool`)."""
    return [(m["role"], m.get("content") or "") for m in body["messages"] if m["role"] != "system"]


def test_a_session_is_listed_and_read_back_in_order(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "", "tool_calls": [{"name": "run_shell", "arguments": {"command": "echo hi"}}]},
                         {"text": "It said hi."})

    messages = ok("Say hi with the shell", options(agent_cli))
    session_id = session_of(messages)

    listed = list_sessions(str(agent_cli.workspace))
    assert [info.session_id for info in listed] == [session_id]
    info = listed[0]
    assert info.summary == "Say hi with the shell" and info.first_prompt == "Say hi with the shell"
    assert info.cwd == os.path.realpath(agent_cli.workspace)
    assert get_session_info(session_id) is not None and get_session_info(session_id).summary == info.summary
    read = get_session_messages(session_id, str(agent_cli.workspace))
    assert [m.type for m in read] == ["user", "assistant", "user", "assistant"]
    assert read[0].message == {"role": "user", "content": "Say hi with the shell"}
    call = read[1].message["content"][0]
    assert call["type"] == "tool_use" and call["name"] == "Bash" and call["input"]["command"] == "echo hi"
    result = read[2].message["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == call["id"] and "hi" in result["content"]
    assert read[3].message["content"] == [{"type": "text", "text": "It said hi."}]
    # The stream's lines and the session's messages are the same messages, by uuid.
    streamed = [m.uuid for m in messages if isinstance(m, (AssistantMessage, UserMessage))]
    assert streamed == [m.uuid for m in read[1:]]
    assert {m.session_id for m in read} == {session_id}


def test_a_session_store_gets_the_transcript(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "Hello there."})
    store = InMemorySessionStore()

    session_id = session_of(ok("Greet me", options(agent_cli, session_store=store)))

    key = {"project_key": project_key_for_directory(agent_cli.workspace), "session_id": session_id}
    entries = asyncio.run(store.load(key))  # type: ignore[arg-type]
    assert entries, "the store got nothing"
    on_disk = [json.loads(line) for line in _view(agent_cli, session_id).read_text().splitlines()]
    assert entries == on_disk
    from_store = asyncio.run(get_session_messages_from_store(store, session_id, directory=str(agent_cli.workspace)))
    assert [(m.type, m.uuid) for m in from_store] == [(m.type, m.uuid) for m in
                                                       get_session_messages(session_id, str(agent_cli.workspace))]
    assert [m.type for m in from_store] == ["user", "assistant"]
    # Resumed through the store (the SDK copies it into a CLAUDE_CONFIG_DIR of its own): the
    # store gets the new turn, on the same chain.
    agent_cli.server.add({"text": "Hello again."})
    assert session_of(ok("Again", options(agent_cli, session_store=store, resume=session_id))) == session_id
    again = asyncio.run(get_session_messages_from_store(store, session_id, directory=str(agent_cli.workspace)))
    assert [m.type for m in again] == ["user", "assistant", "user", "assistant"]
    assert [m.uuid for m in again[:2]] == [m.uuid for m in from_store]
    mirrored = [line for line in agent_cli.lines() if line["type"] == "transcript_mirror"][:1]
    assert {line["filePath"] for line in mirrored} == {str(_view(agent_cli, session_id))}
    lines = [line["type"] for line in agent_cli.lines()]
    first_run = lines[:lines.index("result") + 1]
    assert "transcript_mirror" in first_run and first_run[-1] == "result"


def test_no_mirror_lines_unless_asked(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "Hello there."})

    session_id = session_of(ok("Greet me", options(agent_cli)))

    assert _view(agent_cli, session_id).exists()
    assert not [line for line in agent_cli.lines() if line["type"] == "transcript_mirror"]


def _view(cli: AgentCli, session_id: str) -> Path:
    (path,) = Path(os.environ["CLAUDE_CONFIG_DIR"]).glob(f"projects/*/{session_id}.jsonl")
    return path


def _two_turns(cli: AgentCli) -> tuple[str, list[Any]]:
    cli.server.add({"text": "one"}, {"text": "two"})
    session_id = session_of(ok("first", options(cli)))
    session_of(ok("second", options(cli, resume=session_id)))
    read = get_session_messages(session_id, str(cli.workspace))
    assert [(m.type, m.message["content"] if m.type == "user" else m.message["content"][0]["text"])
            for m in read] == [("user", "first"), ("assistant", "one"), ("user", "second"), ("assistant", "two")]
    return session_id, read


def test_resume_at_a_message_drops_the_turns_after_it(agent_cli: AgentCli) -> None:
    session_id, read = _two_turns(agent_cli)
    agent_cli.server.add({"text": "three"})
    before = len(agent_cli.server.requests)

    messages = ok("third", options(agent_cli, resume=session_id, resume_session_at=read[1].uuid,
                                   resume_drops_turn=read[2].uuid))

    assert session_of(messages) == session_id
    (request,) = agent_cli.server.requests[before:]
    assert texts(request.body) == [("user", "first"), ("assistant", "one"), ("user", "third")]
    after = get_session_messages(session_id, str(agent_cli.workspace))
    assert [m.uuid for m in after[:2]] == [read[0].uuid, read[1].uuid]
    assert [m.message["content"] if m.type == "user" else m.message["content"][0]["text"]
            for m in after] == ["first", "one", "third", "three"]
    # A later plain resume goes on from there too.
    agent_cli.server.add({"text": "four"})
    ok("fourth", options(agent_cli, resume=session_id))
    assert texts(agent_cli.server.requests[-1].body) == [
        ("user", "first"), ("assistant", "one"), ("user", "third"), ("assistant", "three"), ("user", "fourth")]


def test_resume_at_a_message_in_a_fork_leaves_the_session(agent_cli: AgentCli) -> None:
    session_id, read = _two_turns(agent_cli)
    agent_cli.server.add({"text": "branch"})

    fork = session_of(ok("other", options(agent_cli, resume=session_id, fork_session=True,
                                          resume_session_at=read[1].uuid)))

    assert fork != session_id
    assert texts(agent_cli.server.requests[-1].body) == [("user", "first"), ("assistant", "one"), ("user", "other")]
    assert [m.uuid for m in get_session_messages(session_id, str(agent_cli.workspace))] == [m.uuid for m in read]
    forked = get_session_messages(fork, str(agent_cli.workspace))
    assert [m.type for m in forked] == ["user", "assistant", "user", "assistant"]
    assert {info.session_id for info in list_sessions(str(agent_cli.workspace))} == {session_id, fork}


def test_a_wrong_resume_point_is_refused(agent_cli: AgentCli) -> None:
    session_id, read = _two_turns(agent_cli)
    before = len(agent_cli.server.requests)
    missing = "00000000-0000-4000-8000-000000000000"

    _, error = run("third", options(agent_cli, resume=session_id, resume_session_at=missing))
    assert error is not None and f"No message found with message.uuid of: {missing}" in str(error)

    # Dropping turn 2 declared as turn 1's: refused, in Claude Code's words.
    _, error = run("third", options(agent_cli, resume=session_id, resume_session_at=read[1].uuid,
                                    resume_drops_turn=read[0].uuid))
    assert error is not None and "Resume rejected by --resume-drops-turn:" in str(error)
    assert f"first discarded entry 0 [type=user, uuid={read[2].uuid}]" in str(error)

    assert len(agent_cli.server.requests) == before  # no model call was made
    assert [m.uuid for m in get_session_messages(session_id, str(agent_cli.workspace))] == [m.uuid for m in read]
    refused = [line for line in agent_cli.lines() if line["type"] == "result" and line["is_error"]]
    assert len(refused) == 2 and all(line["subtype"] == "error_during_execution" for line in refused)


def test_resume_point_refusals_on_the_command_line(workspace: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "replies.json", [{"text": "one"}, {"text": "two"}])
    flags = ("-C", str(workspace), "--provider", "scripted", "--script", str(script), "--no-checkpoints")
    first = run_cli("-p", "first", *flags, "--output-format", "json")
    session_id = json.loads(first.stdout)["session_id"]
    assert run_cli("-p", "second", "--resume", session_id, *flags).returncode == 0
    read = get_session_messages(session_id, str(workspace))
    assert [m.type for m in read] == ["user", "assistant", "user", "assistant"]

    def refused(*args: str) -> tuple[int, str, list[dict[str, Any]]]:
        proc = run_cli("-p", "third", "--resume", session_id, *flags, *args)
        return proc.returncode, proc.stderr, json_lines(proc.stdout)

    code, err, lines = refused(f"--resume-session-at={read[0].uuid}", f"--resume-drops-turn={read[2].uuid}",
                               "--output-format", "stream-json", "--verbose")
    assert code == 1 and "range does not start with the declared turn prompt; first discarded entry 0 " \
        f"[type=assistant, uuid={read[1].uuid}]" in err
    (line,) = lines  # no init line: nothing ran
    assert line["type"] == "result" and line["is_error"] and line["errors"] == [err.strip().removeprefix("error: ")]
    code, err, lines = refused(f"--resume-session-at={read[1].uuid}", "--resume-drops-turn=bogus")
    assert (code, lines) == (1, []) and "declared turn id is not a UUID: bogus" in err
    code, err, _ = refused("--resume-drops-turn=" + read[2].uuid)
    assert code == 2 and "--resume-drops-turn requires --resume-session-at" in err
    proc = run_cli("-p", "third", f"--resume-session-at={read[1].uuid}", *flags)
    assert proc.returncode == 2 and "--resume-session-at requires --resume" in proc.stderr
    assert [m.uuid for m in get_session_messages(session_id, str(workspace))] == [m.uuid for m in read]


# -- against the real Claude Code ---------------------------------------------------------------

def _claude(tmp_path: Path, server: Any) -> dict[str, Any]:
    """Options for the SDK's own bundled Claude Code CLI on the fake model (Anthropic's wire)."""
    bundled = Path(sdk.__file__).parent / "_bundled" / "claude"
    if not bundled.exists():
        pytest.skip("this claude-agent-sdk has no bundled Claude Code")
    workspace = tmp_path / "claude-ws"
    workspace.mkdir()
    env = {"ANTHROPIC_BASE_URL": server.anthropic_base_url, "ANTHROPIC_API_KEY": "sk-test", "HOME": str(tmp_path),
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1"}
    return {"cli_path": str(bundled), "cwd": str(workspace), "env": env, "model": "claude-sonnet-4-5"}


def _anthropic_texts(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of the model's messages, without Claude Code's `<system-reminder>` blocks."""
    out = []
    for message in body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        out += [(message["role"], block["text"]) for block in blocks
                if block.get("type") == "text" and not block["text"].startswith("<system-reminder>")]
    return out


def test_claude_code_does_the_same(agent_cli: AgentCli, tmp_path: Path) -> None:
    """The same two turns, truncating resume and refusal with the real Claude Code: what the SDK
    reads back, what the model gets on the resume and the refusal's words agree with ours."""
    from fakeserver import FakeLLMServer

    with FakeLLMServer([{"text": "one"}, {"text": "two"}, {"text": "three"}], model="claude-sonnet-4-5") as server:
        claude = _claude(tmp_path, server)
        first = session_of(ok("first", ClaudeAgentOptions(**claude)))
        session_of(ok("second", ClaudeAgentOptions(**claude, resume=first)))
        read = get_session_messages(first, claude["cwd"])
        assert [m.type for m in read] == ["user", "assistant", "user", "assistant"]
        assert list_sessions(claude["cwd"])[0].summary == "second"
        at, drops = read[1].uuid, read[2].uuid
        ok("third", ClaudeAgentOptions(**claude, resume=first, resume_session_at=at, resume_drops_turn=drops))
        claude_resumed = _anthropic_texts(server.requests[-1].body)
        _, claude_refusal = run("x", ClaudeAgentOptions(**claude, resume=first, resume_session_at=at,
                                                        resume_drops_turn=read[0].uuid))

    ours, ours_read = _two_turns(agent_cli)
    assert list_sessions(str(agent_cli.workspace))[0].summary == "second"
    agent_cli.server.add({"text": "three"})
    ok("third", options(agent_cli, resume=ours, resume_session_at=ours_read[1].uuid,
                        resume_drops_turn=ours_read[2].uuid))
    assert texts(agent_cli.server.requests[-1].body) == claude_resumed == [
        ("user", "first"), ("assistant", "one"), ("user", "third")]
    _, our_refusal = run("x", options(agent_cli, resume=ours, resume_session_at=ours_read[1].uuid,
                                      resume_drops_turn=ours_read[0].uuid))
    # recursive goes on with the session Claude Code ran (its newest branch), from its transcript.
    agent_cli.server.add({"text": "on"})
    ok("go on", ClaudeAgentOptions(cli_path=str(agent_cli.path), cwd=claude["cwd"], env=agent_cli.env(),
                                   resume=first))
    assert texts(agent_cli.server.requests[-1].body) == [
        ("user", "first"), ("assistant", "one"), ("user", "third"), ("assistant", "three"), ("user", "go on")]
    common = "would discard entries not attributable to turn {}: range does not start with the declared turn prompt"
    assert claude_refusal is not None and common.format(read[0].uuid) in str(claude_refusal)
    assert our_refusal is not None and common.format(ours_read[0].uuid) in str(our_refusal)


# -- the view on disk ---------------------------------------------------------------------------

def _scripted(workspace: Path, tmp_path: Path, *replies: str) -> tuple[str, ...]:
    script = write_script(tmp_path / "replies.json", [{"text": text} for text in replies])
    return ("-C", str(workspace), "--provider", "scripted", "--script", str(script), "--no-checkpoints")


def test_a_view_that_cannot_be_written_leaves_the_run_and_session_alone(workspace: Path, tmp_path: Path,
                                                                         isolated_home: Path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")

    proc = run_cli("-p", "hello", *_scripted(workspace, tmp_path, "hi"), "--output-format", "json",
                   env={"CLAUDE_CONFIG_DIR": str(blocked)})

    assert proc.returncode == 0 and json.loads(proc.stdout)["result"] == "hi"
    assert proc.stderr.count("warning: cannot write Claude's transcript") == 1, proc.stderr
    session_id = json.loads(proc.stdout)["session_id"]
    transcript = (isolated_home / "sessions" / session_id / "transcript.jsonl").read_text()
    assert [json.loads(line)["message"]["content"] for line in transcript.splitlines()
            if json.loads(line)["type"] == "message" and json.loads(line)["message"]["role"] != "system"] == ["hello", "hi"]


def test_a_torn_view_line_does_not_swallow_the_next_entry(workspace: Path, tmp_path: Path) -> None:
    flags = _scripted(workspace, tmp_path, "one", "two")
    session_id = json.loads(run_cli("-p", "first", *flags, "--output-format", "json").stdout)["session_id"]
    view = next(Path(os.environ["CLAUDE_CONFIG_DIR"]).glob(f"projects/*/{session_id}.jsonl"))
    with view.open("a") as handle:
        handle.write('{"parentUuid":"cut off by a kill -9')

    assert run_cli("-p", "second", "--resume", session_id, *flags).returncode == 0

    read = get_session_messages(session_id, str(workspace))
    assert [m.type for m in read] == ["user", "assistant", "user", "assistant"]
    assert read[2].message["content"] == "second"


def test_a_client_chosen_prompt_uuid_names_the_prompt(workspace: Path, tmp_path: Path) -> None:
    chosen = "4b0c8a52-7d1e-4f3a-9c2b-6e5d4c3b2a10"
    line = {"type": "user", "message": {"role": "user", "content": "hello"}, "parent_tool_use_id": None,
            "session_id": "", "uuid": chosen}

    proc = run_cli("--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                   "--replay-user-messages", *_scripted(workspace, tmp_path, "hi"), input=json.dumps(line) + "\n")

    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    (replay,) = [out for out in lines if out["type"] == "user" and out.get("isReplay")]
    assert replay["uuid"] == chosen
    session_id = lines[-1]["session_id"]
    assert get_session_messages(session_id, str(workspace))[0].uuid == chosen


def test_turns_run_by_recursive_resume_reach_the_view_at_the_next_headless_run(workspace: Path,
                                                                               tmp_path: Path) -> None:
    flags = _scripted(workspace, tmp_path, "one", "two", "three")
    session_id = json.loads(run_cli("-p", "first", *flags, "--output-format", "json").stdout)["session_id"]
    assert run_cli("resume", session_id, "second", "--no-checkpoints").returncode == 0  # (no view written)
    assert len(get_session_messages(session_id, str(workspace))) == 2

    assert run_cli("-p", "third", "--resume", session_id, *flags).returncode == 0

    read = get_session_messages(session_id, str(workspace))
    assert [m.message["content"] if m.type == "user" else m.message["content"][0]["text"] for m in read] == [
        "first", "one", "second", "two", "third", "three"]



def test_a_session_only_the_sdk_holds_is_resumed(agent_cli: AgentCli, isolated_home: Path) -> None:
    """The SDK's own `fork_session()` copy, and a SessionStore's copy on a machine whose
    recursive never ran the session: `resume` goes on with the conversation either way."""
    agent_cli.server.add({"text": "", "tool_calls": [{"name": "run_shell", "arguments": {"command": "echo hi"}}]},
                         {"text": "It said hi."}, {"text": "two"})
    store = InMemorySessionStore()
    session_id = session_of(ok("Say hi", options(agent_cli, session_store=store)))
    session_of(ok("second", options(agent_cli, resume=session_id)))
    read = get_session_messages(session_id, str(agent_cli.workspace))

    forked = fork_session(session_id, str(agent_cli.workspace), up_to_message_id=read[3].uuid).session_id
    agent_cli.server.add({"text": "forked"})
    assert session_of(ok("from the fork", options(agent_cli, resume=forked))) == forked
    body = agent_cli.server.requests[-1].body
    assert [m["role"] for m in body["messages"][1:]] == ["user", "assistant", "tool", "assistant", "user"]
    assert body["messages"][2]["tool_calls"][0]["function"]["name"] == "run_shell"
    assert json.loads(body["messages"][2]["tool_calls"][0]["function"]["arguments"]) == {"command": "echo hi"}
    assert "hi" in body["messages"][3]["content"] and body["messages"][-1]["content"] == "from the fork"

    shutil.rmtree(isolated_home / "sessions" / session_id)  # (another machine: only the store has it)
    _view(agent_cli, session_id).unlink()
    agent_cli.server.add({"text": "back"})
    assert session_of(ok("again", options(agent_cli, resume=session_id, session_store=store))) == session_id
    assert texts(agent_cli.server.requests[-1].body)[:1] == [("user", "Say hi")]
    assert texts(agent_cli.server.requests[-1].body)[-1] == ("user", "again")


def test_the_transcript_shows_the_prompt_as_typed(workspace: Path, tmp_path: Path) -> None:
    schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})

    proc = run_cli("-p", "How many?", *_scripted(workspace, tmp_path, '{"n": 3}'), "--json-schema", schema,
                   "--output-format", "json")

    assert proc.returncode == 0 and json.loads(proc.stdout)["structured_output"] == {"n": 3}, proc.stdout
    (info,) = list_sessions(str(workspace))
    assert info.summary == "How many?" and info.first_prompt == "How many?"
    assert get_session_messages(info.session_id, str(workspace))[0].message["content"] == "How many?"


def test_sessions_rm_removes_claudes_transcript_too(workspace: Path, tmp_path: Path) -> None:
    flags = _scripted(workspace, tmp_path, "one")
    session_id = json.loads(run_cli("-p", "first", *flags, "--output-format", "json").stdout)["session_id"]
    assert [info.session_id for info in list_sessions(str(workspace))] == [session_id]

    assert run_cli("sessions", "rm", session_id).returncode == 0

    assert list_sessions(str(workspace)) == []
    again = run_cli("-p", "more", "--resume", session_id, *flags)
    assert again.returncode == 1 and f"no session matches {session_id!r}" in again.stderr
