"""Images in the interactive session: `@shot.png` in a message and `chat -i FILE`, typed on a
real pseudo-terminal, reach the model server's request body (issue 30)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from chatkit import Chat
from fakeserver import FakeLLMServer
from imagekit import png_bytes


@pytest.fixture
def chats() -> Iterator[list[Chat]]:
    started: list[Chat] = []
    yield started
    for chat in started:
        chat.kill()


def image_urls(body: dict) -> list[str]:
    return [part["image_url"]["url"] for message in body["messages"] if isinstance(message["content"], list)
            for part in message["content"] if part["type"] == "image_url"]


def test_at_file_png_and_dash_i_attach_images(workspace: Path, tmp_path: Path, chats: list[Chat]) -> None:
    (workspace / "shot.png").write_bytes(png_bytes(3, 1))
    (tmp_path / "first.png").write_bytes(png_bytes(1, 1))
    shot = "data:image/png;base64," + base64.b64encode(png_bytes(3, 1)).decode()
    first = "data:image/png;base64," + base64.b64encode(png_bytes(1, 1)).decode()
    with FakeLLMServer([{"text": "one pixel"}, {"text": "three pixels"}, {"text": "fine"}]) as server:
        chat = Chat(["chat", "-i", str(tmp_path / "first.png"), "--provider", "openai", "-m", "gpt-4o-mini",
                     "--api-base", server.openai_base_url], workspace)
        chats.append(chat)
        chat.prompt()
        chat.say("what is this?")
        chat.expect("one pixel")
        chat.prompt()
        chat.say("and @shot.png, here?")
        chat.expect("three pixels")
        chat.prompt()
        chat.say("look at @missing.png")
        chat.expect("missing.png does not exist; the message goes without it")
        chat.expect("fine")
        chat.prompt()
        assert chat.leave() == 0
        bodies = [r.body for r in server.requests]
    assert image_urls(bodies[0]) == [first]
    assert image_urls(bodies[1]) == [first, shot]
    assert bodies[1]["messages"][-1]["content"][0] == {"type": "text", "text": "and @shot.png, here?"}
    assert image_urls(bodies[2]) == [first, shot]
