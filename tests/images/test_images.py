"""Images reach the model: `-i FILE` on both wires, kept in the session for a resume, and a
`read_file` of an image file returned as an image (text for a model that takes none)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from clitools import invoke
from fakeserver import FakeLLMServer
from imagekit import png_bytes

API_KEY = "sk-test-images"


def provider_args(server: FakeLLMServer, provider: str, model: str = "fake-model") -> list[str]:
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    return ["--provider", provider, "--api-base", base, "-m", model]


def openai_images(message: dict) -> list[str]:
    content = message["content"]
    return [p["image_url"]["url"] for p in content if p["type"] == "image_url"] if isinstance(content, list) else []


def anthropic_images(blocks: list) -> list[tuple[str, str]]:
    return [(b["source"]["media_type"], b["source"]["data"]) for b in blocks if b.get("type") == "image"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_image_given_with_i_reaches_the_request_body(tmp_path: Path, provider: str) -> None:
    shot = tmp_path / "shot.png"
    shot.write_bytes(png_bytes())
    data = base64.b64encode(shot.read_bytes()).decode()
    with FakeLLMServer([{"text": "a red pixel"}]) as server:
        proc = invoke("run", "what is in it?", "-i", str(shot), "-C", str(tmp_path),
                      *provider_args(server, provider), env={"RECURSIVE_API_KEY": API_KEY})
        body = server.requests[0].body
    assert proc.returncode == 0, proc.stderr
    if provider == "openai":
        user = body["messages"][1]
        assert user["content"][0] == {"type": "text", "text": "what is in it?"}
        assert openai_images(user) == [f"data:image/png;base64,{data}"]
    else:
        blocks = body["messages"][0]["content"]
        assert blocks[0]["text"] == "what is in it?"
        assert anthropic_images(blocks) == [("image/png", data)]


@pytest.mark.parametrize("content, says", [
    (None, "does not exist"),
    (b"plain text, no image", "is not an image"),
])
def test_a_bad_image_file_is_one_line_and_exit_2(tmp_path: Path, content: bytes | None, says: str) -> None:
    path = tmp_path / "x.png"
    if content is not None:
        path.write_bytes(content)
    proc = invoke("run", "hi", "-i", str(path), "--provider", "scripted", "--script", str(tmp_path / "none.json"))
    assert proc.returncode == 2
    assert says in proc.stderr and "--image" in proc.stderr


def test_an_image_too_big_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.png"
    path.write_bytes(png_bytes() + b"\x00" * (5 * 1024 * 1024))
    proc = invoke("run", "hi", "-i", str(path), "-m", "gpt-4o", env={"RECURSIVE_API_KEY": API_KEY})
    assert proc.returncode == 2 and "too big" in proc.stderr


def test_the_image_is_sent_again_on_resume_and_stored_once(tmp_path: Path, isolated_home: Path) -> None:
    shot = tmp_path / "shot.png"
    shot.write_bytes(png_bytes(40, 40))
    data = base64.b64encode(shot.read_bytes()).decode()
    env = {"RECURSIVE_API_KEY": API_KEY}
    with FakeLLMServer([{"text": "red"}, {"text": "still red"}]) as server:
        args = provider_args(server, "openai")
        first = invoke("run", "colour?", "-i", str(shot), "-C", str(tmp_path), *args, "--session-id", "img-1", env=env)
        again = invoke("resume", "img-1", "and now?", "-C", str(tmp_path), *args, env=env)
        bodies = [r.body for r in server.requests]
    assert first.returncode == 0 and again.returncode == 0, again.stderr
    assert openai_images(bodies[1]["messages"][1]) == [f"data:image/png;base64,{data}"]
    stored = b"".join(p.read_bytes() for p in isolated_home.rglob("*.jsonl"))
    assert stored.count(data.encode()) == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_read_file_of_an_image_returns_it_as_an_image(tmp_path: Path, provider: str) -> None:
    (tmp_path / "logo.png").write_bytes(png_bytes())
    data = base64.b64encode(png_bytes()).decode()
    replies = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "logo.png"}}]}, {"text": "a logo"}]
    with FakeLLMServer(replies) as server:
        proc = invoke("run", "look at logo.png", "-C", str(tmp_path), *provider_args(server, provider),
                      env={"RECURSIVE_API_KEY": API_KEY})
        body = server.requests[1].body
    assert proc.returncode == 0, proc.stderr
    if provider == "openai":
        tool, after = body["messages"][3], body["messages"][4]
        assert tool["role"] == "tool" and "logo.png" in tool["content"] and "image/png" in tool["content"]
        assert after["role"] == "user" and openai_images(after) == [f"data:image/png;base64,{data}"]
    else:
        result = body["messages"][2]["content"][0]
        assert result["type"] == "tool_result"
        assert anthropic_images(result["content"]) == [("image/png", data)]


def test_a_model_that_takes_no_images_is_told_in_text(tmp_path: Path) -> None:
    (tmp_path / "logo.png").write_bytes(png_bytes())
    replies = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "logo.png"}}]}, {"text": "ok"}]
    with FakeLLMServer(replies) as server:
        proc = invoke("run", "look", "-C", str(tmp_path), *provider_args(server, "openai", "deepseek-chat"),
                      env={"RECURSIVE_API_KEY": API_KEY})
        messages = server.requests[1].body["messages"]
    assert proc.returncode == 0, proc.stderr
    assert "image_url" not in json.dumps(messages)
    assert "does not take images" in messages[3]["content"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_big_image_counts_as_its_tokens_not_its_bytes(tmp_path: Path, provider: str) -> None:
    # 1.2 MB of base64 would be ~300k tokens by its bytes: over the model's context window (8k
    # for gpt-4, 200k for Claude), a compaction before the next step. As an image it is about
    # 1,600 tokens: no compaction.
    (tmp_path / "photo.png").write_bytes(png_bytes(500, 600, noise=True))
    (tmp_path / "notes.txt").write_text("notes\n")
    reads = [{"tool_calls": [{"name": "read_file", "arguments": {"path": name}}]}
             for name in ("notes.txt", "notes.txt", "photo.png")]
    replies = [*reads, {"text": "a photo"}, {"text": "summary"}, {"text": "a photo"}]
    with FakeLLMServer(replies) as server:
        model = "gpt-4" if provider == "openai" else "claude-sonnet-4-5"
        proc = invoke("run", "look at photo.png", "-C", str(tmp_path), *provider_args(server, provider, model),
                      "--no-session", env={"RECURSIVE_API_KEY": API_KEY})
        bodies = [r.body for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert len(bodies) == 4 and "Summarise" not in json.dumps(bodies)


@pytest.mark.parametrize("command", [["loop", "describe it", "--max-iterations", "1"],
                                     ["goal", "describe it", "--check", "true", "--max-turns", "1"]])
def test_loop_and_goal_take_i_too(tmp_path: Path, command: list[str]) -> None:
    shot = tmp_path / "shot.png"
    shot.write_bytes(png_bytes())
    with FakeLLMServer([{"text": "a red pixel"}] * 3) as server:
        proc = invoke(*command, "-i", str(shot), "-C", str(tmp_path), *provider_args(server, "openai"),
                      "--no-session", env={"RECURSIVE_API_KEY": API_KEY})
        first = server.requests[0].body
    assert proc.returncode == 0, proc.stderr
    users = [m for m in first["messages"] if m["role"] == "user"]
    assert openai_images(users[0]) == ["data:image/png;base64," + base64.b64encode(png_bytes()).decode()]


def test_resume_takes_i_for_its_prompt(tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    shot.write_bytes(png_bytes(5, 5))
    env = {"RECURSIVE_API_KEY": API_KEY}
    with FakeLLMServer([{"text": "hi"}, {"text": "a square"}]) as server:
        args = ["-C", str(tmp_path), *provider_args(server, "openai")]
        assert invoke("run", "hello", *args, "--session-id", "img-2", env=env).returncode == 0
        again = invoke("resume", "img-2", "and this?", "-i", str(shot), *args, env=env)
        messages = server.requests[1].body["messages"]
    assert again.returncode == 0, again.stderr
    assert messages[1]["content"] == "hello"
    assert openai_images(messages[-1]) == ["data:image/png;base64," + base64.b64encode(png_bytes(5, 5)).decode()]


def responses_images(parts: object) -> list[str]:
    return [p["image_url"] for p in parts if p.get("type") == "input_image"] if isinstance(parts, list) else []


def test_images_on_the_responses_wire_from_i_and_from_read_file(tmp_path: Path) -> None:
    (tmp_path / "logo.png").write_bytes(png_bytes())
    data = base64.b64encode(png_bytes()).decode()
    replies = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "logo.png"}}]}, {"text": "a logo"}]
    with FakeLLMServer(replies) as server:
        proc = invoke("run", "compare them", "-i", str(tmp_path / "logo.png"), "-C", str(tmp_path),
                      *provider_args(server, "openai", "gpt-5"), "--wire", "responses",
                      env={"RECURSIVE_API_KEY": API_KEY})
        first, second = (request.body["input"] for request in server.requests)
    assert proc.returncode == 0, proc.stderr
    user = next(item for item in first if item.get("role") == "user")
    assert responses_images(user["content"]) == [f"data:image/png;base64,{data}"]
    [output] = [item for item in second if item.get("type") == "function_call_output"]
    assert responses_images(output["output"]) == [f"data:image/png;base64,{data}"]
    assert any(p["type"] == "input_text" and "logo.png" in p["text"] for p in output["output"])
