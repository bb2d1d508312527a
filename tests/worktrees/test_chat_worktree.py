"""`recursive chat -w NAME` on a real pseudo-terminal: the interactive session works in its
own git worktree, and the main checkout is untouched."""

from __future__ import annotations

from pathlib import Path

from chat.chatkit import Chat, call
from clitools import write_script

from .conftest import git


def test_chat_in_a_worktree_writes_there(tmp_path: Path, repo: Path) -> None:
    script = write_script(tmp_path / "chat.json", [
        {"tool_calls": [call("write_file", path="same.txt", content="chat\n")]}, {"text": "written"}])
    chat = Chat(["chat", "-w", "talk", "--provider", "scripted", "--script", str(script)], repo)
    try:
        chat.prompt()
        chat.say("write same.txt")
        chat.expect("written")
        chat.prompt()
        assert chat.leave() == 0
    finally:
        chat.kill()
    assert (repo / ".recursive/worktrees/talk/same.txt").read_text() == "chat\n"
    assert not (repo / "same.txt").exists() and git(repo, "status", "--porcelain") == ""
    assert "recursive/talk" in git(repo, "branch", "--list")
