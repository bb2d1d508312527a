"""The checkpoint tools' arguments, validated with msgspec when the model calls one of them.

Their schema is written out in `tools.py` (tests/test_values.py checks it against these
classes), so a run that does not call the tools imports neither this module nor msgspec: the
tools are on every run with checkpoints, and msgspec's import (it pulls in `typing_extensions`)
would add ~30M instructions to a one-step run's ~880M (callgrind, 2026-12-03)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

TurnNumber = Annotated[int, Meta(ge=1)]


@dataclass(slots=True, kw_only=True)
class ListArgs:
    turn: Annotated[TurnNumber | None, Meta(description="Only this turn: list the files it changed.")] = None


@dataclass(slots=True, kw_only=True)
class DiffArgs(ListArgs):
    turn: Annotated[TurnNumber | None, Meta(description="The turn to show (default: the current one).")] = None
