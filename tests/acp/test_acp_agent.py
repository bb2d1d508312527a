"""`recursive acp` driven by the official Python ACP client: sessions, streamed updates, tool
calls with their diffs, permission requests, cancellation, `session/load` after a restart."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from acphelpers import TIMEOUT, RecordingClient, acp, agent, prompts, schema
from clitools import write_script
from fakeserver import FakeLLMServer

# A 1x1 PNG (a red pixel).
PNG_1X1 = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")


def edit(path: str, old: str, new: str) -> dict[str, object]:
    return {"name": "edit_file", "arguments": {"path": path, "old_string": old, "new_string": new}}


def text_prompt(text: str) -> list[schema.TextContentBlock]:
    return [schema.TextContentBlock(type="text", text=text)]


async def prompt(conn: object, session_id: str, text: str) -> schema.PromptResponse:
    return await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=text_prompt(text)),  # type: ignore[attr-defined]
                                  TIMEOUT)


def test_a_turn_streams_thinking_text_and_an_edit_with_its_diff(tmp_path: Path, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("hello world\n", encoding="utf-8")
    script = write_script(tmp_path / "s.json", [
        {"thinking": "the greeting is too long", "text": "Shortening it.",
         "tool_calls": [edit("notes.txt", "hello world", "hi")]},
        {"text": "Done: notes.txt says hi."},
    ])
    client = RecordingClient()

    async def main() -> tuple[schema.NewSessionResponse, schema.PromptResponse]:
        async with agent(client, "--provider", "scripted", "--script", str(script),
                         "--permission-mode", "auto", cwd=workspace) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            return session, await prompt(conn, session.session_id, "shorten the greeting")

    session, answer = asyncio.run(main())
    assert answer.stop_reason == "end_turn"
    assert client.init is not None and client.init.agent_capabilities.load_session is True
    assert client.init.agent_capabilities.prompt_capabilities.image is True
    assert client.init.agent_info.name == "recursive"
    assert session.modes is not None and session.modes.current_mode_id == "auto"
    assert {mode.id for mode in session.modes.available_modes} == {"ask", "accept-edits", "auto", "read-only", "plan"}
    assert {sid for sid, _ in client.updates} == {session.session_id}
    assert client.text("agent_thought_chunk") == "the greeting is too long"
    assert client.text() == "Shortening it.Done: notes.txt says hi."
    [start] = client.of("tool_call")
    assert (start.kind, start.status, start.title) == ("edit", "pending", "edit_file notes.txt")
    assert [location.path for location in start.locations] == [str(workspace / "notes.txt")]
    assert start.raw_input == {"path": "notes.txt", "old_string": "hello world", "new_string": "hi"}
    [proposal] = start.content
    assert (proposal.type, proposal.old_text, proposal.new_text) == ("diff", "hello world\n", "hi\n")
    [done] = client.of("tool_call_update")
    assert (done.tool_call_id, done.status) == (start.tool_call_id, "completed")
    [made] = done.content
    assert (made.path, made.old_text, made.new_text) == (str(workspace / "notes.txt"), "hello world\n", "hi\n")
    assert (workspace / "notes.txt").read_text(encoding="utf-8") == "hi\n"
    kinds = [update.session_update for _, update in client.updates]  # the call comes between the chunks
    assert kinds.index("tool_call") < kinds.index("tool_call_update") < len(kinds) - 1


def test_ask_mode_requests_permission_reject_then_allow(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    (workspace / "a.txt").write_text("one\n", encoding="utf-8")
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"tool_calls": [edit("a.txt", "one", "two")]},
        {"text": "It was refused; asking again.", "tool_calls": [edit("a.txt", "one", "three")]},
        {"text": "a.txt says three."},
    ])
    client = RecordingClient(answers=["reject_once", "allow_once"])

    async def main() -> tuple[str, schema.PromptResponse]:
        async with agent(client, "--provider", "scripted", "--script", str(script), cwd=workspace) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            assert session.modes.current_mode_id == "ask"  # an editor's default, nothing configured
            return session.session_id, await prompt(conn, session.session_id, "change a.txt")

    session_id, answer = asyncio.run(main())
    assert answer.stop_reason == "end_turn"
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "three\n"
    starts = client.of("tool_call")
    assert [start.kind for start in starts] == ["read", "edit", "edit"]
    assert len(client.asked) == 2  # the read ran without asking
    for request, start in zip(client.asked, starts[1:]):
        assert request.session_id == session_id
        assert request.tool_call.tool_call_id == start.tool_call_id
        assert request.tool_call.content[0].new_text in ("two\n", "three\n")
        assert {option.kind for option in request.options} == {"allow_once", "allow_always", "reject_once",
                                                                 "reject_always"}
    assert [update.status for update in client.of("tool_call_update")] == ["completed", "failed", "completed"]
    refused = client.of("tool_call_update")[1].content[0].content.text
    assert "permission denied" in refused
    transcript = (isolated_home / "sessions" / session_id / "transcript.jsonl").read_text(encoding="utf-8")
    assert "permission denied" in transcript and "a.txt says three." in transcript


def test_always_answers_last_for_the_session(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "1"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "2"}}]},
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo hi > y.txt"}}]},
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo hi > z.txt"}}]},
        {"text": "ok"},
    ])
    client = RecordingClient(answers=["allow_always", "reject_always"])
    [answer] = prompts(client, script, workspace, "go", flags=("--sandbox", "off"))
    assert answer.stop_reason == "end_turn"
    assert [request.tool_call.title for request in client.asked] == ["write_file x.txt", "run_shell echo hi > y.txt"]
    assert (workspace / "x.txt").read_text(encoding="utf-8") == "2"
    assert not (workspace / "y.txt").exists() and not (workspace / "z.txt").exists()
    assert [update.status for update in client.of("tool_call_update")] == ["completed", "completed", "failed", "failed"]


def test_cancel_stops_the_turn_and_the_session_goes_on(workspace: Path) -> None:
    held = threading.Event()
    with FakeLLMServer([{"text": "thinking it over", "hold": held}, {"text": "second answer"}]) as server:
        client = RecordingClient()

        async def main() -> tuple[schema.PromptResponse, schema.PromptResponse]:
            async with agent(client, "--provider", "openai", "--api-base", server.openai_base_url, "-m", "fake-model",
                             cwd=workspace) as (conn, _):
                session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
                running = asyncio.ensure_future(prompt(conn, session.session_id, "a long question"))
                while not server.requests:  # (the model has been asked: the turn is under way)
                    await asyncio.sleep(0.02)
                try:  # one prompt at a time in a session
                    await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=text_prompt("too")), TIMEOUT)
                except acp.RequestError as exc:
                    assert exc.code == -32600 and "already running" in str(exc.data)
                else:
                    raise AssertionError("a second prompt ran alongside the first")
                await conn.cancel(session_id=session.session_id)
                first = await asyncio.wait_for(running, TIMEOUT)
                held.set()
                return first, await prompt(conn, session.session_id, "a short one")

        first, second = asyncio.run(main())
    assert first.stop_reason == "cancelled"
    assert first.field_meta == {"recursive": {"finish_reason": "interrupted", "detail": first.field_meta["recursive"]["detail"]}}
    assert second.stop_reason == "end_turn"
    assert "second answer" in client.text()


def test_load_session_after_a_restart_replays_and_continues(workspace: Path, isolated_home: Path) -> None:
    (workspace / "f.py").write_text("x = 1\n", encoding="utf-8")
    with FakeLLMServer([{"text": "Editing.", "tool_calls": [edit("f.py", "x = 1", "x = 2")]},
                        {"text": "f.py sets x to 2."},
                        {"text": "It was 1 before."}]) as server:
        args = ("--provider", "openai", "--api-base", server.openai_base_url, "-m", "fake-model",
                "--permission-mode", "auto")
        first, again = RecordingClient(), RecordingClient()

        async def before() -> str:
            async with agent(first, *args, cwd=workspace) as (conn, _):
                session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
                assert (await prompt(conn, session.session_id, "bump x")).stop_reason == "end_turn"
                return session.session_id

        async def after(session_id: str) -> schema.PromptResponse:
            async with agent(again, *args, cwd=workspace) as (conn, _):
                listed = await asyncio.wait_for(conn.list_sessions(cwd=str(workspace)), TIMEOUT)
                assert [(info.session_id, info.title, info.cwd) for info in listed.sessions] == [
                    (session_id, "bump x", str(workspace))]
                loaded = await asyncio.wait_for(conn.load_session(cwd=str(workspace), session_id=session_id,
                                                                  mcp_servers=[]), TIMEOUT)
                assert loaded.modes.current_mode_id == "auto"
                replayed = len(again.updates)
                assert replayed > 0  # all of the history came before the answer
                return await prompt(conn, session_id, "what was it before?")

        session_id = asyncio.run(before())
        answer = asyncio.run(after(session_id))
    assert answer.stop_reason == "end_turn"
    kinds = [update.session_update for _, update in again.updates]
    assert kinds[:5] == ["user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update",
                         "agent_message_chunk"]
    assert again.of("user_message_chunk")[0].content.text == "bump x"
    replayed_call = again.of("tool_call")[0]
    assert replayed_call.tool_call_id == first.of("tool_call")[0].tool_call_id
    assert [(diff.path, diff.old_text, diff.new_text) for diff in replayed_call.content] == [
        (str(workspace / "f.py"), "x = 1", "x = 2")]
    assert again.of("tool_call_update")[0].status == "completed"
    assert again.text().endswith("It was 1 before.")
    sent = json.dumps(server.requests[-1].body["messages"])  # the model saw the whole conversation
    assert "bump x" in sent and "f.py sets x to 2." in sent and "what was it before?" in sent
    meta = json.loads((isolated_home / "sessions" / session_id / "meta.json").read_text(encoding="utf-8"))
    assert meta["status"] == "completed"


def test_set_mode_read_only_refuses_edits_without_asking(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "1"}}]},
        {"text": "cannot write here"},
    ])
    client = RecordingClient()

    async def main() -> schema.PromptResponse:
        async with agent(client, "--provider", "scripted", "--script", str(script), cwd=workspace) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.set_session_mode(session_id=session.session_id, mode_id="read-only")
            with_bad_mode = conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
            try:
                await with_bad_mode
            except acp.RequestError as exc:
                assert exc.code == -32602 and "yolo" in str(exc.data)
            else:
                raise AssertionError("an unknown mode was taken")
            return await prompt(conn, session.session_id, "write x")

    assert asyncio.run(main()).stop_reason == "end_turn"
    assert client.asked == [] and not (workspace / "x.txt").exists()
    assert client.of("tool_call_update")[0].status == "failed"


def test_stop_reasons_of_a_cut_reply_a_refusal_and_the_step_limit(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"text": "a long answer that", "stop": "length"},
        {"text": "I won't do that.", "stop": "refusal"},
        {"tool_calls": [{"name": "list_dir", "arguments": {}}]},
    ])
    answers = prompts(RecordingClient(), script, workspace, "a", "b", "c", flags=("--max-steps", "1"))
    assert [answer.stop_reason for answer in answers] == ["max_tokens", "refusal", "max_turn_requests"]


def test_provider_error_is_a_json_rpc_error(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"error": {"status": 401, "message": "bad key"}}, {"text": "fine now"}])
    client = RecordingClient()

    async def main() -> tuple[acp.RequestError, schema.PromptResponse]:
        async with agent(client, "--provider", "scripted", "--script", str(script), cwd=workspace) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            try:
                await prompt(conn, session.session_id, "hi")
            except acp.RequestError as exc:
                return exc, await prompt(conn, session.session_id, "again")
            raise AssertionError("no error")

    error, later = asyncio.run(main())
    assert error.code == -32603 and "bad key" in error.data["details"]
    assert later.stop_reason == "end_turn"


@pytest.mark.parametrize("given_by", ["client", "workspace"])
def test_the_clients_mcp_servers_start_in_an_untrusted_workspace_and_its_own_do_not(
        given_by: str, tmp_path: Path, workspace: Path) -> None:
    command = shutil.which("mcp-server-time")
    if command is None:
        pytest.skip("mcp-server-time is not installed (pip install -e '.[test]')")
    if given_by == "workspace":  # (the folder's own .mcp.json waits for `recursive trust`)
        (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"time": {"command": command}}}))
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "mcp__time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}]},
        {"text": "It is late in Tokyo."},
    ])
    client = RecordingClient()

    async def main() -> schema.PromptResponse:
        async with agent(client, "--provider", "scripted", "--script", str(script), "--permission-mode", "auto",
                         cwd=workspace) as (conn, _):
            servers = [schema.McpServerStdio(name="time", command=command, args=[], env=[])] if given_by == "client" else []
            session = await asyncio.wait_for(conn.new_session(cwd=str(workspace), mcp_servers=servers), TIMEOUT)
            return await prompt(conn, session.session_id, "what time is it in Tokyo?")

    assert asyncio.run(main()).stop_reason == "end_turn"
    [start] = client.of("tool_call")
    [done] = client.of("tool_call_update")
    if given_by == "client":
        assert (start.title, start.kind) == ("mcp__time__get_current_time Asia/Tokyo", "other")
        assert done.status == "completed" and "Asia/Tokyo" in done.content[0].content.text
    else:  # (no such tool here: the call names no subject and fails)
        assert (start.title, done.status) == ("mcp__time__get_current_time", "failed")


def test_images_and_embedded_files_reach_the_model(workspace: Path) -> None:
    pixel = base64.b64encode(PNG_1X1).decode("ascii")
    with FakeLLMServer([{"text": "a red dot"}]) as server:
        client = RecordingClient()

        async def main() -> schema.PromptResponse:
            async with agent(client, "--provider", "openai", "--api-base", server.openai_base_url, "-m", "fake-model",
                             cwd=workspace) as (conn, _):
                session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
                blocks = [schema.TextContentBlock(type="text", text="what is in the picture, and in the file?"),
                          schema.ImageContentBlock(type="image", mime_type="image/png", data=pixel),
                          schema.EmbeddedResourceContentBlock(type="resource", resource=schema.TextResourceContents(
                              uri=f"file://{workspace}/notes.md", text="remember the milk")),
                          schema.ResourceContentBlock(type="resource_link", name="spec", uri="file:///spec.md")]
                return await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=blocks), TIMEOUT)

        assert asyncio.run(main()).stop_reason == "end_turn"
        [user] = [m for m in server.requests[0].body["messages"] if m["role"] == "user"]
    parts = {part["type"]: part for part in user["content"]}
    assert parts["image_url"]["image_url"]["url"] == f"data:image/png;base64,{pixel}"
    assert "remember the milk" in parts["text"]["text"] and "notes.md" in parts["text"]["text"]
    assert "@file:///spec.md" in parts["text"]["text"]


def test_bad_input_gets_json_rpc_errors_and_the_agent_goes_on(workspace: Path) -> None:
    lines = [
        "this is not json",
        "[1, 2]",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "no/such_method", "params": {}}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": 5}}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {"cwd": "relative/dir", "mcpServers": []}}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
                    "params": {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}}),
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "session/load",
                    "params": {"sessionId": "20260101-000000-none", "cwd": str(workspace), "mcpServers": []}}),
        json.dumps({"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": {"protocolVersion": 1}}),
    ]
    done = subprocess.run([sys.executable, "-m", "recursive_cli", "acp", "--provider", "scripted"],
                          input="\n".join(lines) + "\n", capture_output=True, text=True, cwd=workspace, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]  # every stdout line is one message
    by_id = {answer.get("id"): answer for answer in answers if answer.get("id") is not None}
    unnumbered = [answer["error"]["code"] for answer in answers if answer.get("id") is None]
    assert sorted(unnumbered) == [-32700, -32600]
    assert by_id[1]["error"]["code"] == -32601
    assert by_id[2]["error"]["code"] == -32602
    assert by_id[3]["error"]["code"] == -32602 and "absolute" in by_id[3]["error"]["data"]["details"]
    assert by_id[4]["error"]["code"] == -32002
    assert by_id[5]["error"]["code"] == -32602 and "20260101-000000-none" in by_id[5]["error"]["data"]["details"]
    assert by_id[6]["result"]["agentCapabilities"]["loadSession"] is True
    assert "Traceback" not in done.stderr


def test_plan_mode_puts_the_plan_to_the_client_and_carries_it_out_once_approved(tmp_path: Path,
                                                                                workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": "1. write x.txt"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "planned"}}]},
        {"text": "Carried out."},
    ])
    client = RecordingClient(answers=["allow_always"])  # (the first such option: "Yes, and accept edits")
    [answer] = prompts(client, script, workspace, "plan the change", mode="plan")
    assert answer.stop_reason == "end_turn"
    [asked] = client.asked  # the plan; the write ran without asking, in accept-edits mode
    assert (asked.tool_call.kind, asked.tool_call.content[0].content.text) == ("switch_mode", "1. write x.txt")
    assert asked.tool_call.tool_call_id == client.of("tool_call")[0].tool_call_id
    assert [update.current_mode_id for update in client.of("current_mode_update")] == ["accept-edits"]
    assert (workspace / "x.txt").read_text(encoding="utf-8") == "planned"
    assert client.text() == "Carried out."


def test_a_plan_not_approved_keeps_plan_mode(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": "1. write x.txt"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "no"}}]},
        {"text": "Still planning."},
    ])
    client = RecordingClient(answers=["reject_once"])
    answers = prompts(client, script, workspace, "plan it", "write it", mode="plan")
    assert [answer.stop_reason for answer in answers] == ["end_turn", "end_turn"]
    assert len(client.asked) == 1 and client.of("current_mode_update") == []
    assert not (workspace / "x.txt").exists()
    assert client.of("tool_call_update")[-1].status == "failed"  # plan mode refused the write


@pytest.mark.parametrize("ending", ["eof", "sigterm"])
def test_the_editor_going_away_mid_turn_leaves_the_session_saved(ending: str, workspace: Path,
                                                                  isolated_home: Path) -> None:
    held = threading.Event()
    with FakeLLMServer([{"text": "never sent", "hold": held}]) as server:
        client = RecordingClient()

        async def main() -> tuple[str, int]:
            async with agent(client, "--provider", "openai", "--api-base", server.openai_base_url, "-m", "fake-model",
                             cwd=workspace) as (conn, process):
                session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
                running = asyncio.ensure_future(prompt(conn, session.session_id, "a long question"))
                while not server.requests:
                    await asyncio.sleep(0.02)
                if ending == "eof":
                    process.stdin.close()
                else:
                    process.send_signal(signal.SIGTERM)
                code = await asyncio.wait_for(process.wait(), TIMEOUT)
                running.cancel()
                return session.session_id, code

        session_id, code = asyncio.run(main())
        held.set()
    assert code == (0 if ending == "eof" else 143)
    meta = json.loads((isolated_home / "sessions" / session_id / "meta.json").read_text(encoding="utf-8"))
    assert meta["status"] == "interrupted"
    listed = subprocess.run([sys.executable, "-m", "recursive_cli", "sessions", "show", session_id],
                            capture_output=True, text=True, cwd=workspace, timeout=TIMEOUT)
    assert listed.returncode == 0 and "a long question" in listed.stdout


def test_todo_write_is_the_sessions_plan(tmp_path: Path, workspace: Path) -> None:
    todos = [{"content": "read the parser", "status": "completed"}, {"content": "fix the bug", "status": "in_progress"}]
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]},
        {"text": "on it"},
    ])
    client = RecordingClient()
    [answer] = prompts(client, script, workspace, "plan", flags=("--no-session",))
    assert answer.stop_reason == "end_turn"
    [plan] = client.of("plan")
    assert [(entry.content, entry.status) for entry in plan.entries] == [
        ("read the parser", "completed"), ("fix the bug", "in_progress")]
    assert client.of("tool_call")[0].kind == "think" and client.asked == []
    assert client.init is not None and client.init.agent_capabilities.load_session is False  # (--no-session)


def test_cancel_while_asked_ends_the_turn_cancelled_and_runs_nothing(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "1"}}]},
        {"text": "next prompt"},
    ])
    client = RecordingClient(answers=["cancel"])
    answers = prompts(client, script, workspace, "write x", "again")
    assert [answer.stop_reason for answer in answers] == ["cancelled", "end_turn"]
    assert len(client.asked) == 1 and not (workspace / "x.txt").exists()
    assert client.text() == "next prompt"  # (the turn ended at the question: the model was not asked again)


def test_a_file_outside_the_workspace_is_neither_read_nor_shown(tmp_path: Path, workspace: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n", encoding="utf-8")
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [edit(str(secret), "top", "no")]},
        {"text": "it is outside"},
    ])
    client = RecordingClient()
    [answer] = prompts(client, script, workspace, "edit it", flags=("--permission-mode", "auto"))
    assert answer.stop_reason == "end_turn"
    [start] = client.of("tool_call")
    assert start.locations is None and start.content is None
    assert all("top secret" not in update.model_dump_json() for _, update in client.updates)
    assert client.of("tool_call_update")[0].status == "failed"
    assert secret.read_text(encoding="utf-8") == "top secret\n"
