"""The interactive session's commands and keys from Claude Code and Codex: `/status`, `/init`,
`!cmd`, Esc, `recursive chat PROMPT`, and `/sessions` on rewound turns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from chatkit import Chat, plain, server_args, sessions
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
