"""The interactive session through a real pseudo-terminal against the loopback model server:
what a person types, what the screen shows, what the model server receives, what is on disk."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from chatkit import ALT_ENTER, CTRL_C, Chat, call, server_args, sessions, user_messages
from clitools import host_pid, invoke, wait_gone, wait_until
from fakeserver import FakeLLMServer

Open = Callable[..., Chat]


def test_bare_recursive_on_a_terminal_holds_a_two_turn_conversation(
        open_chat: Open, isolated_home: Path) -> None:
    with FakeLLMServer([{"text": "The **first** answer [bold]as is[/bold]."},
                        {"text": "The second answer."}]) as server:
        chat = open_chat(env={"RECURSIVE_PROVIDER": "openai", "RECURSIVE_MODEL": "gpt-4o-mini",
                              "RECURSIVE_API_BASE": server.openai_base_url})  # `recursive` alone
        chat.prompt()
        chat.say("hello there")
        chat.prompt()
        # The answer rendered as Markdown (bold, no asterisks), and no rich markup read in it.
        assert re.search(r"The (\x1b\[[0-9;]*m)+first(\x1b\[[0-9;]*m)+ answer \[bold\]as is\[/bold\]\.",
                         chat.seen), chat.seen[-2000:]
        chat.say("and then?")
        chat.expect("The second answer.")
        chat.prompt()
        assert chat.leave() == 0
    assert "recursive resume" in chat.seen  # how to come back, said on the way out
    assert user_messages(server.requests[1].body) == ["hello there", "and then?"]
    assert [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "assistant"] == \
        ["The **first** answer [bold]as is[/bold]."]
    [session_id] = sessions(isolated_home)
    shown = invoke("sessions", "show", session_id)
    assert shown.returncode == 0 and "hello there" in shown.stdout and "The second answer." in shown.stdout


def test_options_without_a_command_open_the_session_too(open_chat: Open) -> None:
    with FakeLLMServer([{"text": "hi from the fake"}]) as server:
        chat = open_chat(*server_args(server, model="gpt-4.1"))  # `recursive -m MODEL …`, as `claude -m` takes it
        chat.prompt()
        chat.say("hello")
        chat.expect("hi from the fake")
        chat.prompt()
        assert chat.leave() == 0
    assert server.requests[0].body["model"] == "gpt-4.1"


def test_ctrl_d_leaves_and_an_untouched_session_is_not_kept(open_chat: Open, isolated_home: Path) -> None:
    with FakeLLMServer([]) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        assert chat.leave() == 0
    assert sessions(isolated_home) == []
    assert server.requests == []


def test_ctrl_c_on_an_empty_line_asks_again_before_leaving(open_chat: Open) -> None:
    with FakeLLMServer([]) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.send("some half-typed text")
        chat.send(CTRL_C)  # clears the line
        chat.send(CTRL_C)
        chat.expect("press Ctrl-C again to exit")
        chat.prompt()  # (asked again: the next Ctrl-C is a key of the new input line)
        chat.send(CTRL_C)
        assert chat.wait() == 0


def test_multi_line_input_alt_enter_trailing_backslash_and_paste(open_chat: Open) -> None:
    with FakeLLMServer([{"text": "got three lines"}, {"text": "got the paste"}]) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.send("line one" + ALT_ENTER + "line two\\")
        chat.send("\r")  # a trailing backslash: a new line, not sent
        chat.say("line three")
        chat.expect("got three lines")
        chat.prompt()
        chat.send("\x1b[200~pasted one\npasted two\x1b[201~")  # a bracketed paste keeps its newline
        chat.send("\r")
        chat.expect("got the paste")
        chat.prompt()
        assert chat.leave() == 0
    assert user_messages(server.requests[0].body) == ["line one\nline two\nline three"]
    assert user_messages(server.requests[1].body)[-1] == "pasted one\npasted two"


def test_ctrl_c_during_a_long_shell_command_stops_it_and_keeps_the_session(
        open_chat: Open, workspace: Path) -> None:
    replies = [{"tool_calls": [call("run_shell", command="sleep 30 & echo $! > sleep.pid; wait")]},
               {"text": "fine, stopped"}]
    with FakeLLMServer(replies) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.say("run the long thing")
        pid_file = workspace / "sleep.pid"
        wait_until(lambda: pid_file.is_file() and pid_file.read_text().strip() != "")
        pid = host_pid(pid_file)
        chat.send(CTRL_C)
        chat.expect("Ctrl-C again stops it now")  # the first one waits for the step to end
        chat.send(CTRL_C)
        chat.expect("interrupted")
        chat.prompt()
        assert wait_gone(pid), "the shell command's sleep outlived the interrupt"
        chat.say("what happened?")
        chat.expect("fine, stopped")
        chat.prompt()
        assert chat.leave() == 0
    tool_results = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert tool_results and "interrupted" in tool_results[0]
    assert user_messages(server.requests[1].body) == ["run the long thing", "what happened?"]


def test_text_typed_during_a_turn_is_queued_and_sent_after_it(open_chat: Open, workspace: Path) -> None:
    replies = [{"tool_calls": [call("run_shell", command="while [ ! -f go ]; do sleep 0.05; done")]},
               {"text": "first turn done"}, {"text": "queued one answered"}]
    with FakeLLMServer(replies) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.say("wait for go")
        chat.expect("run_shell")
        chat.say("and also this")  # typed while the command runs
        chat.expect("queued › and also this")
        chat.expect("+1 queued")  # the status line
        (workspace / "go").write_text("")
        chat.expect("first turn done")
        chat.expect("› and also this")  # its turn starts, marked as a typed message is
        chat.expect("queued one answered")
        chat.prompt()
        assert chat.leave() == 0
    assert len(server.requests) == 3
    assert user_messages(server.requests[2].body) == ["wait for go", "and also this"]


def test_undo_restores_the_file_the_last_turn_changed(open_chat: Open, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("the original\n")
    replies = [{"tool_calls": [call("write_file", path="notes.txt", content="rewritten\n")]},
               {"text": "rewrote it"}, {"text": "a fresh start"}]
    with FakeLLMServer(replies) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.say("rewrite notes.txt")
        chat.expect("rewrote it")
        chat.prompt()
        assert (workspace / "notes.txt").read_text() == "rewritten\n"
        chat.say("/undo")
        chat.expect("restored 1 file")
        chat.prompt()
        assert (workspace / "notes.txt").read_text() == "the original\n"
        chat.say("try something else")
        chat.expect("a fresh start")
        chat.prompt()
        assert chat.leave() == 0
    assert user_messages(server.requests[2].body) == ["try something else"]  # the turn is gone too


def test_goal_with_a_check_runs_turns_until_the_check_passes(open_chat: Open, workspace: Path) -> None:
    replies = [{"text": "I will look into it"},  # turn 1: nothing done, the check fails
               {"tool_calls": [call("write_file", path="done.txt", content="yes\n")]},
               {"text": "created done.txt"},  # turn 2: the check passes
               {"text": json.dumps({"achieved": True, "reason": "done.txt is there"})}]  # the judge
    with FakeLLMServer(replies) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.say("/goal done.txt exists --check 'test -f done.txt'")
        chat.expect("goal not met after turn 1")
        chat.expect("created done.txt")
        chat.expect("goal met after 2 turns")
        chat.prompt()
        assert chat.leave() == 0
    assert (workspace / "done.txt").is_file()
    feedback = user_messages(server.requests[1].body)[-1]
    assert "Check `test -f done.txt` failed" in feedback
    assert "done.txt exists" in server.requests[3].body["messages"][-1]["content"]  # asked of the judge


def test_model_command_switches_the_model_of_the_next_request(open_chat: Open, isolated_home: Path) -> None:
    with FakeLLMServer([{"text": "from the first"}, {"text": "from the second"}, {"text": "third"}]) as server:
        chat = open_chat("chat", *server_args(server, model="gpt-4o-mini"))
        chat.prompt()
        chat.say("one")
        chat.expect("from the first")
        chat.prompt()
        chat.say("/model gpt-4.1-mini")
        chat.expect("model: gpt-4.1-mini from the next request on")
        chat.prompt()
        chat.say("two")
        chat.expect("from the second")
        chat.prompt()
        assert chat.leave() == 0
        # The session goes on with the model chosen last, as it was left.
        [session_id] = sessions(isolated_home)
        later = invoke("resume", session_id, "three", "--api-base", server.openai_base_url)
        assert later.returncode == 0, later.stderr
    assert [r.body["model"] for r in server.requests] == ["gpt-4o-mini", "gpt-4.1-mini", "gpt-4.1-mini"]


def test_resume_without_a_prompt_on_a_terminal_enters_the_conversation(
        open_chat: Open, workspace: Path, isolated_home: Path) -> None:
    with FakeLLMServer([{"text": "Noted: the number is 42."}, {"text": "It was 42."}]) as server:
        first = invoke("run", "remember the number 42", *server_args(server), cwd=workspace)
        assert first.returncode == 0, first.stderr
        [session_id] = sessions(isolated_home)
        chat = open_chat("resume", session_id)
        chat.expect("remember the number 42")  # the conversation so far, shown again
        chat.expect("Noted: the number is 42.")
        chat.prompt()
        chat.say("which number was it?")
        chat.expect("It was 42.")
        chat.prompt()
        assert chat.leave() == 0
    assert user_messages(server.requests[1].body) == ["remember the number 42", "which number was it?"]
    assert sessions(isolated_home) == [session_id]


def test_unknown_slash_command_says_so_and_lists_the_known_ones(open_chat: Open) -> None:
    with FakeLLMServer([{"text": "that was a message"}]) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.say("/frobnicate now")
        chat.expect("unknown command /frobnicate; the commands are: /help /model")
        chat.prompt()
        chat.say("/help")
        chat.expect("/rewind N")
        chat.prompt()
        assert server.requests == []
        chat.say("/usr/bin/env is on my PATH?")  # a path, not a command
        chat.expect("that was a message")
        chat.prompt()
        assert chat.leave() == 0
    assert user_messages(server.requests[0].body) == ["/usr/bin/env is on my PATH?"]


def test_ask_mode_asks_inline_and_runs_the_command_on_yes(open_chat: Open, workspace: Path) -> None:
    replies = [{"tool_calls": [call("run_shell", command="echo yes > answered.txt")]}, {"text": "ran it"}]
    with FakeLLMServer(replies) as server:
        chat = open_chat("chat", "--permission-mode", "ask", *server_args(server))
        chat.prompt()
        chat.say("make the file")
        chat.expect("Allow run_shell echo yes > answered.txt? [y]es / [n]o / [a]lways for this tool:")
        chat.send("y")
        chat.expect("ran it")
        chat.prompt()
        assert chat.leave() == 0
    assert (workspace / "answered.txt").read_text() == "yes\n"


def test_ctrl_c_while_the_model_is_asked_stops_at_once_and_gives_back_the_queued_text(
        open_chat: Open) -> None:
    replies = [{"text": "too late", "delay": 20}, {"text": "the queued text arrived"}]
    with FakeLLMServer(replies) as server:
        chat = open_chat("chat", *server_args(server), "think about it")  # PROMPT: the first message
        chat.expect("thinking")
        chat.say("and this after")
        chat.expect("+1 queued")
        wait_until(lambda: len(server.replies) == 1)  # the server took the request: the model is being asked
        chat.send(CTRL_C)  # no step to wait for
        chat.expect("interrupted")
        chat.expect("back in the input line")
        chat.prompt()
        chat.send("\r")  # the queued text is in the input line: Enter sends it
        chat.expect("the queued text arrived")
        chat.prompt()
        assert chat.leave() == 0
    assert user_messages(server.requests[1].body) == ["think about it", "and this after"]
    assert "too late" not in chat.seen


def test_slash_commands_cost_diff_permissions_compact(open_chat: Open, workspace: Path) -> None:
    replies = [{"tool_calls": [call("write_file", path="made.txt", content="new file\n")]},
               {"text": "made it", "usage": {"input_tokens": 1200, "output_tokens": 34}}]
    with FakeLLMServer(replies) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.say("/diff")
        chat.expect("no files changed by this session")
        chat.prompt()
        chat.say("make a file")
        chat.expect("made it")
        chat.prompt()
        chat.say("/diff")
        chat.expect("+new file")
        chat.prompt()
        chat.say("/cost")
        chat.expect("1,210 in / 39 out tokens")
        chat.prompt()
        chat.say("/permissions read-only")
        chat.expect("permission mode: read-only from the next tool call on")
        chat.prompt()
        chat.say("/permissions")
        chat.expect("permission mode: read-only (")
        chat.prompt()
        chat.say("/compact")
        chat.expect("nothing to compact")
        chat.prompt()
        assert chat.leave() == 0
    assert len(server.requests) == 2


def test_clear_starts_a_new_session_and_resume_goes_back(open_chat: Open, isolated_home: Path) -> None:
    with FakeLLMServer([{"text": "answer in the first"}, {"text": "answer in the second"}]) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.say("about apples")
        chat.expect("answer in the first")
        chat.prompt()
        [first] = sessions(isolated_home)
        chat.say("/clear")
        chat.expect("new session")
        chat.prompt()
        chat.say("about pears")
        chat.expect("answer in the second")
        chat.prompt()
        chat.say("/sessions")
        chat.expect("about pears")
        chat.prompt()
        chat.say(f"/resume {first}")
        chat.expect("resumed session " + first)
        chat.expect("about apples")  # its conversation, shown again
        chat.prompt()
        assert chat.leave() == 0
    assert len(sessions(isolated_home)) == 2
    assert user_messages(server.requests[1].body) == ["about pears"]


def test_history_is_kept_per_workspace_and_at_paths_complete(open_chat: Open, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("x\n")
    with FakeLLMServer([{"text": "read it"}, {"text": "again"}]) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.send("look at @no")
        chat.expect("notes.txt")  # the completion menu, as it is typed
        chat.send("\t")  # takes it
        chat.say(" please")
        chat.expect("read it")
        chat.prompt()
        assert chat.leave() == 0
        again = open_chat("chat", *server_args(server))
        again.prompt()
        again.send("\x1b[A")  # Up: the last message of this workspace
        again.expect("please")
        again.send("\r")
        again.expect("again")
        again.prompt()
        assert again.leave() == 0
    assert user_messages(server.requests[0].body) == ["look at @notes.txt please"]
    assert user_messages(server.requests[1].body) == ["look at @notes.txt please"]


def test_sigterm_at_the_prompt_ends_the_session_with_143(open_chat: Open, isolated_home: Path) -> None:
    with FakeLLMServer([{"text": "one answer"}]) as server:
        chat = open_chat("chat", *server_args(server), "hi")
        chat.expect("one answer")
        chat.prompt()
        chat.child.kill(15)
        assert chat.wait() == 143
    [session_id] = sessions(isolated_home)
    meta = json.loads((isolated_home / "sessions" / session_id / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["turns"] == 1
    assert not (isolated_home / "sessions" / session_id / "lock").exists()


def _context_hook(workspace: Path, tmp_path: Path) -> Path:
    """A `.recursive/settings.json` hook that adds "today is Tuesday" to every prompt."""
    hook = tmp_path / "context.sh"
    hook.write_text("#!/bin/bash\ncat > /dev/null\necho '{\"hookSpecificOutput\": {\"hookEventName\": "
                    "\"UserPromptSubmit\", \"additionalContext\": \"today is Tuesday\"}}'\n")
    hook.chmod(0o755)
    (workspace / ".recursive").mkdir()
    (workspace / ".recursive" / "settings.json").write_text(json.dumps(
        {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": str(hook)}]}]}}))
    return hook


def test_the_workspace_hooks_apply_to_the_session_once_trusted(open_chat: Open, workspace: Path, tmp_path: Path,
                                                               isolated_home: Path) -> None:
    hook = _context_hook(workspace, tmp_path)
    with FakeLLMServer([{"text": "it is Tuesday"}]) as server:
        chat = open_chat("chat", *server_args(server))
        chat.expect(f"hook UserPromptSubmit [*] '{hook}' (.recursive/settings.json)")
        chat.expect("[y/N]")
        chat.say("y")
        chat.prompt()
        chat.say("what day is it?")
        chat.expect("it is Tuesday")
        chat.prompt()
        assert chat.leave() == 0
    prompt = server.requests[0].body["messages"][-1]["content"]
    assert "what day is it?" in prompt and "today is Tuesday" in prompt
    assert str(workspace.resolve()) in json.loads((isolated_home / "trust.json").read_text())["folders"]


def test_a_workspace_not_trusted_at_the_question_runs_without_its_hooks(open_chat: Open, workspace: Path,
                                                                       tmp_path: Path, isolated_home: Path) -> None:
    _context_hook(workspace, tmp_path)
    with FakeLLMServer([{"text": "no idea"}]) as server:
        chat = open_chat("chat", *server_args(server))
        chat.expect("[y/N]")
        chat.say("n")
        chat.expect("going on without them")
        chat.prompt()
        chat.say("what day is it?")
        chat.expect("no idea")
        chat.prompt()
        assert chat.leave() == 0
    assert "today is Tuesday" not in server.requests[0].body["messages"][-1]["content"]
    assert "skipped" not in chat.seen  # (answered: no note on top)
    assert not (isolated_home / "trust.json").exists()


def test_rewind_refuses_to_overwrite_an_outside_edit_unless_forced(open_chat: Open, workspace: Path) -> None:
    replies = [{"tool_calls": [call("write_file", path="a.txt", content="one\n")]}, {"text": "wrote a"},
               {"tool_calls": [call("write_file", path="b.txt", content="two\n")]}, {"text": "wrote b"}]
    with FakeLLMServer(replies) as server:
        chat = open_chat("chat", *server_args(server))
        chat.prompt()
        chat.say("write a")
        chat.expect("wrote a")
        chat.prompt()
        chat.say("write b")
        chat.expect("wrote b")
        chat.prompt()
        (workspace / "a.txt").write_text("edited by hand\n")  # someone else changes a.txt
        chat.say("/rewind 1")
        chat.expect("conflict  a.txt")
        chat.expect("error: refused")
        chat.prompt()
        assert (workspace / "b.txt").is_file()  # nothing was changed
        chat.say("/rewind 1 --force")
        chat.expect("restored 2 files; the conversation is back to before turn 1")
        chat.prompt()
        assert chat.leave() == 0
    assert not (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()
    assert len(server.requests) == 4


def test_chat_continue_goes_on_with_the_latest_session(open_chat: Open, isolated_home: Path) -> None:
    with FakeLLMServer([{"text": "answer one"}, {"text": "answer two"}]) as server:
        first = open_chat("chat", *server_args(server), "first question")
        first.expect("answer one")
        first.prompt()
        assert first.leave() == 0
        again = open_chat("chat", "-c", *server_args(server))
        again.expect("resumed session")
        again.expect("first question")
        again.prompt()
        again.say("second question")
        again.expect("answer two")
        again.prompt()
        assert again.leave() == 0
    assert len(sessions(isolated_home)) == 1
    assert user_messages(server.requests[1].body) == ["first question", "second question"]


def test_an_mcp_servers_prompt_is_a_command_that_sends_its_text(open_chat: Open, tmp_path: Path) -> None:
    """`/mcp__raw__greet Ada`: the server's prompt filled in and sent as the message; `/help`
    and `/mcp` show it; a missing argument says the usage and sends nothing."""
    raw = Path(__file__).parents[1] / "mcp" / "raw_server.py"
    import sys

    config = json.dumps({"mcpServers": {"raw": {"command": sys.executable, "args": [str(raw), str(tmp_path / "r.jsonl")]}}})
    with FakeLLMServer([{"text": "Hello, Ada!"}]) as server:
        chat = open_chat("chat", *server_args(server), "--strict-mcp-config", "--mcp-config", config)
        chat.prompt()
        chat.say("/help")
        chat.expect("/mcp__raw__greet  Greet someone.")
        chat.prompt()
        chat.say("/mcp")
        chat.expect("✓ raw  4 tools, 1 prompt")
        chat.prompt()
        chat.say("/mcp__raw__greet")
        chat.expect("usage: /mcp__raw__greet WHO (who missing)")
        chat.prompt()
        assert server.requests == []
        chat.say("/mcp__raw__greet Ada")
        chat.expect("Hello, Ada!")
        chat.prompt()
        assert chat.leave() == 0
    assert user_messages(server.requests[0].body) == ["Say hello to Ada."]


def test_an_unpriced_models_cost_is_unknown_from_the_start(open_chat: Open) -> None:
    """Not `$0.0000` before the first reply and `cost unknown` after: unknown throughout."""
    with FakeLLMServer([{"text": "hi back"}]) as server:
        chat = open_chat(*server_args(server, model="my-local-model"))
        chat.prompt()
        chat.expect("my-local-model · 0 tokens · cost unknown")
        chat.say("hello")
        chat.expect("hi back")
        chat.prompt()
        assert "$0.0000" not in chat.seen
        assert chat.leave() == 0
