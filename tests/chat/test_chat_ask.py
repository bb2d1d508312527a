"""`--permission-mode ask` in the interactive session: what a call would change is on the screen
before the question, and a "no" is the person's choice, not an error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from chatkit import Chat, call, plain, server_args, user_messages
from fakeserver import FakeLLMServer

Open = Callable[..., Chat]
QUESTION = "? [y]es / [n]o / [a]lways for this tool:"


def test_an_edit_shows_its_diff_and_a_no_ends_the_turn_as_the_users_choice(open_chat: Open, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    replies = [{"tool_calls": [call("edit_file", path="notes.txt", old_string="beta\n", new_string="BETA\n")]},
               {"text": "understood, leaving it"}]
    with FakeLLMServer(replies) as server:
        chat = open_chat("chat", "--permission-mode", "ask", *server_args(server))
        chat.prompt()
        chat.say("shout beta")
        shown = plain(chat.expect("Allow edit_file notes.txt" + QUESTION))
        assert "--- a/notes.txt" in shown and "+++ b/notes.txt" in shown
        assert "-beta" in shown and "+BETA" in shown and " alpha" in shown
        chat.send("n")
        chat.expect("you declined edit_file notes.txt · say what to do instead")
        chat.prompt()
        assert len(server.requests) == 1  # the turn ended at the "no": the model is not asked again
        chat.say("leave it then")
        chat.expect("understood, leaving it")
        chat.prompt()
        assert chat.leave() == 0
    assert "error:" not in chat.seen and "✗ denied" not in chat.seen
    assert (workspace / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"
    told = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert told and "the user said no" in told[0]  # the model learns the person declined
    assert user_messages(server.requests[1].body) == ["shout beta", "leave it then"]


def test_a_new_file_shows_its_content_capped_and_a_long_command_shows_whole(open_chat: Open, workspace: Path) -> None:
    content = "".join(f"line {n}\n" for n in range(1, 61))
    command = "for n in 1 2 3; do\n  echo $n >> counted.txt\ndone"
    replies = [{"tool_calls": [call("write_file", path="big.txt", content=content)]},
               {"tool_calls": [call("run_shell", command=command)]}, {"text": "both done"}]
    with FakeLLMServer(replies) as server:
        chat = open_chat("chat", "--permission-mode", "ask", *server_args(server))
        chat.prompt()
        chat.say("make them")
        shown = plain(chat.expect("Allow write_file big.txt" + QUESTION))
        assert "new file big.txt (60 lines)" in shown and "+line 1\n" in shown and "+line 39\n" in shown
        assert "+line 40" not in shown and "… 21 more lines" in shown  # 40 lines at most
        chat.send("y")
        shown = plain(chat.expect("Allow run_shell (the command above)" + QUESTION))
        assert "  for n in 1 2 3; do\n    echo $n >> counted.txt\n  done" in shown
        chat.send("y")
        chat.expect("both done")
        chat.prompt()
        assert chat.leave() == 0
    assert (workspace / "big.txt").read_text() == content
    assert (workspace / "counted.txt").read_text() == "1\n2\n3\n"
    assert len(server.requests) == 3
