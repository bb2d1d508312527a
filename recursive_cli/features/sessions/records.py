"""The lines of `transcript.jsonl`: one pydantic model per record `type`, and the session errors.

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

# (No `from __future__ import annotations`: pydantic would compile and evaluate every field's
# annotation from its text when the models are made at import; issue 16.)

import datetime
import functools
import json
from typing import Annotated, Any, Literal, Union, cast

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

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

SCHEMA_VERSION = 1


def now_iso() -> str:
    """The current UTC time as ISO-8601 with milliseconds (readable by Python 3.10's fromisoformat)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


class SessionHeader(BaseModel):
    """The first line of every transcript."""

    type: Literal["session"] = "session"
    schema_version: int = SCHEMA_VERSION
    id: str
    created: str
    workspace: str


class MessageRecord(BaseModel):
    """One conversation message (user prompt, assistant reply or tool result)."""

    type: Literal["message"] = "message"
    turn: int
    message: Message
    time: str
    uuid: str | None = None  # its id in Claude's stream and transcript lines (older records: none)


class TurnStartRecord(BaseModel):
    type: Literal["turn_start"] = "turn_start"
    turn: int
    prompt: str
    time: str


class TurnEndRecord(BaseModel):
    """The end of a turn; `cost_usd` is the session's total so far (None when unknown)."""

    type: Literal["turn_end"] = "turn_end"
    turn: int
    finish_reason: str
    steps: int
    usage: Usage
    cost_usd: float | None = None
    detail: str = ""
    time: str


class RepairRecord(BaseModel):
    """A synthetic result given on resume to a tool call that never got one."""

    model_config = ConfigDict(defer_build=True)  # built when first made (resume)

    type: Literal["repair"] = "repair"
    turn: int
    tool_call_id: str
    content: str
    time: str = ""


class ExtraRecord(BaseModel):
    """A record of any other type, kept with all its fields; ignored for the conversation."""

    model_config = ConfigDict(extra="allow", defer_build=True)  # built when first made

    type: str

    def fields(self) -> dict[str, Any]:
        """The record's fields other than `type`."""
        return dict(self.__pydantic_extra__ or {})


KnownRecord = Annotated[
    Union[SessionHeader, MessageRecord, TurnStartRecord, TurnEndRecord, RepairRecord],
    Field(discriminator="type"),
]
TranscriptRecord = Union[SessionHeader, MessageRecord, TurnStartRecord, TurnEndRecord,
                         RepairRecord, ExtraRecord]



@functools.cache
def _known() -> TypeAdapter[Any]:
    """The known records' adapter, made when a transcript is first read (a new run writes only)."""
    return TypeAdapter(KnownRecord)


_BY_TYPE: dict[str, type[BaseModel]] = {
    "session": SessionHeader, "message": MessageRecord, "turn_start": TurnStartRecord,
    "turn_end": TurnEndRecord, "repair": RepairRecord,
}


def dump_record(record: BaseModel) -> bytes:
    """One transcript line, newline included; None fields of known records are left out."""
    compact = not isinstance(record, ExtraRecord)  # other records keep their fields verbatim
    try:
        return record.model_dump_json(exclude_none=compact).encode() + b"\n"
    except ValueError:
        # Lone surrogates (undecodable tool output) cannot be UTF-8: escape them as JSON does.
        return json.dumps(record.model_dump(exclude_none=compact)).encode() + b"\n"


def parse_record(line: bytes | str) -> TranscriptRecord:
    """The record on one line; raises ValueError when it is not a valid record."""
    try:
        return cast(TranscriptRecord, _known().validate_json(line))
    except ValidationError:
        pass
    data = json.loads(line)  # slow path: escaped surrogates, or a type this version does not know
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise ValueError("not a JSON object with a string 'type'")
    model = _BY_TYPE.get(data["type"], ExtraRecord)
    return cast(TranscriptRecord, model.model_validate(data))
