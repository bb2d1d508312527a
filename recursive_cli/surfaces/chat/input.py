"""The input line of the interactive session (prompt_toolkit).

History is kept per workspace in `$RECURSIVE_HOME/history/`. Enter sends; Alt-Enter, or a
line ending in `\\`, starts a new line; a paste keeps its newlines. Tab completes slash
commands at the start of the line and workspace paths after `@`. Ctrl-C clears a line that
has text, and on an empty line raises KeyboardInterrupt; Ctrl-D on an empty line raises
EOFError.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

PROMPT = "› "
MAX_PATHS = 200


def history_path(home: Path, workspace: Path) -> Path:
    """Where the input history of `workspace` is kept under `home`."""
    digest = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]
    return home / "history" / f"{digest}.txt"


class ChatCompleter(Completer):
    """Slash commands at the start of the line, workspace paths after `@`."""

    def __init__(self, commands: Mapping[str, str], workspace: Path) -> None:
        self.commands = commands  # name (with its slash) → one line of help
        self.workspace = workspace

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before:
            for name, help_text in self.commands.items():
                if name.startswith(before):
                    yield Completion(name, start_position=-len(before), display_meta=help_text)
            return
        word = document.get_word_before_cursor(WORD=True)
        if word.startswith("@"):
            yield from self._paths(word)

    def _paths(self, word: str) -> Iterable[Completion]:
        typed = word[1:]
        folder, _, start = typed.rpartition("/")
        base = (self.workspace / folder).resolve()
        if not base.is_relative_to(self.workspace.resolve()):
            return
        try:
            names = sorted(os.listdir(base))
        except OSError:
            return
        shown = 0
        for name in names:
            if not name.startswith(start) or name == ".git" or (name.startswith(".") and not start):
                continue
            is_dir = (base / name).is_dir()
            path = f"{folder}/{name}" if folder else name
            yield Completion("@" + path + ("/" if is_dir else ""), start_position=-len(word),
                             display=name + ("/" if is_dir else ""))
            shown += 1
            if shown >= MAX_PATHS:
                return


def _bindings() -> KeyBindings:
    keys = KeyBindings()

    @keys.add("enter")
    def _send(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        state = buffer.complete_state
        if state is not None and state.current_completion is not None:
            buffer.apply_completion(state.current_completion)
        elif buffer.document.text_before_cursor.endswith("\\") and buffer.document.is_cursor_at_the_end:
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    @keys.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt())

    return keys


class InputLine:
    """The prompt, read once per message; `toolbar()` gives the status line under it."""

    def __init__(self, home: Path | None, workspace: Path, commands: Mapping[str, str],
                 toolbar: Callable[[], str]) -> None:
        history: History = InMemoryHistory()
        if home is not None:
            path = history_path(home, workspace)
            try:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                history = FileHistory(str(path))
            except OSError:
                pass  # no history across sessions, but the session goes on
        self._toolbar = toolbar
        self.session: PromptSession[str] = PromptSession(
            history=history, multiline=True, key_bindings=_bindings(),
            completer=ChatCompleter(commands, workspace), complete_while_typing=True,
            reserve_space_for_menu=4, prompt_continuation="  ", enable_suspend=True,
            bottom_toolbar=self._bottom)

    def _bottom(self) -> FormattedText:
        return FormattedText([("class:bottom-toolbar.text", " " + self._toolbar())])

    async def read(self, default: str = "") -> str:
        """One message; KeyboardInterrupt for Ctrl-C on an empty line, EOFError for Ctrl-D."""
        return await self.session.prompt_async(PROMPT, default=default, handle_sigint=False)
