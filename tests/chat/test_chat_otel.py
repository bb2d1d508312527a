"""`recursive chat --otel` on a real terminal: the interactive session is one trace, a turn span
per exchange, sent when the session ends (tests/telemetry/collector.py is the collector)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from chatkit import Chat
from clitools import write_script
from telemetry.collector import OtlpReceiver

Open = Callable[..., Chat]


def test_an_interactive_session_is_one_trace_of_its_turns(open_chat: Open, tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.json", [{"text": "The first answer."}, {"text": "The second answer."}])
    with OtlpReceiver() as receiver:
        chat = open_chat("chat", "--otel", "--provider", "scripted", "--script", str(script),
                         env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        chat.prompt()
        chat.exchange("hello there", "The first answer.")
        chat.exchange("and then?", "The second answer.")
        assert chat.leave() == 0
    names = sorted(span.name for span in receiver.spans())
    assert names == ["chat scripted", "chat scripted", "invoke_agent recursive", "turn 1", "turn 2"]
    [root] = [span for span in receiver.spans() if span.name == "invoke_agent recursive"]
    turns = [span for span in receiver.spans() if span.name.startswith("turn")]
    assert {turn.span.parent_span_id for turn in turns} == {root.span.span_id}
    assert "OpenTelemetry" not in chat.seen
