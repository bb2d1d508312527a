"""The final answer on stdout for `-o text`: rendered Markdown on a terminal, the plain text when piped."""

from __future__ import annotations

import json
from typing import TextIO

from ..core.events import AgentEvent, RunFinished


class TextAnswerSink:
    """Writes the run's final answer to `out` whenever there is one, whatever the exit code:
    a run that answered after a denial, a refusal or an unmet goal still shows what the model
    said; the exit code tells the outcome."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def emit(self, event: AgentEvent) -> None:
        if isinstance(event, RunFinished):
            text = answer_text(event)
            if text:
                write_answer(self._out, text, markdown=event.structured_output is None)


def answer_text(event: RunFinished) -> str:
    """What the answer is on stdout and in `--output-last-message`: the structured output as
    JSON when `--output-schema` asked for one, else the model's last text ("" when none)."""
    if event.structured_output is not None:
        return json.dumps(event.structured_output, ensure_ascii=False, indent=2)
    return event.answer


def write_answer(out: TextIO, text: str, markdown: bool = True) -> None:
    """`text` on `out`: Markdown rendered by rich on a TTY, else as it is, with one final newline."""
    if markdown and out.isatty():
        from rich.console import Console
        from rich.markdown import Markdown

        Console(file=out).print(Markdown(text))
        return
    out.write(text.rstrip("\n") + "\n")
    out.flush()
