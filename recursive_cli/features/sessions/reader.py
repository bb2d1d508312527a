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
from typing import TYPE_CHECKING

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
    MessageRecord,
    RepairRecord,
    SessionHeader,
    SessionReadError,
    SessionSchemaError,
    TranscriptRecord,
    TurnEndRecord,
    TurnStartRecord,
    known_records,
    now_iso,
    parse_record,
)
from .writer import TRANSCRIPT_FILE

if TYPE_CHECKING:
    from pydantic_core import SchemaValidator


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
        census = _census(records)
        _check_messages(folder, meta, data, census.messages, warnings)
        messages, turns = _conversation(records, warnings, census)
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


@dataclass(frozen=True)
class _Census:
    """What the rebuild needs to know of all the records before it starts."""

    messages: int  # message records
    turns: int  # the highest turn started, rewound ones included
    rewound: bool  # whether a `rewind` record is among them


def _census(records: list[TranscriptRecord]) -> _Census:
    """One pass over the records for the counts; `type() is` (the records are never subclassed)."""
    messages = 0
    turns: int | None = None
    rewound = False
    for record in records:
        kind = type(record)
        if kind is MessageRecord:
            messages += 1
        elif kind is TurnStartRecord:
            turn = record.turn  # type: ignore[union-attr]
            if turns is None or turn > turns:
                turns = turn
        elif kind is ExtraRecord and record.type == "rewind":
            rewound = True
    return _Census(messages, turns or 0, rewound)


def _check_messages(folder: Path, meta: SessionMeta, data: bytes, saved: int,
                    warnings: list[str]) -> None:
    """Refuse a session whose transcript lost every message meta.json counts (`saved`: how
    many it holds); warn when it lost some (a resume then continues from what is left)."""
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
    from pydantic import ValidationError  # (reading a transcript back: the I/O edge pydantic serves)

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
    return known_records().validator  # type: ignore[return-value]


def _short(exc: ValueError) -> str:
    return str(exc).splitlines()[0][:120]


def _capped(warnings: list[str]) -> list[str]:
    if len(warnings) <= MAX_LINE_WARNINGS:
        return warnings
    more = len(warnings) - MAX_LINE_WARNINGS
    return warnings[:MAX_LINE_WARNINGS] + [f"{more} more corrupt lines were skipped"]


def _conversation(records: list[TranscriptRecord], warnings: list[str], census: _Census | None = None
                  ) -> tuple[list[Message], int]:
    """The messages in order with recorded repairs placed, and the number of turns started.

    One pass: the messages are paired with their tool results as they are read (what
    `pair_tool_results` does), each call left unanswered kept as a hole to fill once every
    `repair` record is known. The holes no repair fills are kept on the list returned, so
    that `repair_orphans` answers them without a second pass over the conversation.
    """
    census = census or _census(records)
    turns = census.turns  # rewound turns count too: numbering goes on after a `checkpoints restore`
    repairs: dict[str, str] = {}
    out: list[Message] = []  # the conversation so far, paired, without the holes' results
    holes: list[tuple[int, ToolCall]] = []  # (where its result goes in `out`, the call)
    dropped: list[Message] = []
    pending: dict[str, ToolCall] = {}  # the calls of the last assistant message not answered yet
    keep = out.append
    unsaved: TurnStartRecord | None = None  # a started turn whose prompt message is not seen yet

    def recorded_repair(call: ToolCall) -> Message | None:
        content = repairs.pop(call.id, None)
        return None if content is None else Message.tool_result(call, content, is_error=True)

    def feed(message: Message) -> None:  # pair_tool_results's step, for the rare messages
        nonlocal pending
        if message.role == "tool":
            if pending.pop(message.tool_call_id or "", None) is None:
                dropped.append(message)
            else:
                keep(message)
            return
        if pending:
            holes.extend([(len(out), call) for call in pending.values()])
            pending = {}
        keep(message)
        if message.role == "assistant" and message.tool_calls:
            pending = {call.id: call for call in message.tool_calls}

    for record in _not_rewound(records) if census.rewound else records:
        kind = type(record)
        if kind is MessageRecord:
            message = record.message  # type: ignore[union-attr]
            role = message.role
            if role == "tool":  # (the hot path: feed() inlined)
                if unsaved is not None:
                    feed(_lost_prompt(unsaved, warnings))
                    unsaved = None
                if pending.pop(message.tool_call_id or "", None) is None:
                    dropped.append(message)
                else:
                    keep(message)
                continue
            if role == "system":  # the system prompt is never kept: it is rebuilt on resume
                continue
            if unsaved is not None and role != "user":
                feed(_lost_prompt(unsaved, warnings))
            unsaved = None
            if pending:
                holes.extend([(len(out), call) for call in pending.values()])
                pending = {}
            keep(message)
            if role == "assistant" and message.tool_calls:
                pending = {call.id: call for call in message.tool_calls}
        elif kind is TurnStartRecord:
            if unsaved is not None:
                feed(_lost_prompt(unsaved, warnings))
            # An empty prompt is a turn that carried on (resume with no prompt): none to restore.
            unsaved = record if record.prompt else None  # type: ignore[union-attr,assignment]
        elif kind is RepairRecord:
            repairs[record.tool_call_id] = record.content  # type: ignore[union-attr]
        elif kind is ExtraRecord and record.type == COMPACTION_RECORD:
            # The runtime compacted a conversation whose calls were all answered (repairs
            # included): the repairs seen so far are put in place before the record applies.
            holes.extend([(len(out), call) for call in pending.values()])
            paired, _, _ = _filled(out, holes, recorded_repair)
            try:
                compacted = apply_compaction_record(paired, record.fields())  # type: ignore[union-attr]
            except ValueError as exc:
                warnings.append(f"ignored a compaction record: {exc}")
                compacted = paired
            # Pairing starts again on what the compaction kept; the results dropped before it
            # were never warned about (the compacted conversation no longer holds them).
            out, holes, dropped, pending = [], [], [], {}
            keep = out.append
            for message in compacted:
                feed(message)
    if unsaved is not None:
        feed(_lost_prompt(unsaved, warnings))
    holes.extend([(len(out), call) for call in pending.values()])
    paired, _, orphans = _filled(out, holes, recorded_repair)
    warnings.extend(f"dropped a tool result for unknown tool call {m.tool_call_id!r}" for m in dropped)
    return _Paired(paired, orphans), turns


class _Paired(list):  # type: ignore[type-arg]
    """A conversation `load_session` paired, with the calls it left unanswered and where their
    results go, for `repair_orphans`. Its `intact` check (same length, same last message)
    guards against a list changed since; a changed one is paired again from scratch."""

    __slots__ = ("orphans", "_size", "_last")

    def __init__(self, messages: list[Message], orphans: list[tuple[int, ToolCall]]) -> None:
        super().__init__(messages)
        self.orphans = orphans
        self._size = len(messages)
        self._last = messages[-1] if messages else None

    def intact(self) -> bool:
        return len(self) == self._size and (self[-1] if self else None) is self._last


def _filled(out: list[Message], holes: list[tuple[int, ToolCall]],
            fill: Callable[[ToolCall], Message | None]
            ) -> tuple[list[Message], list[Message], list[tuple[int, ToolCall]]]:
    """`out` with `fill(call)` put in each hole, in order: (that list, the results added, the
    holes `fill` left open with their places in that list). `out` itself when no hole.

    The holes of one place are the calls of one assistant message: those left open go after
    the results given there, where pairing the list again would put them."""
    if not holes:
        return out, [], []
    result: list[Message] = []
    added: list[Message] = []
    left: list[tuple[int, ToolCall]] = []
    open_here: list[ToolCall] = []
    start = 0
    for at, call in holes:
        if at > start:
            left.extend([(len(result), open_call) for open_call in open_here])
            open_here = []
            result.extend(out[start:at])
            start = at
        message = fill(call)
        if message is None:
            open_here.append(call)
        else:
            result.append(message)
            added.append(message)
    left.extend([(len(result), open_call) for open_call in open_here])
    result.extend(out[start:])
    return result, added, left


def _not_rewound(records: list[TranscriptRecord]) -> list[TranscriptRecord]:
    """The records without the turns a `rewind` record took back: `{"type": "rewind", "turn": N}`
    (written by `checkpoints restore`) drops every record of turns ≥ N written before it
    (messages, turn starts, repairs, compactions). With `"after": UUID` (a truncating resume,
    `--resume-session-at`) it drops every record written after the message with that uuid
    instead (`turn` then names the turn after it, which is what an older reader drops)."""
    if not any(record.type == "rewind" for record in records):
        return records
    kept: list[TranscriptRecord] = []
    for record in records:
        rewind_to = _turn_of(record) if record.type == "rewind" else None
        after = record.fields().get("after") if isinstance(record, ExtraRecord) else None
        if isinstance(after, str):
            at = next((i for i in range(len(kept) - 1, -1, -1)
                       if isinstance(kept[i], MessageRecord) and kept[i].uuid == after), None)  # type: ignore[union-attr]
            kept = kept if at is None else kept[:at + 1]
        elif rewind_to is None:
            kept.append(record)
        else:
            kept = [r for r in kept if (_turn_of(r) or 0) < rewind_to]
    return kept


def kept_messages(records: list[TranscriptRecord]) -> list[MessageRecord]:
    """The message records of the conversation as it goes on (none a rewind took back)."""
    return [record for record in _not_rewound(records) if isinstance(record, MessageRecord)]


def rewound_turns(records: list[TranscriptRecord]) -> set[int]:
    """The turns a `rewind` record took back (still on disk, no longer in the conversation)."""
    kept = {_turn_of(record) for record in _not_rewound(records)}
    return {turn for record in records if (turn := _turn_of(record)) is not None and turn not in kept}


def _turn_of(record: TranscriptRecord) -> int | None:
    """The turn a record belongs to, when it says."""
    if isinstance(record, ExtraRecord):
        turn = record.fields().get("turn")
        return turn if isinstance(turn, int) else None
    return getattr(record, "turn", None)


def _lost_prompt(start: TurnStartRecord, warnings: list[str]) -> Message:
    """The user message of a turn killed between its `turn_start` record and its prompt's record."""
    warnings.append(f"restored the prompt of turn {start.turn} from its turn_start record")
    return Message.user(start.prompt)


def _catch_up(meta: SessionMeta, records: list[TranscriptRecord], prices: PriceTable) -> None:
    """Add what a run killed mid-turn did after its last turn end to meta's totals.

    Meta totals are saved at turn ends only, so the steps after the last `turn_end` record
    are missing; they must still count (toward --max-cost above all) when the session resumes.
    """
    turns = messages = 0
    tail: list[Usage | None] = []  # the usage of each assistant message since the last turn end
    total_cost: float | None = meta.cost_usd if meta.steps else 0.0  # 0.0: nothing spent yet
    for record in records:
        kind = type(record)
        if kind is MessageRecord:
            messages += 1
            message = record.message  # type: ignore[union-attr]
            if message.role == "assistant":
                tail.append(message.usage)
        elif kind is TurnStartRecord:
            turns += 1
        elif kind is TurnEndRecord:
            tail, total_cost = [], record.cost_usd  # type: ignore[union-attr]
    tail_steps = len(tail)
    used = [usage for usage in tail if usage is not None]  # summed once, not a model per step
    tail_usage = Usage(input_tokens=sum(u.input_tokens for u in used),
                       output_tokens=sum(u.output_tokens for u in used),
                       cache_read_tokens=sum(u.cache_read_tokens for u in used),
                       cache_write_tokens=sum(u.cache_write_tokens for u in used))
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
    holes: list[tuple[int, ToolCall]] = []
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
            holes.extend([(len(out), call) for call in pending.values()])
            pending = {}
        keep(message)
        if role == "assistant" and message.tool_calls:
            pending = {call.id: call for call in message.tool_calls}
    holes.extend([(len(out), call) for call in pending.values()])
    paired, added, _ = _filled(out, holes, fill)
    return paired, added, dropped


def repair_orphans(messages: list[Message]) -> tuple[list[Message], list[Message]]:
    """(the conversation with a synthetic error result for every unanswered call, those results).

    Tool results with no matching call are dropped too; `load_session` warns about them.
    """
    def synthetic(call: ToolCall) -> Message:
        return Message.tool_result(call, INTERRUPTED_RESULT, is_error=True)

    if type(messages) is _Paired and messages.intact():  # as load_session left it: no new pass
        repaired, added, _ = _filled(messages, messages.orphans, synthetic)
        return (list(repaired) if repaired is messages else repaired), added
    repaired, added, _ = pair_tool_results(messages, synthetic)
    return repaired, added


def repair_record(message: Message, turn: int) -> RepairRecord:
    """The `repair` record that stores a synthetic result from `repair_orphans`."""
    return RepairRecord(turn=turn, tool_call_id=message.tool_call_id or "", content=message.content,
                        time=now_iso())
