"""The interactive session's commands and keys from Claude Code and Codex: `/status`, `/init`,
`!cmd`, Esc, `recursive chat PROMPT`, and `/sessions` on rewound turns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from chatkit import Chat, call, plain, server_args, sessions, user_messages
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
        listed = plain(chat.exchange("/help", "Ctrl-D leaves"))
        assert "/status " in listed and "/init " in listed and "!COMMAND " in listed and "Esc or Ctrl-C" in listed
        chat.exchange("/status", "cost ")
        base = server.openai_base_url
        assert chat.leave() == 0
    [session_id] = sessions(isolated_home)
    shown = plain(chat.seen).rsplit("/status", 1)[-1]
    assert f"session      {session_id}\n" in shown
    assert "model        gpt-4o-mini\n" in shown
    assert f"provider     openai · {base}\n" in shown
    assert "permissions  accept-edits\n" in shown
    assert "sandbox      " in shown
    assert f"workspace {workspace.resolve()} turns 1" in " ".join(shown.split())  # (a long path may wrap)
    assert "turns        1\n" in shown
    assert "tokens       1,200 in / 34 out\n" in shown
    assert "cost         $0.0002\n" in shown


def test_a_bang_command_runs_in_the_shell_and_goes_with_the_next_message(open_chat: Open, workspace: Path) -> None:
    with FakeLLMServer([{"text": "I see the output"}]) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        shown = plain(chat.exchange("!echo from the shell; echo to stderr >&2; pwd; exit 3", "exit code: 3"))
        assert "from the shell\nto stderr\n" in shown and str(workspace.resolve()) in shown
        assert server.requests == []  # the person's command: the model is not asked
        chat.exchange("what did it print?", "I see the output")
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
        chat.exchange("again", "after the stop")
        assert chat.leave() == 0
    assert not (workspace / "late.txt").exists()
    assert "too late" not in chat.seen


def test_init_has_the_agent_write_agents_md_and_asks_before_rewriting_it(open_chat: Open, workspace: Path) -> None:
    replies = [{"tool_calls": [call("write_file", path="AGENTS.md", content="# Agents\nrun `make test`\n")]},
               {"text": "wrote AGENTS.md"}, {"text": "improved it"}]
    with FakeLLMServer(replies) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.exchange("/init", "wrote AGENTS.md")
        assert (workspace / "AGENTS.md").read_text() == "# Agents\nrun `make test`\n"
        chat.say("/init")
        chat.expect("AGENTS.md exists in")
        chat.expect("have the agent rewrite it? [y/N] ")
        chat.send("\r")  # Enter: no
        chat.expect("AGENTS.md left as it is")
        chat.prompt()
        assert len(server.requests) == 2
        chat.say("/init")
        chat.expect("[y/N] ")
        chat.send("y")
        chat.expect("improved it")
        chat.prompt()
        assert chat.leave() == 0
    first, again = user_messages(server.requests[0].body)[-1], user_messages(server.requests[2].body)[-1]
    assert "Write an AGENTS.md file at the root of this repository" in first and "already" not in first
    assert "There is an AGENTS.md already" in again


def test_sessions_marks_the_turns_a_rewind_took_back(open_chat: Open, workspace: Path) -> None:
    replies = [{"tool_calls": [call("write_file", path="a.txt", content="one\n")]}, {"text": "wrote a"},
               {"tool_calls": [call("write_file", path="b.txt", content="two\n")]}, {"text": "wrote b"}]
    with FakeLLMServer(replies) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.exchange("write a", "wrote a")
        shown = plain(chat.exchange("/sessions", "/resume ID opens one"))
        assert "1 turn   write a" in shown and "rewound" not in shown
        chat.exchange("write b", "wrote b")
        chat.exchange("/undo", "restored 1 file")
        shown = plain(chat.exchange("/sessions", "/resume ID opens one"))
        assert chat.leave() == 0
    assert "2 turns (1 rewound)  write a" in shown
