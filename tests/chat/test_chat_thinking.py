"""The model's thinking in an interactive session: streamed dimmed and in italics, left on the
screen above the answer, and sent back with its signature on the next turn."""

from __future__ import annotations

from collections.abc import Callable

from chatkit import Chat
from fakeserver import FakeLLMServer

Open = Callable[..., Chat]


def test_thinking_is_shown_dimmed_above_the_answer_and_sent_back(open_chat: Open) -> None:
    with FakeLLMServer([{"thinking": [{"thinking": "Weighing the options first.", "signature": "EqChat=="}],
                         "text": "The first answer."},
                        {"text": "The second answer."}]) as server:
        chat = open_chat("chat", "--provider", "anthropic", "--api-base", server.anthropic_base_url,
                         "-m", "claude-opus-4-6", "--effort", "low", env={"RECURSIVE_API_KEY": "sk-chat-thinking"})
        chat.prompt()
        chat.say("hello there")
        chat.expect("The first answer.")
        chat.prompt()
        chat.say("and then?")
        chat.expect("The second answer.")
        chat.prompt()
        assert chat.leave() == 0
    assert "\x1b[2;3mWeighing the options first." in chat.seen  # dim italic
    assert chat.seen.index("Weighing the options first.") < chat.seen.index("The first answer.")
    second = server.requests[1].body
    assert second["thinking"] == {"type": "adaptive"} and second["output_config"] == {"effort": "low"}
    assert second["messages"][1]["content"][0] == {"type": "thinking", "thinking": "Weighing the options first.",
                                                   "signature": "EqChat=="}
