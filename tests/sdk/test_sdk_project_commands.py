"""The workspace's own slash commands and `/clear`, through the real Agent SDK, as the real
Claude Code CLI runs them against the same scripted model: `.claude/commands/*.md` are listed in
`init`'s `slash_commands` and a prompt `/name args` reaches the model expanded (Claude Code's
command header, `$ARGUMENTS` and `$0`… replaced), its `allowed-tools` allowing what it names for
that turn; an untrusted workspace's commands are left out with a note. `/clear` starts the
conversation over: a `conversation_reset` line and a result, and no model request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clitools import require

from .conftest import AgentCli
from .test_python_sdk import call, client_run, collect, options, response, result_of

sdk = require("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    ClaudeSDKClient,
    ConversationResetMessage,
    SystemMessage,
    get_session_messages,
    list_sessions,
)

GREET = "---\ndescription: Greets someone\nallowed-tools: Bash(touch:*)\n---\nSay hello to $ARGUMENTS, first $0 then $1.\n"


def commands(cli: AgentCli) -> None:
    folder = cli.workspace / ".claude" / "commands"
    (folder / "git").mkdir(parents=True)
    (folder / "greet.md").write_text(GREET)
    (folder / "git" / "summary.md").write_text("Summarise the log\n")


def last_user_text(cli: AgentCli, index: int) -> str:
    return str(cli.server.requests[index].body["messages"][-1]["content"])


def test_a_project_command_is_listed_and_expanded(agent_cli: AgentCli) -> None:
    commands(agent_cli)
    agent_cli.server.add({"tool_calls": [call("run_shell", command="touch made.txt")]}, {"text": "hello"},
                         {"text": "summary"})

    messages = collect("/greet Bob Alice", options(agent_cli, setting_sources=["project"]))
    again = collect("/git:summary --since monday", options(agent_cli, setting_sources=["project"]))

    init = messages[0]
    assert isinstance(init, SystemMessage) and {"greet", "git:summary", "clear"} <= set(init.data["slash_commands"])
    assert last_user_text(agent_cli, 0) == (
        "<command-message>greet</command-message>\n<command-name>/greet</command-name>\n"
        "<command-args>Bob Alice</command-args>\n\nSay hello to Bob Alice, first Bob then Alice.\n")
    assert (agent_cli.workspace / "made.txt").exists()  # its allowed-tools, in default mode
    assert result_of(messages).permission_denials == []
    assert last_user_text(agent_cli, 2).endswith("Summarise the log\n\n\nARGUMENTS: --since monday")
    assert result_of(again).result == "summary"


def test_an_untrusted_workspaces_commands_are_left_out(agent_cli: AgentCli) -> None:
    commands(agent_cli)
    agent_cli.server.add({"text": "plain"})
    stderr: list[str] = []

    messages = collect("/greet Bob", options(agent_cli, stderr=stderr.append))

    assert "greet" not in messages[0].data["slash_commands"]
    assert last_user_text(agent_cli, 0) == "/greet Bob"
    assert any("skipped the workspace's slash commands (/git:summary, /greet)" in line for line in stderr)


def test_clear_starts_the_conversation_over(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "noted"}, {"text": "no idea"}, {"text": "resumed"}, {"text": "x"})

    async def conversation(client: ClaudeSDKClient) -> list[list[Any]]:
        seen = []
        for prompt in ("remember 42", "/clear", "what number?"):
            await client.query(prompt)
            seen.append(await response(client))
        return seen

    first, cleared, last = client_run(agent_cli, conversation)

    assert any(isinstance(m, ConversationResetMessage) for m in cleared)
    assert (result_of(cleared).subtype, result_of(cleared).num_turns) == ("success", 0)
    assert len(agent_cli.server.requests) == 2  # /clear asked the model nothing
    said = [m["content"] for m in agent_cli.server.requests[1].body["messages"][1:]]
    assert said == ["what number?"]
    assert result_of(last).result == "no idea"
    reset = next(m for m in cleared if isinstance(m, ConversationResetMessage))
    assert reset.session_id == result_of(first).session_id  # the old session's, as Claude Code writes it
    assert result_of(cleared).session_id != result_of(first).session_id == reset.session_id
    assert result_of(last).session_id == result_of(cleared).session_id
    # The SDK's session functions see both sessions, each with its own conversation.
    listed = {info.session_id for info in list_sessions(str(agent_cli.workspace))}
    assert listed == {result_of(first).session_id, result_of(last).session_id}
    after = get_session_messages(result_of(last).session_id, str(agent_cli.workspace))
    assert [m.message["content"] for m in after if m.type == "user"] == ["what number?"]
    before = get_session_messages(result_of(first).session_id, str(agent_cli.workspace))
    assert [m.message["content"] for m in before if m.type == "user"] == ["remember 42"]
    old = collect("and now?", options(agent_cli, resume=result_of(first).session_id))  # the old one resumes whole
    said = [m["content"] for m in agent_cli.server.requests[2].body["messages"][1:]]
    assert said == ["remember 42", "noted", "and now?"] and result_of(old).result == "resumed"
    collect("next?", options(agent_cli, resume=result_of(last).session_id))  # the new one holds what came after
    said = [m["content"] for m in agent_cli.server.requests[3].body["messages"][1:]]
    assert said == ["what number?", "no idea", "next?"]
    agent_cli.lines()  # every line in its SPEC §4 shape


def test_a_plugins_commands_and_the_output_style(agent_cli: AgentCli, tmp_path: Path) -> None:
    plugin = tmp_path / "demo-plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "demo", "version": "1.0.0"}))
    (plugin / "commands").mkdir()
    (plugin / "commands" / "hello.md").write_text("---\ndescription: Say hello\n---\nHello from plugin $ARGUMENTS\n")
    (plugin / "hooks").mkdir()
    agent_cli.server.add({"text": "done"})
    stderr: list[str] = []

    messages = collect("/demo:hello world", options(
        agent_cli, plugins=[{"type": "local", "path": str(plugin)}], stderr=stderr.append,
        settings=json.dumps({"outputStyle": "Explanatory"})))

    init = messages[0].data
    assert init["plugins"] == [{"name": "demo", "path": str(plugin), "source": "demo@inline", "version": "1.0.0"}]
    assert "demo:hello" in init["slash_commands"] and init["output_style"] == "Explanatory"
    assert last_user_text(agent_cli, 0).endswith("<command-args>world</command-args>\n\nHello from plugin world\n")
    assert any("plugin demo: only its commands are loaded here, not its hooks" in line for line in stderr)


def test_server_info_lists_the_commands_and_the_output_style(agent_cli: AgentCli) -> None:
    commands(agent_cli)
    (agent_cli.workspace / ".claude" / "commands" / "greet.md").write_text(
        "---\ndescription: Greets someone\nargument-hint: NAME\n---\nHi $ARGUMENTS\n")

    async def ask(client: ClaudeSDKClient) -> Any:
        return await client.get_server_info()

    info = client_run(agent_cli, ask, setting_sources=["project"], settings=json.dumps({"outputStyle": "Learning"}))

    listed = {entry["name"]: entry for entry in info["commands"]}
    assert listed["greet"] == {"name": "greet", "description": "Greets someone (project)", "argumentHint": "NAME"}
    assert listed["git:summary"]["description"] == "Summarise the log (project)" and listed["clear"]["builtin"]
    assert info["output_style"] == "Learning" and "Learning" in info["available_output_styles"]


def test_the_workspaces_output_style_is_reported_unless_setting_sources_leave_it_out(agent_cli: AgentCli) -> None:
    (agent_cli.workspace / ".claude").mkdir()
    (agent_cli.workspace / ".claude" / "settings.local.json").write_text('{"outputStyle": "local-test-style"}')
    agent_cli.server.add({"text": "4"}, {"text": "4"})

    default = collect("2 + 2?", options(agent_cli))  # (no setting_sources: Claude Code reads them all)
    user_only = collect("2 + 2?", options(agent_cli, setting_sources=["user"]))

    assert default[0].data["output_style"] == "local-test-style"
    assert user_only[0].data["output_style"] == "default"
