"""The interactive session's commands and keys from Claude Code and Codex: `/status`, `/init`,
`!cmd`, Esc, `recursive chat PROMPT`, and `/sessions` on rewound turns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from chatkit import Chat, plain, server_args, sessions
from clitools import wait_until
from fakeserver import FakeLLMServer

Open = Callable[..., Chat]


def test_chat_with_a_prompt_shows_it_as_a_typed_message_and_status_tells_the_session(
        open_chat: Open, workspace: Path, isolated_home: Path) -> None:
    with FakeLLMServer([{"text": "hello back", "usage": {"input_tokens": 1200, "output_tokens": 34}}]) as server:
        chat = open_chat("chat", *server_args(server), "--permission-mode", "accept-edits", "say hello")
        before = plain(chat.expect("hello back"))
        assert "› say hello\n" in before  # echoed as the input line leaves a typed message
        chat.prompt()
        chat.say("/status")
        chat.expect("cost ")
        chat.prompt()
        base = server.openai_base_url
        assert chat.leave() == 0
    [session_id] = sessions(isolated_home)
    shown = plain(chat.seen).rsplit("/status", 1)[-1]
    assert f"session      {session_id}\n" in shown
    assert "model        gpt-4o-mini\n" in shown
    assert f"provider     openai · {base}\n" in shown
    assert "permissions  accept-edits\n" in shown
    assert "sandbox      " in shown
    assert f"workspace    {workspace.resolve()}\n" in shown
    assert "turns        1\n" in shown
    assert "tokens       1,200 in / 34 out\n" in shown
    assert "cost         $0.0002\n" in shown


def test_a_bang_command_runs_in_the_shell_and_goes_with_the_next_message(open_chat: Open, workspace: Path) -> None:
    with FakeLLMServer([{"text": "I see the output"}]) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.say("!echo from the shell; echo to stderr >&2; pwd; exit 3")
        shown = plain(chat.expect("exit code: 3"))
        chat.prompt()
        assert "from the shell\nto stderr\n" in shown and str(workspace.resolve()) in shown
        assert server.requests == []  # the person's command: the model is not asked
        chat.say("what did it print?")
        chat.expect("I see the output")
        chat.prompt()
        assert chat.leave() == 0
    [prompt] = [m["content"] for m in server.requests[0].body["messages"] if m["role"] == "user"]
    assert "$ echo from the shell; echo to stderr >&2; pwd; exit 3\nfrom the shell\nto stderr" in prompt
    assert "exit code: 3" in prompt and prompt.endswith("\n\nwhat did it print?")


def test_esc_stops_a_running_bang_command_and_a_turn_as_ctrl_c_does(open_chat: Open, workspace: Path) -> None:
    replies = [{"text": "too late", "delay": 20}, {"text": "after the stop"}]
    with FakeLLMServer(replies) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.say("!sleep 30; echo never > late.txt")
        chat.expect("Esc or Ctrl-C stops")  # the status line of the running command
        chat.send("\x1b")
        chat.expect("interrupted")
        chat.prompt()
        chat.say("think for a long time")
        wait_until(lambda: len(server.replies) == 1)  # the server took the request: the model is being asked
        chat.send("\x1b")
        chat.expect("interrupted")
        chat.prompt()
        chat.say("again")
        chat.expect("after the stop")
        chat.prompt()
        assert chat.leave() == 0
    assert not (workspace / "late.txt").exists()
    assert "too late" not in chat.seen
