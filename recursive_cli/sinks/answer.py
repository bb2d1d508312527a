"""The final answer on stdout for `-o text`: rendered Markdown on a terminal, the plain text when piped."""

from __future__ import annotations

from typing import TextIO

from ..core.events import AgentEvent, RunFinished


class TextAnswerSink:
    """Writes the run's answer to `out` when it finishes successfully with a non-empty answer."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def emit(self, event: AgentEvent) -> None:
        if isinstance(event, RunFinished) and event.exit_code == 0 and event.result:
            write_answer(self._out, event.result)


def write_answer(out: TextIO, text: str) -> None:
    """`text` on `out`: Markdown rendered by rich on a TTY, else as it is, with one final newline."""
    if out.isatty():
        from rich.console import Console
        from rich.markdown import Markdown

        Console(file=out).print(Markdown(text))
        return
    out.write(text.rstrip("\n") + "\n")
    out.flush()
