"""Claude's Python Agent SDK (`claude-agent-sdk`) runs on `recursive`: `query()` and
`ClaudeSDKClient`, pointed at it with `cli_path=`, against the loopback fake model."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from clitools import require

from .conftest import AgentCli, system_text, tool_names

sdk = require("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    ToolUseBlock,
    UserMessage,
    query,
)

TIMEOUT = 60  # seconds for a whole SDK conversation; each one takes a few


def options(cli: AgentCli, **kwargs: Any) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(cli_path=str(cli.path), cwd=str(cli.workspace), env=cli.env(), **kwargs)


def collect(prompt: Any, opts: ClaudeAgentOptions) -> list[Any]:
    """Every message `query()` yields."""
    async def run() -> list[Any]:
        return [message async for message in query(prompt=prompt, options=opts)]

    return asyncio.run(asyncio.wait_for(run(), TIMEOUT))


def collect_until_error(prompt: Any, opts: ClaudeAgentOptions) -> tuple[list[Any], Exception | None]:
    """The messages `query()` yields, and the exception it raised after them, if any."""
    messages: list[Any] = []

    async def run() -> None:
        async for message in query(prompt=prompt, options=opts):
            messages.append(message)

    try:
        asyncio.run(asyncio.wait_for(run(), TIMEOUT))
    except Exception as exc:  # the SDK raises for a run that ended in an error result
        return messages, exc
    return messages, None


def result_of(messages: list[Any]) -> ResultMessage:
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert len(results) == 1, messages
    return results[0]


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def test_query_plain(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "Paris is the capital of France."})

    messages = collect("What is the capital of France?", options(agent_cli))

    init = messages[0]
    assert isinstance(init, SystemMessage) and init.subtype == "init"
    assert init.data["cwd"] == str(agent_cli.workspace) and "Bash" in init.data["tools"]
    replies = [m for m in messages if isinstance(m, AssistantMessage)]
    assert [block.text for block in replies[0].content] == ["Paris is the capital of France."]
    assert replies[0].model == "gpt-4.1-mini"
    result = result_of(messages)
    assert (result.subtype, result.is_error, result.result) == ("success", False, "Paris is the capital of France.")
    assert result.num_turns == 1 and result.errors == [] and result.session_id == init.data["session_id"]
    assert result.usage is not None and result.usage["output_tokens"] == 5
    body = agent_cli.server.requests[0].body
    assert body["messages"][-1] == {"role": "user", "content": "What is the capital of France?"}
    # the SDK's `--system-prompt ""` keeps the built-in prompt
    assert str(agent_cli.workspace) in system_text(body)
    kinds = [line["type"] for line in agent_cli.lines()]
    assert kinds[0] == "control_response" and kinds[-1] == "result"


def test_query_with_options(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"tool_calls": [call("write_file", path="notes.txt", content="hi\n")]},
                         {"text": "never asked for"})

    messages, error = collect_until_error("Write notes.txt", options(
        agent_cli, model="fake-large", max_turns=1, allowed_tools=["Write"], tools=["Read", "Write"],
        system_prompt="You are terse."))

    assert (agent_cli.workspace / "notes.txt").read_text() == "hi\n"  # allowed without asking
    result = result_of(messages)
    assert (result.subtype, result.is_error, result.num_turns) == ("error_max_turns", True, 1)
    assert result.errors == ["Reached maximum number of turns (1)"]
    assert error is not None and "returned an error result" in str(error)  # as the SDK says it for Claude
    assert len(agent_cli.server.requests) == 1
    body = agent_cli.server.requests[0].body
    assert body["model"] == "fake-large"
    assert sorted(tool_names(body)) == ["read_file", "write_file"]
    assert system_text(body).startswith("You are terse.")
    init = messages[0]
    assert init.data["tools"] == ["Read", "Write"] and init.data["model"] == "fake-large"
    uses = [block for m in messages if isinstance(m, AssistantMessage) for block in m.content
            if isinstance(block, ToolUseBlock)]
    assert uses[0].name == "Write" and uses[0].input == {
        "file_path": str(agent_cli.workspace / "notes.txt"), "content": "hi\n"}
    agent_cli.lines()


def test_default_mode_denies_without_a_callback_and_the_answer_is_a_success(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"tool_calls": [call("run_shell", command="touch made.txt")]},
                         {"text": "I was not allowed to run it."})

    messages, error = collect_until_error("make a file", options(agent_cli))

    assert error is None
    assert not (agent_cli.workspace / "made.txt").exists()
    result = result_of(messages)
    assert (result.subtype, result.is_error, result.result) == ("success", False, "I was not allowed to run it.")
    assert result.permission_denials == [{"tool_name": "Bash", "tool_use_id": result.permission_denials[0]["tool_use_id"],
                                          "tool_input": {"command": "touch made.txt"}}]
    tool_result = [block for m in messages if isinstance(m, UserMessage) and isinstance(m.content, list)
                   for block in m.content]
    assert tool_result[0].is_error and "needs permission" in str(tool_result[0].content)


def test_query_with_can_use_tool(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"tool_calls": [call("run_shell", command="rm -rf build")]},
                         {"tool_calls": [call("write_file", path="a.txt", content="model text")]},
                         {"tool_calls": [call("read_file", path="a.txt")]},
                         {"text": "done"})
    asked: list[tuple[str, dict[str, Any]]] = []

    async def can_use_tool(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        asked.append((name, dict(tool_input)))
        if name == "Bash":
            return PermissionResultDeny(message="no shell today")
        return PermissionResultAllow(updated_input={**tool_input, "content": "callback text"})

    messages = collect("go", options(agent_cli, can_use_tool=can_use_tool))

    assert asked == [("Bash", {"command": "rm -rf build"}),
                     ("Write", {"file_path": str(agent_cli.workspace / "a.txt"), "content": "model text"})]
    assert (agent_cli.workspace / "a.txt").read_text() == "callback text"  # the updated input ran
    result = result_of(messages)
    assert (result.subtype, result.is_error, result.result) == ("success", False, "done")
    assert [d["tool_name"] for d in result.permission_denials or []] == ["Bash"]
    bodies = [r.body for r in agent_cli.server.requests]
    denied = [m for m in bodies[1]["messages"] if m["role"] == "tool"][-1]
    assert "no shell today" in denied["content"]
    requests = [line for line in agent_cli.lines() if line["type"] == "control_request"]
    assert [r["request"]["subtype"] for r in requests] == ["can_use_tool", "can_use_tool"]


def test_setting_sources_project_runs_the_workspaces_own_hooks(agent_cli: AgentCli, tmp_path: Path) -> None:
    marker = tmp_path / "project-hook-ran"
    (agent_cli.workspace / ".claude").mkdir()
    (agent_cli.workspace / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": f"touch {marker}"}]}]}}))
    agent_cli.server.add({"text": "one"})
    agent_cli.server.add({"text": "two"})
    stderr: list[str] = []

    result_of(collect("hi", options(agent_cli, stderr=stderr.append)))  # no setting_sources: not trusted
    assert not marker.exists()
    assert any("skipped the workspace's hook UserPromptSubmit" in line for line in stderr)
    result_of(collect("hi", options(agent_cli, setting_sources=["project"])))  # the program's explicit choice
    assert marker.exists()


def test_hooks_are_called_back(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"tool_calls": [call("run_shell", command="echo secret")]},
                         {"tool_calls": [call("write_file", path="b.txt", content="x")]},
                         {"text": "ok"})
    seen: list[tuple[str, str]] = []

    async def pre_tool(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        seen.append((hook_input["hook_event_name"], hook_input["tool_name"]))
        if hook_input["tool_name"] == "Bash":
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                           "permissionDecisionReason": "hook says no"}}
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}

    async def post_tool(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        seen.append((hook_input["hook_event_name"], hook_input["tool_name"]))
        return {}

    async def prompt_hook(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        seen.append((hook_input["hook_event_name"], hook_input["prompt"]))
        return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ctx!"}}

    messages = collect("go", options(agent_cli, hooks={
        "PreToolUse": [HookMatcher(matcher="Bash|Write", hooks=[pre_tool])],
        "PostToolUse": [HookMatcher(matcher="Write", hooks=[post_tool])],
        "UserPromptSubmit": [HookMatcher(hooks=[prompt_hook])]}))

    assert ("UserPromptSubmit", "go") in seen
    assert ("PreToolUse", "Bash") in seen and ("PreToolUse", "Write") in seen
    assert ("PostToolUse", "Write") in seen
    assert (agent_cli.workspace / "b.txt").read_text() == "x"  # the hook allowed it in default mode
    result = result_of(messages)
    assert result.subtype == "success" and [d["tool_name"] for d in result.permission_denials or []] == ["Bash"]
    first = agent_cli.server.requests[0].body["messages"][-1]["content"]
    assert first == "go\n\nctx!"
    assert "hook says no" in [m for m in agent_cli.server.requests[1].body["messages"]
                              if m["role"] == "tool"][-1]["content"]


def test_query_resume_continue_and_fork(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "first answer"}, {"text": "second answer"},
                         {"text": "third answer"}, {"text": "forked answer"}, {"text": "x"})

    first = result_of(collect("remember 42", options(agent_cli)))
    second = result_of(collect("what number?", options(agent_cli, resume=first.session_id)))
    third = result_of(collect("and now?", options(agent_cli, continue_conversation=True)))
    fork = result_of(collect("fork it", options(agent_cli, resume=first.session_id, fork_session=True)))

    assert second.session_id == first.session_id == third.session_id
    assert fork.session_id != first.session_id
    bodies = [r.body for r in agent_cli.server.requests]
    said = [[m.get("content") for m in body["messages"][1:]] for body in bodies]
    assert said[1] == ["remember 42", "first answer", "what number?"]
    assert said[2] == ["remember 42", "first answer", "what number?", "second answer", "and now?"]
    assert said[3] == [*said[2], "third answer", "fork it"]
    again = result_of(collect("the original goes on", options(agent_cli, resume=first.session_id)))
    assert again.session_id == first.session_id
    assert [m.get("content") for m in agent_cli.server.requests[-1].body["messages"][1:]][-3:] == [
        "and now?", "third answer", "the original goes on"]  # the fork's turn is not in it
    agent_cli.lines()


def test_partial_messages(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "streamed words"})

    messages = collect("stream", options(agent_cli, include_partial_messages=True))

    events = [m.event for m in messages if isinstance(m, StreamEvent)]
    kinds = [event["type"] for event in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert text == "streamed words"
    assert result_of(messages).result == "streamed words"


def client_run(cli: AgentCli, work: Any, **kwargs: Any) -> Any:
    async def run() -> Any:
        async with ClaudeSDKClient(options=options(cli, **kwargs)) as client:
            return await work(client)

    return asyncio.run(asyncio.wait_for(run(), TIMEOUT))


async def response(client: ClaudeSDKClient) -> list[Any]:
    return [message async for message in client.receive_response()]


def test_client_two_prompts_and_an_interrupt(agent_cli: AgentCli) -> None:
    server = agent_cli.server
    server.add({"text": "one"}, {"text": "never seen", "delay": 20}, {"text": "three"})

    async def conversation(client: ClaudeSDKClient) -> dict[str, Any]:
        await client.query("first")
        first = await response(client)
        await client.query("second")
        while len(server.requests) < 2:  # the model is now busy with the second prompt
            await asyncio.sleep(0.02)
        started = time.monotonic()
        await client.interrupt()
        second = await response(client)
        waited = time.monotonic() - started
        await client.query("third")
        third = await response(client)
        return {"first": first, "second": second, "third": third, "waited": waited}

    got = client_run(agent_cli, conversation)

    assert result_of(got["first"]).result == "one"
    interrupted = result_of(got["second"])
    assert interrupted.is_error and interrupted.subtype == "error_during_execution"
    assert got["waited"] < 10  # not the 20 s the model would have taken
    third = result_of(got["third"])
    assert (third.result, third.is_error) == ("three", False)
    assert third.session_id == result_of(got["first"]).session_id  # one process, one session
    said = [m.get("content") for m in server.requests[2].body["messages"][1:]]
    assert said[:3] == ["first", "one", "second"] and said[-1] == "third"
    agent_cli.lines()


def test_client_interrupts_a_running_tool(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"tool_calls": [call("run_shell", command="touch running && sleep 30")]}, {"text": "after"})
    running = agent_cli.workspace / "running"

    async def conversation(client: ClaudeSDKClient) -> tuple[list[Any], float]:
        await client.query("sleep")
        seen: list[Any] = []
        async for message in client.receive_messages():
            seen.append(message)
            if isinstance(message, AssistantMessage) and any(isinstance(b, ToolUseBlock) for b in message.content):
                while not running.exists():  # the shell command is under way
                    await asyncio.sleep(0.01)
                started = time.monotonic()
                await client.interrupt()
            if isinstance(message, ResultMessage):
                return seen, time.monotonic() - started
        raise AssertionError("no result")

    seen, waited = client_run(agent_cli, conversation, permission_mode="bypassPermissions")

    assert waited < 10
    result = result_of(seen)
    assert result.is_error and result.subtype == "error_during_execution"


def test_client_set_model_and_permission_mode(agent_cli: AgentCli) -> None:
    server = agent_cli.server
    server.add({"tool_calls": [call("write_file", path="c.txt", content="1")]}, {"text": "denied"},
               {"tool_calls": [call("write_file", path="c.txt", content="2")]}, {"text": "written"})

    async def conversation(client: ClaudeSDKClient) -> tuple[list[Any], list[Any]]:
        await client.query("write it")
        before = await response(client)
        await client.set_model("other-model")
        await client.set_permission_mode("acceptEdits")
        await client.query("write it again")
        return before, await response(client)

    before, after = client_run(agent_cli, conversation)

    assert [d["tool_name"] for d in result_of(before).permission_denials or []] == ["Write"]
    assert result_of(after).permission_denials == []
    assert (agent_cli.workspace / "c.txt").read_text() == "2"
    assert [r.body["model"] for r in server.requests] == ["gpt-4.1-mini", "gpt-4.1-mini", "other-model", "other-model"]
    replies = [m for m in after if isinstance(m, AssistantMessage)]
    assert replies[-1].model == "other-model"
    assert "other-model" in (result_of(after).model_usage or {})
    meta = json.loads((agent_cli.home / "sessions" / result_of(after).session_id / "meta.json").read_text())
    assert meta["model"] == "other-model"  # a later --resume goes on with the model chosen last


def test_a_streamed_prompt_list_runs_every_prompt(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "a"}, {"text": "b"})

    async def prompts() -> Any:
        for text in ("one", "two"):
            yield {"type": "user", "message": {"role": "user", "content": text}}

    messages = collect(prompts(), options(agent_cli))

    assert [m.result for m in messages if isinstance(m, ResultMessage)] == ["a", "b"]


def test_session_file_records_the_run(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "saved"})

    result = result_of(collect("keep me", options(agent_cli)))

    meta = json.loads((agent_cli.home / "sessions" / result.session_id / "meta.json").read_text())
    assert meta["status"] == "completed" and meta["turns"] == 1
    transcript = Path(agent_cli.home / "sessions" / result.session_id / "transcript.jsonl").read_text()
    assert '"keep me"' in transcript and '"saved"' in transcript


def test_structured_output(agent_cli: AgentCli) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    agent_cli.server.add({"text": "It is four."}, {"text": '```json\n{"answer": 4}\n```'})

    messages = collect("2+2?", options(agent_cli, output_format={"type": "json_schema", "schema": schema}))

    result = result_of(messages)
    assert (result.subtype, result.structured_output) == ("success", {"answer": 4})
    first, retry = (r.body["messages"][-1]["content"] for r in agent_cli.server.requests)
    assert '"answer"' in first and "does not match the required JSON Schema" in retry


def test_budget_in_claude_words(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"tool_calls": [call("read_file", path="x")]}, {"text": "too late"})

    messages, error = collect_until_error("read", options(agent_cli, max_budget_usd=0.00001))

    result = result_of(messages)  # gpt-4.1-mini (the default) has a price; its first call spent it all
    assert (result.subtype, result.is_error) == ("error_max_budget_usd", True)
    assert result.total_cost_usd is not None and result.total_cost_usd > 0.00001
    assert len(agent_cli.server.requests) == 1 and error is not None


def test_stop_hook_sends_the_agent_on(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "draft"}, {"text": "final"})
    calls: list[bool] = []

    async def on_stop(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        calls.append(hook_input["stop_hook_active"])
        return {} if hook_input["stop_hook_active"] else {"decision": "block", "reason": "add a test too"}

    result = result_of(collect("write it", options(agent_cli, hooks={"Stop": [HookMatcher(hooks=[on_stop])]})))

    assert calls == [False, True]
    assert (result.result, result.num_turns, result.is_error) == ("final", 2, False)
    assert agent_cli.server.requests[1].body["messages"][-1]["content"] == "add a test too"


def test_interrupt_while_the_permission_callback_thinks(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"tool_calls": [call("run_shell", command="make")]}, {"text": "next prompt"})
    asked = asyncio.Event()
    cancelled: list[bool] = []

    async def slow_callback(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        asked.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return PermissionResultAllow()

    async def conversation(client: ClaudeSDKClient) -> tuple[list[Any], list[Any], float]:
        await client.query("build")
        await asyncio.wait_for(asked.wait(), 20)
        started = time.monotonic()
        await client.interrupt()
        first = await response(client)
        waited = time.monotonic() - started
        await client.query("go on")
        return first, await response(client), waited

    first, second, waited = client_run(agent_cli, conversation, can_use_tool=slow_callback)

    assert waited < 10 and result_of(first).subtype == "error_during_execution"
    assert result_of(second).result == "next prompt"
    assert cancelled == [True]  # the SDK was told to give up on the question
    assert any(line["type"] == "control_cancel_request" for line in agent_cli.lines())


def test_fallback_model_after_a_provider_error(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"error": {"status": 404, "message": "no such model"}}, {"text": "from the fallback"})

    result = result_of(collect("hi", options(agent_cli, model="big-model", fallback_model="small-model")))

    assert (result.result, result.is_error) == ("from the fallback", False)
    assert [r.body["model"] for r in agent_cli.server.requests] == ["big-model", "small-model"]
    assert agent_cli.server.requests[1].body["messages"][-1]["content"] == "hi"


def test_an_sdk_mcp_server_in_the_clients_own_process(agent_cli: AgentCli) -> None:
    """`create_sdk_mcp_server` + `@tool`: the server runs inside the program, and recursive
    reaches it as Claude Code does, through `mcp_message` control requests."""
    from claude_agent_sdk import create_sdk_mcp_server, tool

    seen: list[dict[str, Any]] = []

    @tool("add", "Add two numbers.", {"a": float, "b": float})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        seen.append(args)
        return {"content": [{"type": "text", "text": f"{args['a'] + args['b']:g}"}]}

    calc = create_sdk_mcp_server("calc", "1.0.0", tools=[add])
    agent_cli.server.add({"tool_calls": [call("mcp__calc__add", a=2, b=40)]}, {"text": "It is 42."})
    messages = collect("what is 2 + 40?", options(agent_cli, mcp_servers={"calc": calc},
                                                  allowed_tools=["mcp__calc__add"]))
    init = messages[0]
    assert {"name": "calc", "status": "connected"} in init.data["mcp_servers"]
    assert "mcp__calc__add" in init.data["tools"]
    assert seen == [{"a": 2, "b": 40}]
    results = [block for m in messages if isinstance(m, UserMessage) and isinstance(m.content, list)
               for block in m.content if getattr(block, "tool_use_id", None)]
    assert [getattr(block, "content", None) for block in results] == [[{"type": "text", "text": "42"}]]
    assert result_of(messages).result == "It is 42."
    first = agent_cli.server.requests[0].body
    schema = next(t["function"]["parameters"] for t in first["tools"] if t["function"]["name"] == "mcp__calc__add")
    assert set(schema["properties"]) == {"a", "b"}


def test_an_sdk_mcp_server_without_a_client_on_stdin_fails_that_server_alone(
        workspace: Path, isolated_home: Path) -> None:
    from clitools import invoke, json_lines, write_script

    script = write_script(workspace.parent / "script.json", [{"text": "done"}])
    result = invoke("run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                    "--mcp-config", json.dumps({"mcpServers": {"calc": {"type": "sdk", "name": "calc"}}}),
                    "-o", "stream-json")
    assert result.returncode == 0, result.stderr
    assert json_lines(result.stdout)[0]["mcp_servers"] == [{"name": "calc", "status": "failed"}]
    assert "MCP server 'calc' failed to start: a server in the Agent SDK client's own process" in result.stderr


def test_an_sdk_mcp_tool_asked_for_through_can_use_tool(agent_cli: AgentCli) -> None:
    """Without an allow rule the SDK server's tool is asked for (`can_use_tool`), then called
    (`mcp_message`): two kinds of our requests to the client, one after the other."""
    from claude_agent_sdk import create_sdk_mcp_server, tool

    @tool("shout", "Upper-case a word.", {"word": str})
    async def shout(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": args["word"].upper()}]}

    asked: list[tuple[str, dict[str, Any]]] = []

    async def can_use_tool(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        asked.append((name, dict(tool_input)))
        return PermissionResultAllow(updated_input={"word": "allowed"})

    agent_cli.server.add({"tool_calls": [call("mcp__loud__shout", word="quiet")]}, {"text": "done"})
    messages = collect("shout", options(agent_cli, mcp_servers={"loud": create_sdk_mcp_server("loud", tools=[shout])},
                                        can_use_tool=can_use_tool))
    assert asked == [("mcp__loud__shout", {"word": "quiet"})]
    assert result_of(messages).result == "done"
    answered = [m for m in agent_cli.server.requests[1].body["messages"] if m["role"] == "tool"][-1]
    assert answered["content"] == "ALLOWED"  # the callback's input ran
    subtypes = [line["request"]["subtype"] for line in agent_cli.lines() if line["type"] == "control_request"]
    assert "can_use_tool" in subtypes and subtypes.count("mcp_message") >= 3  # initialize, initialized, list, call


def test_get_mcp_status_reports_the_servers_and_their_tools(agent_cli: AgentCli, tmp_path: Path) -> None:
    """`ClaudeSDKClient.get_mcp_status()`: the program's own server and an external one, each
    with its status, what it said it is, its configuration (no env) and its tools."""
    from claude_agent_sdk import create_sdk_mcp_server, tool

    @tool("add", "Add two numbers.", {"a": float, "b": float})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}

    raw = Path(__file__).parents[1] / "mcp" / "raw_server.py"
    servers: dict[str, Any] = {"calc": create_sdk_mcp_server("calc", "2.0.0", tools=[add]),
                               "raw": {"type": "stdio", "command": sys.executable,
                                       "args": [str(raw), str(tmp_path / "raw.jsonl")], "env": {"SECRET": "s3"}},
                               "gone": {"type": "stdio", "command": "no-such-mcp-server-xyz"}}
    agent_cli.server.add({"text": "ready"})

    async def conversation(client: ClaudeSDKClient) -> Any:
        await client.query("hello")
        await response(client)
        return await client.get_mcp_status()

    status = client_run(agent_cli, conversation, mcp_servers=servers)
    by_name = {server["name"]: server for server in status["mcpServers"]}
    assert by_name["calc"]["status"] == "connected" and by_name["calc"]["serverInfo"] == {"name": "calc", "version": "2.0.0"}
    assert [t["name"] for t in by_name["calc"]["tools"]] == ["add"] and by_name["calc"]["config"]["type"] == "sdk"
    assert by_name["raw"]["status"] == "connected" and by_name["raw"]["serverInfo"] == {"name": "raw", "version": "1"}
    assert by_name["raw"]["config"] == {"type": "stdio", "command": sys.executable,
                                        "args": [str(raw), str(tmp_path / "raw.jsonl")]}  # (no env: it may hold secrets)
    assert by_name["gone"]["status"] == "failed" and "command not found" in by_name["gone"]["error"]


def test_toggle_and_reconnect_an_mcp_server(agent_cli: AgentCli, tmp_path: Path) -> None:
    """`toggle_mcp_server(name, False)` stops it and takes its tools from the next request;
    `reconnect_mcp_server(name)` starts it again (a new process) and gives them back."""
    raw = Path(__file__).parents[1] / "mcp" / "raw_server.py"
    record = tmp_path / "raw.jsonl"
    servers = {"raw": {"type": "stdio", "command": sys.executable, "args": [str(raw), str(record)]}}
    agent_cli.server.add({"text": "one"}, {"text": "two"}, {"text": "three"})

    async def conversation(client: ClaudeSDKClient) -> list[Any]:
        seen = []
        await client.query("first")
        await response(client)
        await client.toggle_mcp_server("raw", False)
        seen.append(await client.get_mcp_status())
        await client.query("second")
        await response(client)
        await client.reconnect_mcp_server("raw")
        seen.append(await client.get_mcp_status())
        await client.query("third")
        await response(client)
        return seen

    disabled, again = client_run(agent_cli, conversation, mcp_servers=servers)
    assert [s["status"] for s in disabled["mcpServers"]] == ["disabled"]
    assert [s["status"] for s in again["mcpServers"]] == ["connected"]
    offered = [tool_names(request.body) for request in agent_cli.server.requests]
    assert ["mcp__raw__echo" in names for names in offered] == [True, False, True]
    assert record.read_text().count('"method":"initialize"') == 2  # a second process for the reconnect
