"""Skill folders for the tests, and what the fake model received of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakeserver import FakeLLMServer

BODY = "BODY-MARKER: run scripts/extract.py FILE to get the text."
KEY = {"RECURSIVE_API_KEY": "sk-test-0123456789abcdef"}


def make_skill(root: Path, name: str, description: str = "Extract text from PDF files.",
               body: str = BODY, front: str | None = None) -> Path:
    """`root/name/SKILL.md` (`front`: the whole front matter, in place of name and description)."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    header = front if front is not None else f"name: {name}\ndescription: {description}\n"
    (folder / "SKILL.md").write_text(f"---\n{header}---\n# {name}\n\n{body}\n", encoding="utf-8")
    return folder


def fake_args(server: FakeLLMServer) -> list[str]:
    return ["--provider", "openai", "--api-base", server.openai_base_url, "-m", "fake-model", "--no-checkpoints"]


def system_text(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


def tool_results(body: dict[str, Any]) -> list[str]:
    return [str(message["content"]) for message in body["messages"] if message["role"] == "tool"]


def sent(body: dict[str, Any]) -> str:
    return json.dumps(body)
