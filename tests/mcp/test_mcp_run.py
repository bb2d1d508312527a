"""`recursive run` with MCP servers: the tools the model is shown, the results it gets, the
init line, permissions and failures to start — against the real demo server over stdio."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clitools import invoke, json_lines, write_script
from fakeserver import FakeLLMServer
from mcphelpers import demo_entry, servers_json

DEMO = servers_json(demo=demo_entry())


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"name": tool, "arguments": arguments}


def run(workspace: Path, replies: list[dict[str, Any]], *args: str, config: str = DEMO) -> tuple[Any, list[dict]]:
    """`recursive run` with the scripted model and `config` as --mcp-config; its stream lines."""
    script = write_script(workspace.parent / "script.json", replies)
    result = invoke("run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                    "--mcp-config", config, "-o", "stream-json", *args)
    return result, json_lines(result.stdout)


def tool_results(lines: list[dict]) -> list[dict]:
    return [block for line in lines if line["type"] == "user"
            for block in line["message"]["content"] if block.get("type") == "tool_result"]


def test_tools_results_structured_image_and_error(workspace: Path, demo_dir: Path) -> None:
    result, lines = run(workspace, [
        {"tool_calls": [call("mcp__demo__weather", city="Oslo"), call("mcp__demo__picture"),
                        call("mcp__demo__fail", reason="no reason")]},
        {"text": "done"}])
    assert result.returncode == 0, result.stderr
    weather, picture, fail = tool_results(lines)
    assert json.loads(weather["content"]) == {"city": "Oslo", "celsius": 21.5}
    assert not weather["is_error"]
    assert picture["content"].splitlines() == ["a picture:", "[image: image/png, 8 bytes; binary content not shown]"]
    assert fail["is_error"] and "failing on purpose: no reason" in fail["content"]
    assert lines[-1]["result"] == "done"


def test_the_model_is_shown_the_servers_tools_with_their_schemas(workspace: Path, demo_dir: Path) -> None:
    with FakeLLMServer([{"tool_calls": [call("mcp__demo__weather", city="Rome")]}, {"text": "sunny"}]) as srv:
        result = invoke("run", "weather?", "-C", str(workspace), "--provider", "openai", "--api-base",
                        srv.openai_base_url, "-m", "fake-model", "--mcp-config", DEMO, "--no-checkpoints",
                        env={"RECURSIVE_API_KEY": "sk-test"})
        requests = srv.requests
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "sunny"
    tools = {t["function"]["name"]: t["function"] for t in requests[0].body["tools"]}
    weather = tools["mcp__demo__weather"]
    assert weather["description"] == "The weather in a city, as structured data."
    assert weather["parameters"]["properties"]["city"]["type"] == "string"
    assert weather["parameters"]["required"] == ["city"]
    assert {"mcp__demo__fail", "mcp__demo__slow", "mcp__demo__touch", "list_mcp_resources",
            "read_mcp_resource"} <= set(tools)
    answered = [m for m in requests[1].body["messages"] if m["role"] == "tool"]
    assert json.loads(answered[0]["content"]) == {"city": "Rome", "celsius": 21.5}
    assert "mcp__demo__weather" in requests[0].body["messages"][0]["content"]  # the system prompt's tool list


def test_resources(workspace: Path, demo_dir: Path) -> None:
    result, lines = run(workspace, [
        {"tool_calls": [call("list_mcp_resources"), call("read_mcp_resource", server="demo", uri="notes://today")]},
        {"text": "done"}])
    assert result.returncode == 0, result.stderr
    listing, note = tool_results(lines)
    assert json.loads(listing["content"]) == {"server": "demo", "uri": "notes://today", "name": "today",
                                              "mimeType": "text/plain", "description": "Today's note."}
    assert note["content"] == "buy milk"


def test_init_event_lists_servers_and_their_tools(workspace: Path, demo_dir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """RunStarted carries the servers' statuses (the init line's `mcp_servers`) and their tools."""
    from recursive_cli.core.events import RunStarted
    from recursive_cli.launch import run as launch

    seen: list[RunStarted] = []

    class Recorder:
        def emit(self, event: Any) -> None:
            if isinstance(event, RunStarted):
                seen.append(event)

    sinks = launch.output_sinks
    monkeypatch.setattr(launch, "output_sinks", lambda *a: [*sinks(*a), Recorder()])
    config = servers_json(demo=demo_entry(), broken={"command": "no-such-mcp-server-xyz"})
    result, lines = run(workspace, [{"text": "hi"}], config=config)
    assert result.returncode == 0, result.stderr
    assert seen[0].mcp_servers == [{"name": "demo", "status": "connected"},
                                   {"name": "broken", "status": "failed"}]
    init = lines[0]
    assert init["subtype"] == "init" and "mcp__demo__weather" in init["tools"]
    assert init["mcp_servers"] == seen[0].mcp_servers


def test_a_server_that_fails_to_start_is_reported_once_and_the_run_goes_on(workspace: Path, demo_dir: Path) -> None:
    config = servers_json(demo=demo_entry(), broken={"command": "no-such-mcp-server-xyz"},
                          dying={"command": "sh", "args": ["-c", "echo 'cannot open the database' >&2; exit 7"]})
    result, lines = run(workspace, [{"tool_calls": [call("mcp__demo__weather", city="Oslo")]}, {"text": "ok"}],
                        config=config)
    assert result.returncode == 0
    warnings = [line for line in result.stderr.splitlines() if "MCP server" in line]
    assert warnings == [
        "warning: MCP server 'broken' failed to start: command not found: no-such-mcp-server-xyz; going on without it",
        "warning: MCP server 'dying' failed to start: the server closed the connection "
        "(stderr: cannot open the database); going on without it"]
    assert not tool_results(lines)[0]["is_error"]


def test_deny_rule_on_an_mcp_tool(workspace: Path, demo_dir: Path) -> None:
    result, lines = run(workspace, [
        {"tool_calls": [call("mcp__demo__touch", path="made.txt"), call("mcp__demo__weather", city="Oslo")]},
        {"text": "done"}], "--deny", "mcp__demo__touch")
    touch, weather = tool_results(lines)
    assert touch["is_error"] and "permission denied" in touch["content"]
    assert "--deny 'mcp__demo__touch'" in touch["content"]
    assert not (demo_dir / "made.txt").exists()
    assert not weather["is_error"]


def test_read_only_mode_allows_only_tools_marked_read_only(workspace: Path, demo_dir: Path) -> None:
    result, lines = run(workspace, [
        {"tool_calls": [call("mcp__demo__touch", path="made.txt"), call("mcp__demo__weather", city="Oslo")]},
        {"text": "done"}], "--permission-mode", "read-only")
    touch, weather = tool_results(lines)
    assert touch["is_error"] and "read-only mode" in touch["content"]
    assert not (demo_dir / "made.txt").exists()
    assert not weather["is_error"]


def test_allow_glob_lets_a_servers_tools_through_a_strict_mode(workspace: Path, demo_dir: Path) -> None:
    result, lines = run(workspace, [
        {"tool_calls": [call("mcp__demo__touch", path="made.txt")]}, {"text": "done"}],
        "--permission-mode", "read-only", "--allow", "mcp__demo__*")
    assert not tool_results(lines)[0]["is_error"], tool_results(lines)[0]["content"]
    assert (demo_dir / "made.txt").read_text() == "touched"


def test_variables_are_expanded_in_the_servers_env(workspace: Path, demo_dir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_TOKEN", "t0ken")
    entry = demo_entry(env={"GREETING": "${DEMO_TOKEN}-${DEMO_MISSING:-fallback}"})
    result, lines = run(workspace, [{"tool_calls": [call("mcp__demo__env", name="GREETING")]}, {"text": "ok"}],
                        config=servers_json(demo=entry))
    assert tool_results(lines)[0]["content"] == "t0ken-fallback"


def test_a_missing_variable_fails_that_server_alone(workspace: Path, demo_dir: Path) -> None:
    entry = demo_entry(env={"TOKEN": "${DEMO_SURELY_UNSET_VAR}"})
    result, lines = run(workspace, [{"text": "ok"}], config=servers_json(needs=entry, demo=demo_entry()))
    assert result.returncode == 0
    assert ("warning: MCP server 'needs' failed to start: environment variable DEMO_SURELY_UNSET_VAR is not set"
            in result.stderr)
    assert "mcp__demo__weather" in lines[0]["tools"]


def test_no_server_starts_for_help_or_config_errors(workspace: Path, demo_dir: Path) -> None:
    (workspace / ".mcp.json").write_text(DEMO)
    assert invoke("run", "--help", cwd=workspace).returncode == 0
    assert invoke("run", "x", "--provider", "scripted", "--max-cost", "-1", cwd=workspace).returncode == 2
    assert list(demo_dir.glob("pid-*")) == []


def test_a_call_runs_under_the_tool_timeout(workspace: Path, demo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TOOL_TIMEOUT", "1500")  # milliseconds, as Claude Code reads it
    result, lines = run(workspace, [
        {"tool_calls": [call("mcp__demo__slow", seconds=60), call("mcp__demo__weather", city="Oslo")]},
        {"text": "done"}])
    assert result.returncode == 0, result.stderr
    slow, weather = tool_results(lines)
    assert slow["is_error"] and "timed out: no answer within 1.5 s" in slow["content"]
    assert not weather["is_error"]  # the server is still there


def test_loop_and_goal_get_the_tools_too(workspace: Path, demo_dir: Path) -> None:
    script = write_script(workspace.parent / "loop.json", [
        {"tool_calls": [call("mcp__demo__weather", city="Oslo"), call("stop_loop", reason="done")]},
        {"text": "stopped"}])
    result = invoke("loop", "watch the weather", "-C", str(workspace), "--provider", "scripted", "--script",
                    str(script), "--mcp-config", DEMO, "-o", "stream-json")
    assert result.returncode == 0, result.stderr
    assert json.loads(tool_results(json_lines(result.stdout))[0]["content"])["city"] == "Oslo"
    (workspace / "ok").write_text("")
    script = write_script(workspace.parent / "goal.json", [
        {"tool_calls": [call("mcp__demo__weather", city="Rome")]}, {"text": "checked"}])
    result = invoke("goal", "check the weather", "--check", "test -f ok", "-C", str(workspace), "--provider",
                    "scripted", "--script", str(script), "--mcp-config", DEMO, "-o", "stream-json")
    assert result.returncode == 0, result.stderr
    assert json.loads(tool_results(json_lines(result.stdout))[0]["content"])["city"] == "Rome"


def test_a_server_that_changes_its_tools_gives_the_next_step_the_new_ones(workspace: Path, demo_dir: Path) -> None:
    """The SDK's server adds a tool in a call and says so (`notifications/tools/list_changed`):
    the model's next request offers it, a call of it runs; removed again, it is offered no more
    and a call of it is an unknown tool. The turn's transcript is whole, and the system prompt's
    tool list follows at the next turn (`-c`)."""
    replies = [{"tool_calls": [call("mcp__demo__unlock")]}, {"tool_calls": [call("mcp__demo__secret", word="swordfish")]},
               {"tool_calls": [call("mcp__demo__lock")]}, {"tool_calls": [call("mcp__demo__secret", word="again")]},
               {"text": "done"}]
    with FakeLLMServer(replies) as srv:
        result = invoke("run", "go", "-C", str(workspace), "--provider", "openai", "--api-base", srv.openai_base_url,
                        "-m", "fake-model", "--mcp-config", DEMO, "--no-checkpoints", "-o", "stream-json",
                        env={"RECURSIVE_API_KEY": "sk-test"})
        requests = srv.requests
    assert result.returncode == 0, result.stderr
    offered = [{t["function"]["name"] for t in request.body["tools"]} for request in requests]
    assert ["mcp__demo__secret" in names for names in offered] == [False, True, True, False, False]
    assert requests[-1].body["messages"][0] == requests[0].body["messages"][0]  # (the turn's prompt stays)
    assert len(requests[-1].body["messages"]) == 2 + 2 * 4  # system, user, then 4 calls and their results
    unlocked, told, locked, gone = tool_results(json_lines(result.stdout))
    assert told["content"] == "the secret word was swordfish" and not told["is_error"]
    assert gone["is_error"] and "mcp__demo__secret" in gone["content"]
    assert "MCP server 'demo' changed its tools (+mcp__demo__secret)" in result.stderr
    assert "MCP server 'demo' changed its tools (-mcp__demo__secret)" in result.stderr
