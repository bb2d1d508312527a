"""What claude-agent-sdk-python's e2e suite reads after a run, through the real SDK: a subagent's
transcript through `list_subagents()` / `get_subagent_messages()` (the file beside the
session's and its `.meta.json`) and through a SessionStore (`list_subagents_from_store()`, the
mirrored `agent_metadata` entry), attributed to the Agent call; and Claude Code's user settings
(`$CLAUDE_CONFIG_DIR/settings.json`, which the SDK seeds for a store resume) in `init`'s
`output_style`."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

from clitools import invoke, require

from .conftest import AgentCli
from .test_python_sdk import collect, options, result_of

sdk = require("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    AgentDefinition,
    InMemorySessionStore,
    SystemMessage,
    get_subagent_messages,
    get_subagent_messages_from_store,
    list_subagents,
    list_subagents_from_store,
)

GREETER = AgentDefinition(description="Greets", prompt="Reply with one short sentence.")


def test_a_subagents_transcript_is_read_back_under_the_agent_call(agent_cli: AgentCli) -> None:
    agent_cli.server.add(
        {"tool_calls": [{"name": "task", "id": "call_agent", "arguments": {
            "description": "greet", "prompt": "say hi", "subagent_type": "greeter"}}]},
        {"text": "Hi there!"},
        {"text": "DONE"})
    store = InMemorySessionStore()

    messages = collect("greet via the agent", options(agent_cli, agents={"greeter": GREETER}, session_store=store))
    session_id = result_of(messages).session_id
    where = str(agent_cli.workspace)

    (agent_id,) = list_subagents(session_id, where)
    local = get_subagent_messages(session_id, agent_id, where)
    assert [(m.type, m.parent_tool_use_id, m.parent_agent_id) for m in local] == [
        ("user", "call_agent", None), ("assistant", "call_agent", None)]
    assert local[0].message["content"] == "say hi"
    assert local[1].message["content"] == [{"type": "text", "text": "Hi there!"}]
    assert asyncio.run(list_subagents_from_store(store, session_id, where)) == [agent_id]
    mirrored = asyncio.run(get_subagent_messages_from_store(store, session_id, agent_id, where))
    assert [(m.uuid, m.parent_tool_use_id) for m in mirrored] == [(m.uuid, m.parent_tool_use_id) for m in local]
    # the main transcript holds only the main conversation
    assert [m["type"] for m in _main_view(session_id) if m["type"] in ("user", "assistant")] == [
        "user", "assistant", "user", "assistant"]
    # `sessions rm` takes the subagents' transcripts with the session's
    assert invoke("sessions", "rm", session_id, env={"RECURSIVE_HOME": str(agent_cli.home)}).returncode == 0
    assert list_subagents(session_id, where) == [] and not list(Path(os.environ["CLAUDE_CONFIG_DIR"]).glob(
        f"projects/*/{session_id}"))


def test_claude_codes_user_settings_give_the_output_style_on_a_store_resume(agent_cli: AgentCli,
                                                                               tmp_path: Path) -> None:
    agent_cli.server.add({"text": "one"}, {"text": "two"})
    store = InMemorySessionStore()
    config = tmp_path / "caller-config"
    config.mkdir()

    def run(prompt: str, **kwargs: Any) -> list[Any]:
        opts = options(agent_cli, session_store=store, **kwargs)
        opts.env["CLAUDE_CONFIG_DIR"] = str(config)
        return collect(prompt, opts)

    first = run("Reply with exactly: one")
    (config / "settings.json").write_text(json.dumps({"outputStyle": "Explanatory"}))
    shutil.rmtree(config / "projects")  # (so only the store can give the session back)
    resumed = run("Reply with exactly: two", resume=result_of(first).session_id)

    assert isinstance(first[0], SystemMessage) and first[0].data["output_style"] == "default"
    assert result_of(resumed).session_id == result_of(first).session_id
    assert resumed[0].data["output_style"] == "Explanatory"


def _main_view(session_id: str) -> list[dict[str, Any]]:
    (path,) = Path(os.environ["CLAUDE_CONFIG_DIR"]).glob(f"projects/*/{session_id}.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]
