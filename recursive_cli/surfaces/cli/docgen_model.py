"""The CLI as plain records (commands, options, arguments) that the man page and completions render."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, NamedTuple

ValueKind = Literal["none", "text", "choice", "file", "dir", "session"]
"""What a value is, for completion: a flag takes none; paths complete as files or dirs."""



@dataclass(frozen=True)
class OptionDoc:
    """One option of one command."""

    names: tuple[str, ...]
    takes_value: bool
    metavar: str
    kind: ValueKind
    choices: tuple[str, ...]
    help: str
    panel: str | None
    repeatable: bool
    is_help: bool = False


@dataclass(frozen=True)
class ArgumentDoc:
    """One positional argument of one command; a variadic one may hold several values."""

    name: str
    usage: str
    kind: ValueKind
    rest_kind: ValueKind
    choices: tuple[str, ...]
    help: str
    required: bool
    variadic: bool


class Slot(NamedTuple):
    """Positional values `first`..`last` (None: no end; from 0) that complete alike."""

    first: int
    last: int | None
    kind: ValueKind
    choices: tuple[str, ...]
    label: str
    required: bool


@dataclass(frozen=True)
class CommandDoc:
    """A command or group; `path` starts with the program name, e.g. ("recursive", "run")."""

    path: tuple[str, ...]
    summary: str
    help: str
    options: tuple[OptionDoc, ...]
    arguments: tuple[ArgumentDoc, ...]
    examples: tuple[str, ...]
    subcommands: tuple[CommandDoc, ...]

    @property
    def name(self) -> str:
        """The full command line that runs this command, e.g. "recursive sessions show"."""
        return " ".join(self.path)

    @property
    def key(self) -> str:
        """The subcommand words after the program name ("" for the program itself)."""
        return " ".join(self.path[1:])

    def slots(self) -> list[Slot]:
        """The positional values by kind: "[SESSION] [PROMPT]..." is a session, then text."""
        slots: list[Slot] = []
        for index, arg in enumerate(self.arguments):
            labels = [w.lower() for w in re.findall(r"[A-Za-z][\w-]*", arg.usage) or [arg.name]]
            whole = arg.variadic and arg.rest_kind == arg.kind
            slots.append(Slot(index, None if whole else index, arg.kind, arg.choices, labels[0],
                              arg.required))
            if arg.variadic and not whole:
                slots.append(Slot(index + 1, None, arg.rest_kind, arg.choices, labels[-1], False))
        return slots

    def walk(self) -> Iterator[CommandDoc]:
        """This command, then every command below it, depth first in definition order."""
        yield self
        for sub in self.subcommands:
            yield from sub.walk()
