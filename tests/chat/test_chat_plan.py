"""Plan mode in the interactive session (issue 33), on a real pty: the plan is shown, a "no"
keeps planning, a "yes" switches to the mode picked and the agent carries the plan out."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from chatkit import Chat, call, plain, server_args, sessions, user_messages
from fakeserver import FakeLLMServer

Open = Callable[..., Chat]
PLAN = "1. Write notes.txt saying hi.\n2. Read it back."


def test_a_plan_is_approved_then_carried_out_in_the_mode_picked(open_chat: Open, workspace: Path,
                                                                isolated_home: Path) -> None:
    replies = [{"tool_calls": [call("write_file", path="notes.txt", content="early\n")]},
               {"tool_calls": [call("exit_plan_mode", plan="1. Write notes.txt.")]},
               {"tool_calls": [call("exit_plan_mode", plan=PLAN)]},
               {"tool_calls": [call("write_file", path="notes.txt", content="hi\n")]},
               {"text": "notes.txt written"}]
    with FakeLLMServer(replies) as server:
        chat = open_chat("chat", "--permission-mode", "plan", *server_args(server))
        chat.prompt()
        chat.say("make notes")
        shown = plain(chat.expect("Approve this plan? [y/N]"))
        assert "1. Write notes.txt." in shown
        assert not (workspace / "notes.txt").exists()  # the early write was refused
        chat.send("n")
        chat.expect("still in plan mode")
        chat.prompt()
        chat.say("say hi in it")
        shown = plain(chat.expect("Approve this plan? [y/N]"))
        assert "2. Read it back." in shown
        chat.send("y")
        chat.expect("[a]uto")
        chat.send("a")
        assert "permission mode: auto" in plain(chat.expect("notes.txt written"))
        chat.prompt()
        assert chat.leave() == 0
    assert (workspace / "notes.txt").read_text() == "hi\n"
    assert user_messages(server.requests[-1].body) == ["make notes", "say hi in it", "go"]
    refused = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert "plan mode: write_file may change something" in refused[0]
    tools = [tool["function"]["name"] for tool in server.requests[0].body["tools"]]
    later = [tool["function"]["name"] for tool in server.requests[-1].body["tools"]]
    assert "exit_plan_mode" in tools and "exit_plan_mode" not in later
    [session_id] = sessions(isolated_home)  # a later `resume` goes on in the mode picked
    meta = json.loads((isolated_home / "sessions" / session_id / "meta.json").read_text())
    assert meta["permission_mode"] == "auto"
