"""The checkpoint tools' arguments, validated with pydantic when the model calls one of them
(their schema is written out in `tools.py`, so a run that does not call them loads none)."""

from pydantic import BaseModel, Field


class ListArgs(BaseModel):
    turn: int | None = Field(None, ge=1, description="Only this turn: list the files it changed.")


class DiffArgs(ListArgs):
    turn: int | None = Field(None, ge=1, description="The turn to show (default: the current one).")
