"""The SDKs as the oracle of stream parsing: the same bytes, served by a loopback server in
pieces of 1, 7 or all bytes, read by the SDK's own streaming classes and by our provider,
come to the same text, tool calls, usage and stop reason — or fail alike.

Our streams are in streams.py. The SDKs' recorded streams (openai-python's
`.inline-snapshot/external/*.bin`, anthropic-sdk-python's `tests/lib/streaming/fixtures/`)
are not part of this repository: point RECURSIVE_SDK_FIXTURES at a folder holding them (any
depth) and `test_the_sdks_recorded_streams` reads every one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from . import oracle, streams

# The openai and anthropic SDKs cost ≈ 1.5 s of CPU to import: under pytest-xdist, every module
# that imports them in this process runs on one worker (`xdist_group`), so only that one pays.
pytestmark = pytest.mark.xdist_group("openai-anthropic-sdks")

FIXTURES_ENV = "RECURSIVE_SDK_FIXTURES"
CASES = [pytest.param(kind, name, id=f"{kind}-{name}")
         for kind, table in (("anthropic", streams.ANTHROPIC), ("openai", streams.OPENAI)) for name in table]


@pytest.mark.parametrize(("kind", "name"), CASES)
@pytest.mark.parametrize("piece", [0, 1, 7], ids=["whole", "bytewise", "pieces"])
def test_our_streams_read_as_the_sdk_reads_them(kind: str, name: str, piece: int) -> None:
    data = (streams.ANTHROPIC if kind == "anthropic" else streams.OPENAI)[name].encode()
    expected = oracle.sdk(kind, data, piece)
    assert oracle.ours(kind, data, piece) == expected, expected.notes


def test_the_cases_cover_what_they_are_meant_to() -> None:
    """The oracle is not vacuous: the streams end in every way it distinguishes."""
    outcomes = {(kind, name): oracle.ours(kind, text.encode(), 0)
                for kind, table in (("anthropic", streams.ANTHROPIC), ("openai", streams.OPENAI))
                for name, text in table.items()}
    assert outcomes["anthropic", "thinking-then-two-calls"].calls == (
        ("toolu_a", "run_shell", {"command": "pytest -q"}), ("toolu_b", "run_shell", {"command": "ruff check ."}))
    assert outcomes["anthropic", "thinking-then-two-calls"].thinking == (
        ("thinking", "The user wants the tests run.", "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"),)
    redacted = outcomes["anthropic", "redacted-thinking-and-thinking-tokens"]
    assert [kind for kind, _, _ in redacted.thinking] == ["redacted_thinking", "thinking"]
    assert redacted.thinking_tokens == 97 and redacted.thinking[1][2] == "ErUBCkYIBRgCIkB+/=="
    assert outcomes["anthropic", "max-tokens-mid-call"].calls[0][2] == oracle.CUT
    assert outcomes["anthropic", "text"].usage == (432, 42, 400, 7)
    assert outcomes["anthropic", "overloaded-mid-stream"].failure == "error"
    assert outcomes["anthropic", "ends-without-stop"].failure == "incomplete"
    assert outcomes["openai", "refusal"].stop == "refusal"
    assert outcomes["openai", "two-choices"].text == "first"
    assert outcomes["openai", "comments-crlf-and-multiline-data"].text == "two lines"
    assert outcomes["openai", "error-mid-stream"].failure == "error"


def recorded_streams(root: Path) -> list[tuple[str, Path]]:
    """(kind, file) for every stream under `root` in either format; other files are left out."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        head = path.read_bytes()[:4096]
        if b"event: message_start" in head:
            found.append(("anthropic", path))
        elif b'"chat.completion.chunk"' in head:
            found.append(("openai", path))
    return found


@pytest.mark.skipif(not os.environ.get(FIXTURES_ENV), reason=f"{FIXTURES_ENV} names no folder of SDK fixtures")
def test_the_sdks_recorded_streams() -> None:
    root = Path(os.environ[FIXTURES_ENV])
    found = recorded_streams(root)
    assert found, f"no stream of either format under {root}"
    differing = []
    for kind, path in found:
        data = path.read_bytes()
        for piece in (0, 7):
            expected, got = oracle.sdk(kind, data, piece), oracle.ours(kind, data, piece)
            if got != expected:
                differing.append(f"{path.relative_to(root)} (pieces of {piece or 'all'}): sdk {expected}, ours {got}")
    print(f"{len(found)} recorded streams read alike: "
          f"{sum(k == 'anthropic' for k, _ in found)} Anthropic, {sum(k == 'openai' for k, _ in found)} OpenAI")
    assert not differing, "\n".join(differing)
