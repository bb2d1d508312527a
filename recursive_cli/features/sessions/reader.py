"""Loading a session: parse `transcript.jsonl` leniently and rebuild the conversation exactly.

Loading is one linear pass over the lines. A torn last line (the writer was killed mid-write)
is ignored and other corrupt lines are skipped, each with a warning; only a missing transcript
or one from a newer schema is an error. `repair_orphans` then answers every tool call that
never got a result, so the provider never sees an unpaired call.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import TypeAdapter, ValidationError
from pydantic_core import SchemaValidator

from ...core.budget import Spent
from ...core.kernel import INTERRUPTED_RESULT
from ...core.messages import Message, ToolCall, Usage
from ...core.pricing import Price, PriceTable
from ..compaction import RECORD_TYPE as COMPACTION_RECORD
from ..compaction import apply_record as apply_compaction_record
from .meta import META_FILE, SessionMeta, newer_schema_message, read_meta
from .records import (
    SCHEMA_VERSION,
    ExtraRecord,
    KnownRecord,
    MessageRecord,
    RepairRecord,
    SessionHeader,
    SessionReadError,
    SessionSchemaError,
    TranscriptRecord,
    TurnEndRecord,
    TurnStartRecord,
    now_iso,
    parse_record,
)
from .writer import TRANSCRIPT_FILE

MAX_LINE_WARNINGS = 10
_SMALL_TRANSCRIPT = 4096  # `lost_conversation` reads a transcript this small to look for a message
# A transcript this big (some 2,000 messages) is kept out of later garbage collections.
FREEZE_BYTES = 1 << 20
_WHITESPACE = frozenset(b" \t\n\r\x0b\x0c")  # what bytes.isspace() counts as blank


@dataclass
class LoadedSession:
    """A session read back from disk."""

    folder: Path
    meta: SessionMeta
    messages: list[Message]  # the conversation without the system prompt, repairs in place
    turns: int  # how many turns were started; the next turn is turns + 1
    warnings: list[str] = field(default_factory=list)
    records: list[TranscriptRecord] = field(default_factory=list)  # every valid line, in order

    @property
    def transcript_path(self) -> Path:
        return self.folder / TRANSCRIPT_FILE


def load_session(folder: Path, prices: PriceTable | None = None) -> LoadedSession:
    """Read the session in `folder`; SessionReadError if it has no transcript or meta.json.
    `prices`: the user's configured prices, for the steps of a killed turn that meta lacks."""
    path = folder / TRANSCRIPT_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if not (folder / META_FILE).exists():
            raise SessionReadError(f"session {folder.name} has no transcript ({path})") from None
        data = b""  # it stopped between writing meta.json and the transcript: nothing said yet
    except OSError as exc:
        raise SessionReadError(f"cannot read {path}: {exc.strerror or exc}") from None
    with _gc_paused(freeze=len(data) >= FREEZE_BYTES):
        records, warnings = parse_transcript(data, folder.name)
        meta = _meta_or_rebuilt(folder, records, warnings)
        _check_messages(folder, meta, data, records, warnings)
        messages, turns = _conversation(records, warnings)
        if meta.status == "running":  # killed, or still running: meta may lag the transcript
            _catch_up(meta, records, prices or {})
    return LoadedSession(folder, meta, messages, turns, warnings, records)


@contextlib.contextmanager
def _gc_paused(freeze: bool = False) -> Iterator[None]:
    """Pause the cyclic GC while records are built: its full collections would rescan every
    record made so far, making big loads superlinear. With `freeze`, what was built (and
    everything older) then moves to the collector's permanent generation, so the collections
    of the rest of the run (imports, the runtime, every step) never walk the loaded session
    again: 100k messages are millions of objects, and rescanning them was most of a resume.
    The collector is left as it was found, on success and on error alike."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        if freeze:
            gc.freeze()
    finally:
        if was_enabled:
            gc.enable()


def lost_conversation(folder: Path, meta: SessionMeta) -> str | None:
    """Why the session's conversation is gone although meta.json counts messages, or None.

    Cheap enough for `sessions list`: only a missing, empty or header-sized transcript is read.
    """
    if meta.messages <= 0:
        return None
    path = folder / TRANSCRIPT_FILE
    try:
        size = path.stat().st_size
        data = path.read_bytes() if size <= _SMALL_TRANSCRIPT else b""
    except FileNotFoundError:
        return _lost_message(meta, "is missing")
    except OSError:
        return None  # unreadable: load_session says why
    if size > _SMALL_TRANSCRIPT:
        return None
    if not data.strip():
        return _lost_message(meta, "is empty")
    try:
        records, _ = parse_transcript(data, meta.id)
    except SessionReadError:
        return None  # a newer schema: load_session says so
    held = any(isinstance(record, MessageRecord) for record in records)
    return None if held else _lost_message(meta, "holds no message")


def _lost_message(meta: SessionMeta, state: str) -> str:
    return f"{TRANSCRIPT_FILE} {state} but {META_FILE} counts {meta.messages} messages"


def _check_messages(folder: Path, meta: SessionMeta, data: bytes, records: list[TranscriptRecord],
                    warnings: list[str]) -> None:
    """Refuse a session whose transcript lost every message meta.json counts; warn when it
    lost some (a resume then continues from what is left)."""
    saved = sum(1 for record in records if isinstance(record, MessageRecord))
    if saved == 0 and meta.messages > 0:
        state = "is missing" if not (folder / TRANSCRIPT_FILE).exists() else (
            "is empty" if not data.strip() else "holds no message")
        raise SessionReadError(
            f"session {meta.id} lost its conversation: {_lost_message(meta, state)}; it is not "
            f"continued as a new one (put {TRANSCRIPT_FILE} back from a backup, or remove the "
            f"session with `recursive sessions rm {meta.id}`)")
    if saved < meta.messages:
        warnings.append(f"{TRANSCRIPT_FILE} holds {saved} messages but {META_FILE} counts "
                        f"{meta.messages}: {meta.messages - saved} were lost")


def _meta_or_rebuilt(folder: Path, records: list[TranscriptRecord], warnings: list[str]) -> SessionMeta:
    """meta.json, or — when a crash came between the transcript's header and it — one rebuilt
    from the header (the settings then come from the resuming command)."""
    if (folder / META_FILE).exists() or not records or not isinstance(records[0], SessionHeader):
        return read_meta(folder)
    header = records[0]
    warnings.append(f"session {header.id} has no {META_FILE}; rebuilt it from the transcript")
    return SessionMeta(id=header.id, workspace=header.workspace, created=header.created)


def parse_transcript(data: bytes, session_id: str) -> tuple[list[TranscriptRecord], list[str]]:
    """The valid records of a transcript and one warning per problem; raises on a newer schema.

    Each line goes straight to the validator of the known records (the hot loop of a resume);
    only a line it refuses takes `parse_record`'s slower path (other record types, escaped
    surrogates) and, failing that, becomes a warning.
    """
    first_end = data.find(b"\n")
    _check_schema(data if first_end < 0 else data[:first_end], session_id)
    end = len(data)  # the blank lines at the end are no torn last line
    while end and data[end - 1] in _WHITESPACE:
        end -= 1
    last = data.count(b"\n", 0, end) if end else -1  # the index of the last line that is not blank
    records: list[TranscriptRecord] = []
    corrupt: list[str] = []
    warnings: list[str] = []
    validate, append = _known_validator().validate_json, records.append
    # One line at a time (each with its b"\n", which JSON takes as whitespace): a list of all
    # of them would hold the whole transcript a second time.
    for index, line in enumerate(io.BytesIO(data)):
        if line.isspace():
            continue
        try:
            append(validate(line))
            continue
        except ValidationError:
            pass
        try:
            append(parse_record(line))
        except ValueError as exc:
            if index == last:
                size = len(line.rstrip(b"\n"))
                warnings.append(f"ignored a torn last line in {TRANSCRIPT_FILE} ({size} bytes): "
                                "the run that wrote it stopped mid-write")
            else:
                corrupt.append(f"line {index + 1} of {TRANSCRIPT_FILE} is corrupt and was skipped "
                               f"({_short(exc)})")
    if records and not isinstance(records[0], SessionHeader):
        warnings.insert(0, f"{TRANSCRIPT_FILE} does not start with a session header")
    return records, _capped(corrupt) + warnings


def _check_schema(first_line: bytes, session_id: str) -> None:
    """Refuse a transcript whose header says it was written by a newer schema."""
    try:
        header = json.loads(first_line)
    except ValueError:
        return
    if isinstance(header, dict) and header.get("type") == "session":
        version = header.get("schema_version")
        if isinstance(version, int) and version > SCHEMA_VERSION:
            raise SessionSchemaError(newer_schema_message(str(header.get("id") or session_id), version))


@functools.cache
def _known_validator() -> SchemaValidator:
    """The core validator of the known record types (no per-line wrapper)."""
    return TypeAdapter(KnownRecord).validator  # type: ignore[return-value]


def _short(exc: ValueError) -> str:
    return str(exc).splitlines()[0][:120]


def _capped(warnings: list[str]) -> list[str]:
    if len(warnings) <= MAX_LINE_WARNINGS:
        return warnings
    more = len(warnings) - MAX_LINE_WARNINGS
    return warnings[:MAX_LINE_WARNINGS] + [f"{more} more corrupt lines were skipped"]


def _conversation(records: list[TranscriptRecord], warnings: list[str]) -> tuple[list[Message], int]:
    """The messages in order with recorded repairs placed, and the number of turns started."""
    messages: list[Message] = []
    repairs: dict[str, str] = {}
    # Rewound turns count too: numbering goes on after a `checkpoints restore`.
    turns = max((r.turn for r in records if isinstance(r, TurnStartRecord)), default=0)
    unsaved: TurnStartRecord | None = None  # a started turn whose prompt message is not seen yet
    for record in _not_rewound(records):
        if isinstance(record, MessageRecord) and record.message.role != "system":
            # (the system prompt is never kept: it is rebuilt on resume)
            if unsaved is not None and record.message.role != "user":
                messages.append(_lost_prompt(unsaved, warnings))
            unsaved = None
            messages.append(record.message)
        elif isinstance(record, TurnStartRecord):
            if unsaved is not None:
                messages.append(_lost_prompt(unsaved, warnings))
            # An empty prompt is a turn that carried on (resume with no prompt): none to restore.
            unsaved = record if record.prompt else None
        elif isinstance(record, RepairRecord):
            repairs[record.tool_call_id] = record.content
        elif isinstance(record, ExtraRecord) and record.type == COMPACTION_RECORD:
            messages = _compacted(messages, repairs, record, warnings)
    if unsaved is not None:
        messages.append(_lost_prompt(unsaved, warnings))

    def recorded_repair(call: ToolCall) -> Message | None:
        content = repairs.pop(call.id, None)
        return None if content is None else Message.tool_result(call, content, is_error=True)

    paired, _, dropped = pair_tool_results(messages, recorded_repair)
    warnings.extend(f"dropped a tool result for unknown tool call {m.tool_call_id!r}" for m in dropped)
    return paired, turns


def _not_rewound(records: list[TranscriptRecord]) -> list[TranscriptRecord]:
    """The records without the turns a `rewind` record took back: `{"type": "rewind", "turn": N}`
    (written by `checkpoints restore`) drops every record of turns ≥ N written before it
    (messages, turn starts, repairs, compactions)."""
    if not any(record.type == "rewind" for record in records):
        return records
    kept: list[TranscriptRecord] = []
    for record in records:
        rewind_to = _turn_of(record) if record.type == "rewind" else None
        if rewind_to is None:
            kept.append(record)
        else:
            kept = [r for r in kept if (_turn_of(r) or 0) < rewind_to]
    return kept


def _turn_of(record: TranscriptRecord) -> int | None:
    """The turn a record belongs to, when it says."""
    if isinstance(record, ExtraRecord):
        turn = record.fields().get("turn")
        return turn if isinstance(turn, int) else None
    return getattr(record, "turn", None)


def _compacted(messages: list[Message], repairs: dict[str, str], record: ExtraRecord,
               warnings: list[str]) -> list[Message]:
    """The conversation after a `compaction` record: its summary, then the messages it kept.

    The runtime compacted a conversation whose calls were all answered (repairs included), so
    the repairs seen so far are put in place before the record's count is applied.
    """
    def recorded_repair(call: ToolCall) -> Message | None:
        content = repairs.pop(call.id, None)
        return None if content is None else Message.tool_result(call, content, is_error=True)

    paired, _, _ = pair_tool_results(messages, recorded_repair)
    try:
        return apply_compaction_record(paired, record.fields())
    except ValueError as exc:
        warnings.append(f"ignored a compaction record: {exc}")
        return paired


def _lost_prompt(start: TurnStartRecord, warnings: list[str]) -> Message:
    """The user message of a turn killed between its `turn_start` record and its prompt's record."""
    warnings.append(f"restored the prompt of turn {start.turn} from its turn_start record")
    return Message.user(start.prompt)


def _catch_up(meta: SessionMeta, records: list[TranscriptRecord], prices: PriceTable) -> None:
    """Add what a run killed mid-turn did after its last turn end to meta's totals.

    Meta totals are saved at turn ends only, so the steps after the last `turn_end` record
    are missing; they must still count (toward --max-cost above all) when the session resumes.
    """
    turns = messages = tail_steps = 0
    tail_usage = Usage()
    total_cost: float | None = meta.cost_usd if meta.steps else 0.0  # 0.0: nothing spent yet
    for record in records:
        if isinstance(record, MessageRecord):
            messages += 1
            if record.message.role == "assistant":
                tail_steps += 1
                tail_usage = tail_usage + (record.message.usage or Usage())
        elif isinstance(record, TurnStartRecord):
            turns += 1
        elif isinstance(record, TurnEndRecord):
            tail_steps, tail_usage, total_cost = 0, Usage(), record.cost_usd
    meta.turns, meta.messages = max(meta.turns, turns), max(meta.messages, messages)
    if tail_steps:  # their cost was never written: priced as the budget prices (one function)
        saved = Spent(usage=meta.usage, cost=total_cost or 0.0, cost_known=total_cost is not None)
        spent = saved.plus(tail_usage, Price(meta.model, prices)(tail_usage))
        meta.steps += tail_steps
        meta.usage, meta.cost_usd = spent.usage, spent.total_cost


def pair_tool_results(messages: list[Message], fill: Callable[[ToolCall], Message | None]
                      ) -> tuple[list[Message], list[Message], list[Message]]:
    """Give each unanswered tool call `fill(call)` right after its message's existing results.

    Returns (conversation, the messages `fill` added, the tool results dropped because no
    open call of the assistant message before them has their id). One pass, linear.
    """
    out: list[Message] = []
    added: list[Message] = []
    dropped: list[Message] = []
    pending: dict[str, ToolCall] = {}
    keep = out.append
    for message in messages:
        role = message.role
        if role == "tool":
            if pending.pop(message.tool_call_id or "", None) is None:
                dropped.append(message)
            else:
                keep(message)
            continue
        if pending:
            _close(pending, fill, out, added)
        keep(message)
        if role == "assistant" and message.tool_calls:
            pending = {call.id: call for call in message.tool_calls}
    _close(pending, fill, out, added)
    return out, added, dropped


def _close(pending: dict[str, ToolCall], fill: Callable[[ToolCall], Message | None],
           out: list[Message], added: list[Message]) -> None:
    """Answer the calls still open, in the order the model made them."""
    for call in pending.values():
        result = fill(call)
        if result is not None:
            out.append(result)
            added.append(result)
    pending.clear()


def repair_orphans(messages: list[Message]) -> tuple[list[Message], list[Message]]:
    """(the conversation with a synthetic error result for every unanswered call, those results).

    Tool results with no matching call are dropped too; `load_session` warns about them.
    """
    def synthetic(call: ToolCall) -> Message:
        return Message.tool_result(call, INTERRUPTED_RESULT, is_error=True)

    repaired, added, _ = pair_tool_results(messages, synthetic)
    return repaired, added


def repair_record(message: Message, turn: int) -> RepairRecord:
    """The `repair` record that stores a synthetic result from `repair_orphans`."""
    return RepairRecord(turn=turn, tool_call_id=message.tool_call_id or "", content=message.content,
                        time=now_iso())
