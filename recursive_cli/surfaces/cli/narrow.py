"""The command line's tree, built for the one command a process runs.

typer turns the whole app into click objects on every invocation: each command, each of its
parameters (typer's type descriptors, inspected signatures, help panels), 12 commands and
groups of ~20 options each. A `recursive run` needs only `run`: `narrowed` gives typer an
app that has the root (its callback: `--version`, `-h`) and the one command or group that
the first word names, nothing else, so everything below that word parses, validates, shows
its help and reports its errors exactly as in the whole tree. Anything else — no command
word, an option first, an unknown word (whose error lists or suggests the commands) — gets
the whole app.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import typer


def command_names(app: typer.Typer) -> dict[str, tuple[str, int]] | None:
    """Each top-level name → (`commands` or `groups`, its index); None when a name is not plain
    (a group added without one merges its commands into the root: no narrowing then)."""
    names: dict[str, tuple[str, int]] = {}
    for index, info in enumerate(app.registered_commands):
        name = info.name if isinstance(info.name, str) else None
        if name is None and info.callback is not None:
            name = info.callback.__name__.lower().replace("_", "-")  # typer's get_command_name
        if name is None:
            return None
        names[name] = ("commands", index)
    for index, group in enumerate(app.registered_groups):
        if not isinstance(group.name, str):
            return None
        names[group.name] = ("groups", index)
    return names


def narrowed(app: typer.Typer, args: Sequence[str]) -> typer.Typer:
    """`app` with only the command or group `args[0]` names (the whole `app` otherwise)."""
    if not args or args[0].startswith("-") or (app.registered_callback is None and app.info.callback is None):
        return app  # (without a root callback one command would become the root itself)
    names = command_names(app)
    found = names.get(args[0]) if names is not None else None
    if found is None:
        return app
    kind, index = found
    narrow = copy.copy(app)  # the same info, callback and settings; only the lists differ
    narrow.registered_commands = [app.registered_commands[index]] if kind == "commands" else []
    narrow.registered_groups = [app.registered_groups[index]] if kind == "groups" else []
    return narrow
