"""The chat tests' fixture: sessions on a pseudo-terminal, each killed at the end of its test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from chatkit import Chat

Open = Callable[..., Chat]


@pytest.fixture
def open_chat(workspace: Path) -> Iterator[Open]:
    """`open_chat(*args)`: `recursive ARGS` on a terminal in the workspace; killed at the end."""
    chats: list[Chat] = []

    def start(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Chat:
        chat = Chat(list(args), cwd or workspace, env)
        chats.append(chat)
        return chat

    yield start
    for chat in chats:
        chat.kill()

