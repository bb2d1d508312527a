"""The lines of `transcript.jsonl`: one dataclass per record `type`, and the session errors.

Every line is one JSON object with a literal `type`. The first line is the `session` header;
then `message`, `turn_start`, `turn_end` and `repair` records, which rebuild the conversation.
Any other type (`goal_evaluation`, `wakeup`, `background_job`, `compaction`, `checkpoint`,
`rewind`, ...) is kept as an `ExtraRecord` with its fields as they are, so later features can
add records without breaking older readers.

Errors raised by the sessions package:

    SessionError
     ├── SessionWriteError       the session folder or its files cannot be written
     ├── SessionExistsError      a new session's folder already holds a transcript
     ├── SessionReadError        the transcript or meta.json is missing or unreadable
     │    └── SessionSchemaError written by a newer version of recursive
     ├── SessionInUseError       another live process holds the session's lock
     ├── SessionNotFoundError    no session has that id or id prefix
     └── AmbiguousSessionError   an id prefix matches several sessions
"""

from __future__ import annotations

import datetime
import functools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Union, cast

from ...core.errors import (  # noqa: F401 (re-exported: defined in errors.py, imported from here)
    AmbiguousSessionError,
    SessionError,
    SessionExistsError,
    SessionInUseError,
    SessionNotFoundError,
    SessionReadError,
    SessionSchemaError,
    SessionWriteError,
)
from ...core.messages import Message, Usage
from ...core.values import as_json, dumps, parse

if TYPE_CHECKING:
    from pydantic import TypeAdapter

SCHEMA_VERSION = 1


def now_iso() -> str:
    """The current UTC time as ISO-8601 with milliseconds (readable by Python 3.10's fromisoformat)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


@dataclass(slots=True, kw_only=True)
class SessionHeader:
    """The first line of every transcript."""

    type: Literal["session"] = "session"
    schema_version: int = SCHEMA_VERSION
    id: str
    created: str
    workspace: str


@dataclass(slots=True, kw_only=True)
class MessageRecord:
    """One conversation message (user prompt, assistant reply or tool result)."""

    type: Literal["message"] = "message"
    turn: int
    message: Message
    time: str
    uuid: str | None = None  # its id in Claude's stream and transcript lines (older records: none)


@dataclass(slots=True, kw_only=True)
class TurnStartRecord:
    """The start of a turn, with the prompt it was given."""

    type: Literal["turn_start"] = "turn_start"
    turn: int
    prompt: str
    time: str


@dataclass(slots=True, kw_only=True)
class TurnEndRecord:
    """The end of a turn; `cost_usd` is the session's total so far (None when unknown)."""

    type: Literal["turn_end"] = "turn_end"
    turn: int
    finish_reason: str
    steps: int
    usage: Usage
    cost_usd: float | None = None
    detail: str = ""
    time: str


@dataclass(slots=True, kw_only=True)
class RepairRecord:
    """A synthetic result given on resume to a tool call that never got one."""

    type: Literal["repair"] = "repair"
    turn: int
    tool_call_id: str
    content: str
    time: str = ""


class ExtraRecord:
    """A record of any other type, kept with all its fields (read as attributes); ignored for
    the conversation."""

    __slots__ = ("type", "_fields")

    def __init__(self, type: str, **fields: Any) -> None:  # noqa: A002 (the record's own key)
        self.type = type
        self._fields = fields

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(name) from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExtraRecord) and (self.type, self._fields) == (other.type, other._fields)

    def __repr__(self) -> str:
        return f"ExtraRecord(type={self.type!r}, **{self._fields!r})"

    def fields(self) -> dict[str, Any]:
        """The record's fields other than `type`."""
        return dict(self._fields)


KnownRecord = Union[SessionHeader, MessageRecord, TurnStartRecord, TurnEndRecord, RepairRecord]
TranscriptRecord = Union[SessionHeader, MessageRecord, TurnStartRecord, TurnEndRecord,
                         RepairRecord, ExtraRecord]


@functools.cache
def known_records() -> TypeAdapter[Any]:
    """The known records' validator (pydantic, by `type`), made when a transcript is first
    read: a new run writes only."""
    from typing import Annotated

    from pydantic import Field, TypeAdapter

    return TypeAdapter(Annotated[KnownRecord, Field(discriminator="type")])


_BY_TYPE: dict[str, type] = {
    "session": SessionHeader, "message": MessageRecord, "turn_start": TurnStartRecord,
    "turn_end": TurnEndRecord, "repair": RepairRecord,
}


def dump_record(record: Any) -> bytes:
    """One transcript line, newline included; None fields of known records are left out."""
    try:
        if isinstance(record, ExtraRecord):  # other records keep their fields verbatim
            return json.dumps({"type": record.type, **as_json(record.fields())}, ensure_ascii=False,
                              separators=(",", ":")).encode() + b"\n"
        return dumps(record, exclude_none=True).encode() + b"\n"
    except ValueError:
        # Lone surrogates (undecodable tool output) cannot be UTF-8: escape them as JSON does.
        data = {"type": record.type, **record.fields()} if isinstance(record, ExtraRecord) else record
        return json.dumps(as_json(data, exclude_none=not isinstance(record, ExtraRecord))).encode() + b"\n"


def parse_record(line: bytes | str) -> TranscriptRecord:
    """The record on one line; raises ValueError when it is not a valid record."""
    from pydantic import ValidationError

    try:
        return cast(TranscriptRecord, known_records().validate_json(line))
    except ValidationError:
        pass
    data = json.loads(line)  # slow path: escaped surrogates, or a type this version does not know
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise ValueError("not a JSON object with a string 'type'")
    kind = _BY_TYPE.get(data["type"])
    if kind is None:
        return ExtraRecord(**data)
    return cast(TranscriptRecord, parse(kind, data))
