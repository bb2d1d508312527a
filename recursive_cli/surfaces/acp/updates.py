"""The runtime's events as ACP `session/update` notifications, and a saved conversation as the
same notifications for `session/load`.

Text and thinking stream as `agent_message_chunk` / `agent_thought_chunk` (a provider that
does not stream sends the whole reply as one chunk); each tool call is a `tool_call` (status
`pending`, with its kind, the paths it touches as `locations`, its arguments, and for an edit
the change it proposes as a `diff`) and then a `tool_call_update` (`completed` or `failed`,
with the result text, or for an edit the change it made as read back from the file);
`todo_write` is also the session's `plan`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from acp import schema

from ...core.events import (
    AgentEvent,
    MessageAdded,
    ModelRequest,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolStarted,
)
from ...core.messages import Image, Message, ToolCall

Update = Any  # one of the schema's session update models
Subject = Callable[[ToolCall], str]
Resolve = Callable[[str], "Path | None"]  # a path a tool names → where it is (None: outside the workspace)

KINDS: dict[str, schema.ToolKind] = {
    "read_file": "read", "list_dir": "search", "glob": "search", "search_files": "search",
    "write_file": "edit", "edit_file": "edit", "apply_patch": "edit",
    "run_shell": "execute", "run_background": "execute", "job_stop": "execute",
    "web_fetch": "fetch", "todo_write": "think", "exit_plan_mode": "switch_mode",
    "recall": "read", "checkpoint_list": "read", "checkpoint_diff": "read", "job_status": "read",
}
_PATH_TOOLS = frozenset({"read_file", "write_file", "edit_file", "apply_patch", "list_dir"})
_PLAN_STATUS: dict[str, schema.PlanEntryStatus] = {"pending": "pending", "in_progress": "in_progress",
                                                   "completed": "completed"}
_MAX_FILE = 1_000_000  # bytes of a file read back for a diff; a bigger one gets no diff
_MAX_TEXT = 50_000  # characters of a tool result sent to the client


def kind_of(tool: str) -> schema.ToolKind:
    """ACP's kind of one of our tools (an MCP tool's is `other`)."""
    return KINDS.get(tool, "other")


def title_of(call: ToolCall, subject: str) -> str:
    """What the client shows for a call: the tool and what it works on."""
    return f"{call.name} {subject}".strip() if len(subject) <= 200 else f"{call.name} {subject[:200]}…"


def text_block(text: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=text)


def _text_content(text: str) -> schema.ContentToolCallContent:
    if len(text) > _MAX_TEXT:
        text = text[:_MAX_TEXT] + f"\n… ({len(text) - _MAX_TEXT} more characters)"
    return schema.ContentToolCallContent(type="content", content=text_block(text))


def paths_of(call: ToolCall, subject: str, resolve: Resolve) -> list[Path]:
    """The files a call reads or changes, absolute, as its tool finds them (`apply_patch` names
    several: `a.py, b.py`); one the tool would refuse (outside the workspace) is left out."""
    if call.name not in _PATH_TOOLS or not subject:
        return []
    names = subject.split(", ") if call.name == "apply_patch" else [subject]
    return [path for path in map(resolve, names) if path is not None]


def workspace_resolver(workspace: Path) -> Resolve:
    """Paths taken as relative to `workspace` (until the sandbox's own resolver is at hand)."""
    return lambda name: Path(name) if Path(name).is_absolute() else (workspace / name).resolve()


def read_text(path: Path) -> str | None:
    """A file's text for a diff; None when it does not exist, is too big or is not text."""
    try:
        if not path.is_file() or path.stat().st_size > _MAX_FILE:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def proposed(call: ToolCall, old: str | None) -> str | None:
    """The text `write_file` / `edit_file` would leave in its file (None: not known beforehand)."""
    arguments = call.arguments_or_empty()
    if call.name == "write_file" and isinstance(arguments.get("content"), str):
        return str(arguments["content"])
    if call.name == "edit_file" and old is not None:
        before, after = arguments.get("old_string"), arguments.get("new_string")
        if isinstance(before, str) and isinstance(after, str) and before and before in old:
            return old.replace(before, after, -1 if arguments.get("replace_all") else 1)
    return None


def _diff(path: Path, old: str | None, new: str) -> schema.FileEditToolCallContent:
    return schema.FileEditToolCallContent(type="diff", path=str(path), old_text=old, new_text=new)


def _locations(call: ToolCall, paths: list[Path]) -> list[schema.ToolCallLocation] | None:
    if not paths:
        return None
    line = call.arguments_or_empty().get("offset") if call.name == "read_file" else None
    return [schema.ToolCallLocation(path=str(path), line=line if isinstance(line, int) and line > 0 else None)
            for path in paths]


def started(call: ToolCall, subject: str, resolve: Resolve, olds: dict[Path, str | None] | None = None
             ) -> schema.ToolCallStart:
    """The `tool_call` that announces a call, with the diff an edit proposes: against the file as
    it is (`olds`), or for a replayed `edit_file` between its own strings."""
    paths = paths_of(call, subject, resolve)
    content: list[Any] = []
    plan = call.arguments_or_empty().get("plan") if call.name == "exit_plan_mode" else None
    if isinstance(plan, str) and plan:
        content.append(_text_content(plan))
    olds = olds or {}
    for path in paths if kind_of(call.name) == "edit" else ():
        new = proposed(call, olds.get(path))
        if new is not None:
            content.append(_diff(path, olds.get(path), new))
        elif call.name == "edit_file":  # (the file is not at hand, as in a replay: the edit's own strings)
            arguments = call.arguments_or_empty()
            before, after = arguments.get("old_string"), arguments.get("new_string")
            if isinstance(before, str) and isinstance(after, str):
                content.append(_diff(path, before, after))
    return schema.ToolCallStart(session_update="tool_call", tool_call_id=call.id, title=title_of(call, subject),
                                kind=kind_of(call.name), status="pending", content=content or None,
                                locations=_locations(call, paths), raw_input=call.arguments_or_empty())


def as_request(start: schema.ToolCallStart) -> schema.ToolCallUpdate:
    """The call a permission request asks about (the same fields as its `tool_call`)."""
    return schema.ToolCallUpdate(tool_call_id=start.tool_call_id, title=start.title, kind=start.kind,
                                 status="pending", content=start.content, locations=start.locations,
                                 raw_input=start.raw_input)


def finished(call_id: str, result: Message | None, failed: bool, diffs: Sequence[Any] = ()) -> schema.ToolCallProgress:
    """The `tool_call_update` that closes a call: its diffs (an edit that worked) or its result."""
    content: list[Any] = list(diffs) if diffs and not failed else []
    if not content and result is not None and result.content:
        content.append(_text_content(result.content))
    return schema.ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id,
                                   status="failed" if failed else "completed", content=content or None,
                                   raw_output=result.content[:_MAX_TEXT] if result is not None else None)


def plan_of(call: ToolCall) -> schema.AgentPlanUpdate | None:
    """`todo_write`'s list as the session's plan (None when its arguments are not a list)."""
    todos = call.arguments_or_empty().get("todos")
    if not isinstance(todos, list):
        return None
    entries = []
    for todo in todos:
        if isinstance(todo, dict) and isinstance(todo.get("content"), str):
            status = _PLAN_STATUS.get(str(todo.get("status")), "pending")
            entries.append(schema.PlanEntry(content=todo["content"], priority="medium", status=status))
    return schema.AgentPlanUpdate(session_update="plan", entries=entries)


def image_block(image: Image) -> schema.ImageContentBlock:
    return schema.ImageContentBlock(type="image", mime_type=image.media_type, data=image.data)


def message_chunk(text: str) -> schema.AgentMessageChunk:
    return schema.AgentMessageChunk(session_update="agent_message_chunk", content=text_block(text))


def thought_chunk(text: str) -> schema.AgentThoughtChunk:
    return schema.AgentThoughtChunk(session_update="agent_thought_chunk", content=text_block(text))


def _thoughts(message: Message) -> str:
    return "\n\n".join(part.text for part in message.reasoning or () if part.text)


class UpdateSink:
    """An event sink that turns one session's events into its `session/update` notifications,
    sent in order by `pump` (`flush` waits until those queued so far have gone)."""

    def __init__(self, resolve: Resolve) -> None:
        self.resolve = resolve
        self._queue: asyncio.Queue[Update] = asyncio.Queue()
        self._streamed_text = False
        self._streamed_thought = False
        self._olds: dict[str, dict[Path, str | None]] = {}  # a running edit's files, as they were
        self._starts: dict[str, schema.ToolCallStart] = {}
        self._results: dict[str, Message] = {}
        self._calls: dict[str, ToolCall] = {}
        self._last_of_kind: dict[str, schema.ToolCallStart] = {}

    def put(self, update: Update) -> None:
        self._queue.put_nowait(update)

    async def pump(self, send: Callable[[Update], Awaitable[None]]) -> None:
        """Send the updates as they come, until cancelled."""
        while True:
            update = await self._queue.get()
            try:
                with contextlib.suppress(ConnectionError):
                    await send(update)
            finally:
                self._queue.task_done()

    async def flush(self) -> None:
        await self._queue.join()

    def start_of(self, call_id: str) -> schema.ToolCallStart | None:
        """The `tool_call` sent for a running call (for its permission request)."""
        return self._starts.get(call_id)

    def last_started_kind(self, kind: str) -> schema.ToolCallStart | None:
        """The latest call of that kind this session made (`switch_mode`: the plan presented)."""
        return self._last_of_kind.get(kind)

    def last_started(self, tool: str) -> schema.ToolCallStart | None:
        """The latest running call of `tool` (the permission hook is told the tool's name)."""
        for call_id in reversed(self._starts):
            if self._calls[call_id].name == tool:
                return self._starts[call_id]
        return None

    def emit(self, event: AgentEvent) -> None:
        if isinstance(event, ModelRequest):
            self._streamed_text = self._streamed_thought = False
        elif isinstance(event, TextDelta) and event.text:
            self._streamed_text = True
            self.put(message_chunk(event.text))
        elif isinstance(event, ThinkingDelta) and event.text:
            self._streamed_thought = True
            self.put(thought_chunk(event.text))
        elif isinstance(event, MessageAdded):
            self._message(event.message)
        elif isinstance(event, ToolStarted):
            self._tool_started(event.call, event.subject)
        elif isinstance(event, ToolFinished):
            self._tool_finished(event.call, event.is_error)

    def _message(self, message: Message) -> None:
        if message.role == "tool" and message.tool_call_id:
            self._results[message.tool_call_id] = message
        elif message.role == "assistant":  # (what was not streamed: a provider without streaming)
            thoughts = _thoughts(message)
            if thoughts and not self._streamed_thought:
                self.put(thought_chunk(thoughts))
            if message.content and not self._streamed_text:
                self.put(message_chunk(message.content))

    def _tool_started(self, call: ToolCall, subject: str) -> None:
        olds = None
        if kind_of(call.name) == "edit":
            olds = {path: read_text(path) for path in paths_of(call, subject, self.resolve)}
            self._olds[call.id] = olds
        start = started(call, subject, self.resolve, olds)
        self._starts[call.id], self._calls[call.id] = start, call
        self._last_of_kind[str(start.kind)] = start
        self.put(start)

    def _tool_finished(self, call: ToolCall, is_error: bool) -> None:
        olds = self._olds.pop(call.id, None)
        self._starts.pop(call.id, None)
        self._calls.pop(call.id, None)
        diffs = []
        for path, old in (olds or {}).items():
            new = read_text(path)
            if new is not None and new != old:
                diffs.append(_diff(path, old, new))
        self.put(finished(call.id, self._results.pop(call.id, None), is_error, diffs))
        if call.name == "todo_write" and not is_error:
            plan = plan_of(call)
            if plan is not None:
                self.put(plan)


def history(messages: Sequence[Message], subject: Subject, resolve: Resolve) -> list[Update]:
    """A saved conversation as the updates that show it again (`session/load`): the user's
    messages, the agent's thoughts and answers, each tool call and its result."""
    updates: list[Update] = []
    for message in messages:
        if message.role == "user":
            if message.content:
                updates.append(schema.UserMessageChunk(session_update="user_message_chunk",
                                                       content=text_block(message.content)))
            updates.extend(schema.UserMessageChunk(session_update="user_message_chunk", content=image_block(image))
                           for image in message.images or ())
        elif message.role == "assistant":
            thoughts = _thoughts(message)
            if thoughts:
                updates.append(thought_chunk(thoughts))
            if message.content:
                updates.append(message_chunk(message.content))
            updates.extend(started(call, subject(call), resolve) for call in message.tool_calls)
        elif message.role == "tool" and message.tool_call_id:
            updates.append(finished(message.tool_call_id, message, message.is_error))
    return updates
