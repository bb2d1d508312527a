"""Claude Code's transcript of a headless session, beside our own: what the Agent SDKs read.

Claude's SDKs find a session in `$CLAUDE_CONFIG_DIR/projects/<project>/<session id>.jsonl`
(`~/.claude` without the variable; `<project>` is the working folder's real path with every
character other than a letter or digit made `-`): `list_sessions()`, `get_session_info()`,
`get_session_messages()` read it, and a `SessionStore` gets it line by line as
`transcript_mirror` frames on stdout (`--session-mirror`). So a headless session whose id is a
UUID (every new `recursive -p` session's is) also keeps that file: one entry per message (the
prompt, each reply, each tool result) linked by `parentUuid`, each with the `uuid` its stream
line had, and a `last-prompt` entry at each turn's end (the SDK's `summary`). A subagent's
messages go to `<session id>/subagents/agent-<agent id>.jsonl` beside it (a sidechain), with an
`agent-<agent id>.meta.json` naming the Agent call that started it (`toolUseId`; `finished`
once it ended, written aside and renamed so a crash never leaves half of it): what the
SDK's `list_subagents()` and `get_subagent_messages()` read; a SessionStore gets that file's
lines too, after an `agent_metadata` entry holding the same.

Our session (`$RECURSIVE_HOME/sessions/ID/`) stays the record: this file is a view made from
the same events, written the same way (one whole line per `os.write` on an append-only file,
fsynced at turn end), never parsed by us. A view that cannot be written is warned of once and
given up; the run and its session go on. A headless resume appends to its view (from the
message the conversation goes on from, so a truncating resume is a branch, as Claude writes
it), after the messages the view lacks: all of them when it has none (a fork, a session from
before the view), those of turns that `recursive resume` ran (which writes no view).
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from uuid import uuid4

from ... import __version__
from ...core.events import AgentEvent, MessageAdded, SubagentFinished, SubagentMessage, SubagentStarted, TurnFinished
from ...core.messages import Message, Usage
from ...features.sessions.claude_paths import claude_config_dir, project_folder_name, view_path
from ...features.sessions.records import MessageRecord
from ...features.sessions.writer import ends_torn
from ...sinks.claude_stream import Presenter, as_shown, assistant_content, claude_usage, tool_result_block

Entry = dict[str, Any]
__all__ = ["ClaudeTranscript", "claude_config_dir", "open_view", "project_folder_name", "view_path"]


def _now() -> str:
    """Claude's timestamps: UTC, milliseconds, `Z`."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class ClaudeTranscript:
    """Appends a headless session's messages to its Claude-layout view (an event sink).

    `model` names the model of the reply being recorded, `present` shows tool calls under
    Claude's names (as the stream does), `parent` is the entry the next one follows (None for a
    new session), `mirror` takes each `transcript_mirror` frame (`--session-mirror`)."""

    def __init__(self, path: Path, session_id: str, cwd: str, *, model: Callable[[], str],
                 present: Presenter = as_shown, parent: str | None = None,
                 mirror: Callable[[Entry], None] | None = None) -> None:
        self.path = path
        self.session_id = session_id
        self._cwd = cwd
        self._model = model
        self._present = present
        self._parent = parent
        self._mirror = mirror
        self._fd: int | None = None
        self._failed = False
        self._callers: dict[str, str] = {}  # tool call id → the uuid of the reply that made it
        self._prompt = ""  # the last prompt (a `last-prompt` entry's text)
        self._tasks: dict[str, SubagentStarted] = {}  # subagent id → how it was started
        self._sidechains: dict[str, str | None] = {}  # subagent id → the uuid of its last entry
        self._metas: dict[str, Entry] = {}  # subagent id → its `.meta.json`, while it runs
        # The next prompt as the client wrote it, when the model gets more (a hook's context,
        # the --json-schema instruction): the transcript shows what was typed, as Claude's does.
        self.next_prompt: str | None = None

    @property
    def exists(self) -> bool:
        return self.path.exists()

    def emit(self, event: AgentEvent) -> None:
        if isinstance(event, MessageAdded):
            entry = self._entry(event.message, event.uuid, self._model())
            if entry is not None:
                self._append([entry])
        elif isinstance(event, SubagentStarted):
            self._tasks[event.task_id] = event
        elif isinstance(event, SubagentMessage):
            self._sidechain(event)
        elif isinstance(event, SubagentFinished):
            self._finished(event)
        elif isinstance(event, TurnFinished) and self._parent is not None and self._prompt:
            self._append([{"type": "last-prompt", "lastPrompt": self._prompt, "leafUuid": self._parent,
                           "sessionId": self.session_id}])
            self._sync()

    def backfill(self, records: Iterable[MessageRecord], model: str) -> None:
        """Write the entries of a conversation recorded before this view (a fork, an older
        session), so that the view holds the whole of it."""
        entries = [entry for record in records
                   if (entry := self._entry(record.message, record.uuid or str(uuid4()), model)) is not None]
        if entries and self._prompt:
            entries.append({"type": "last-prompt", "lastPrompt": self._prompt, "leafUuid": self._parent,
                            "sessionId": self.session_id})
        self._append(entries)
        self._sync()

    def restarted(self, session_id: str) -> ClaudeTranscript:
        """The view of the new session `/clear` starts (this one is closed, as it was)."""
        self.close()
        return ClaudeTranscript(view_path(Path(self._cwd), session_id), session_id, self._cwd, model=self._model,
                                present=self._present, mirror=self._mirror)

    def close(self) -> None:
        if self._fd is not None:
            self._sync()
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError:
                pass

    # -- entries ---------------------------------------------------------------------------

    def _entry(self, message: Message, uid: str, model: str) -> Entry | None:
        """The entry of one message, linked to the one before it; None for a system message."""
        if message.role == "user":
            typed, self.next_prompt = self.next_prompt, None
            text = message.content if typed is None else typed
            self._prompt = text.replace("\n", " ").strip()
            body: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": text}}
        elif message.role == "assistant":
            for call in message.tool_calls:
                self._callers[call.id] = uid
            body = self._reply(message, uid, model)
        elif message.role == "tool":
            body = {"type": "user", "message": {"role": "user", "content": [tool_result_block(message)]}}
            caller = self._callers.pop(message.tool_call_id or "", None)
            if caller is not None:
                body["sourceToolAssistantUUID"] = caller
        else:
            return None
        entry = {"parentUuid": self._parent, "isSidechain": False, **body, "uuid": uid,
                 "timestamp": _now(), "userType": "external", "entrypoint": "recursive",
                 "cwd": self._cwd, "sessionId": self.session_id, "version": __version__}
        self._parent = uid
        return entry

    def _reply(self, message: Message, uid: str, model: str) -> Entry:
        return {"type": "assistant", "message": {
            "id": f"msg_{uid.replace('-', '')[:24]}", "type": "message", "role": "assistant",
            "model": model, "content": assistant_content(message, self._present),
            "stop_reason": "tool_use" if message.tool_calls else "end_turn", "stop_sequence": None,
            "usage": claude_usage(message.usage or Usage())}}

    def _sidechain(self, event: SubagentMessage) -> None:
        """A subagent's message, in its own transcript under the session's folder; its first
        also writes the `.meta.json` that ties it to the Agent call (and mirrors it)."""
        message, uid = event.message, str(uuid4())
        if message.role == "user":
            body: Entry = {"type": "user", "message": {"role": "user", "content": message.content}}
        elif message.role == "assistant":
            body = self._reply(message, uid, event.model)
        elif message.role == "tool":
            body = {"type": "user", "message": {"role": "user", "content": [tool_result_block(message)]}}
        else:
            return
        path = self.path.with_suffix("") / "subagents" / f"agent-{event.agent_id}.jsonl"
        first = event.agent_id not in self._sidechains
        started = self._tasks.get(event.agent_id)
        meta = {"agentType": event.subagent_type, "description": started.description if started else "",
                "toolUseId": event.parent_tool_use_id, "model": event.model}
        entry = {"parentUuid": self._sidechains.get(event.agent_id), "isSidechain": True, "agentId": event.agent_id,
                 **body, "uuid": uid, "timestamp": _now(), "userType": "external", "entrypoint": "recursive",
                 "cwd": self._cwd, "sessionId": self.session_id, "version": __version__}
        self._sidechains[event.agent_id] = uid
        if self._mirror is not None:
            entries = [{"type": "agent_metadata", **meta}] if first else []
            self._mirror({"type": "transcript_mirror", "filePath": str(path), "entries": [*entries, entry]})
        if first and not self._replace(path.with_name(f"agent-{event.agent_id}.meta.json"), meta):
            return
        if first:
            self._metas[event.agent_id] = meta
        self._write(path, json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n", "a")

    def _finished(self, event: SubagentFinished) -> None:
        """A subagent ended: its `.meta.json` says `finished`, as Claude Code's does."""
        self._tasks.pop(event.task_id, None)
        self._sidechains.pop(event.task_id, None)
        meta = self._metas.pop(event.task_id, None)
        if meta is not None:
            path = self.path.with_suffix("") / "subagents" / f"agent-{event.task_id}.meta.json"
            self._replace(path, {**meta, "finished": True})

    def _replace(self, path: Path, value: Entry) -> bool:
        """Write a small JSON file whole: aside, then renamed over it (a crash leaves the old
        one or the new one, never half of one)."""
        aside = path.with_name(path.name + ".tmp")
        if not self._write(aside, json.dumps(value) + "\n", "w"):
            return False
        try:
            os.replace(aside, path)
        except OSError as exc:
            self._give_up(exc)
            return False
        return True

    def _write(self, path: Path, text: str, mode: str) -> bool:
        """Write (or append) one small file of the view whole; False (and the view given up) when it cannot be."""
        if self._failed:
            return False
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with path.open(mode, encoding="utf-8", errors="surrogatepass") as out:
                out.write(text)
        except OSError as exc:
            self._give_up(exc)
            return False
        return True

    # -- the file ----------------------------------------------------------------------------

    def _append(self, entries: list[Entry]) -> None:
        if not entries:
            return
        data = "".join(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n" for entry in entries)
        if self._mirror is not None:
            self._mirror({"type": "transcript_mirror", "filePath": str(self.path), "entries": entries})
        fd = self._open()
        if fd is None:
            return
        try:
            view = memoryview(data.encode("utf-8", "surrogatepass"))
            while view:
                view = view[os.write(fd, view):]
        except OSError as exc:
            self._give_up(exc)

    def _open(self) -> int | None:
        if self._fd is None and not self._failed:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                torn = self.path.exists() and ends_torn(self.path)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                if torn:  # a torn last line must not swallow the next entry
                    os.write(self._fd, b"\n")
            except OSError as exc:
                self._give_up(exc)
        return self._fd

    def _sync(self) -> None:
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            except OSError as exc:
                self._give_up(exc)

    def _give_up(self, exc: OSError) -> None:
        """Stop writing the view (warned of once); the session itself is unaffected."""
        if not self._failed:
            sys.stderr.write(f"warning: cannot write Claude's transcript {self.path}: {exc.strerror or exc}; "
                             "the session is kept, but Claude's SDKs will not see the rest of it\n")
        self._failed = True
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError:
                pass


def open_view(session_id: str, workspace: Path, records: list[MessageRecord] | None, *, model: Callable[[], str],
              saved_model: str = "", present: Presenter = as_shown,
              mirror: Callable[[Entry], None] | None = None) -> ClaudeTranscript | None:
    """The view of a headless session, when its id is one Claude's SDKs take (a UUID). A resumed
    session (`records`: the message records of the conversation it goes on with) continues its
    view from its last message, after writing first the messages the view lacks (all of them
    when it has none: a fork, an older session; those of turns run by `recursive resume`)."""
    from ...features.sessions.ids import is_uuid

    if not is_uuid(session_id):
        return None
    path = view_path(workspace, session_id)
    records = [record for record in records or [] if record.message.role != "system"]
    missing, parent = _missing(path, records)
    transcript = ClaudeTranscript(path, session_id, str(workspace), model=model, present=present,
                                  parent=parent, mirror=mirror)
    if missing:
        transcript.backfill(missing, saved_model)
    return transcript


def _missing(path: Path, records: list[MessageRecord]) -> tuple[list[MessageRecord], str | None]:
    """The records after the last one the view at `path` holds, and that one's uuid (the view is
    only searched for the uuids, not parsed)."""
    try:
        data = path.read_bytes()
    except OSError:
        return records, None
    for index in range(len(records) - 1, -1, -1):
        uid = records[index].uuid
        if uid and f'"uuid":"{uid}"'.encode() in data:
            return records[index + 1:], uid
    return [], None  # (records from before uuids: the view goes on from its own last entry)
