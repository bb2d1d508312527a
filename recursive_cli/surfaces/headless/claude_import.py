"""A session only Claude's transcript holds, made one of ours so `--resume ID` can go on with it.

Claude's Agent SDKs resume sessions recursive never ran here: one their `fork_session()` wrote,
one a `SessionStore` holds (the SDK writes it into a `CLAUDE_CONFIG_DIR` of its own before it
starts the CLI), one Claude Code itself ran. When `--resume ID` names no session of ours but
the workspace's Claude transcript `ID.jsonl` exists (claude_view.py), its conversation is
imported as session ID: the chain of entries from the newest message back to the first, the
prompts as user messages, each reply (Claude writes a reply's blocks as entries of their own,
sharing `message.id`) as one assistant message with its tool calls under our names, and every
call's result after it. The messages keep their uuids, so the transcript and our session
name them alike. Only the conversation comes over: no settings, budgets or permissions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...core.events import MessageAdded, TurnStarted
from ...core.messages import Message, ToolCall
from ...features.sessions.meta import SessionMeta, make_title
from ...features.sessions.records import ExtraRecord, SessionReadError
from ...features.sessions.store import SessionStore
from ...features.sessions.writer import JsonlSessionWriter
from ...tools.claude_names import ClaudeView, our_name
from .claude_view import view_path

Entry = dict[str, Any]


def import_claude_session(store: SessionStore, session_id: str, workspace: Path) -> bool:
    """Make session `session_id` from the workspace's Claude transcript of it; False when there
    is none. SessionReadError for one that holds no conversation."""
    path = view_path(workspace, session_id)
    try:
        data = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    messages = conversation(_entries(data), ClaudeView(workspace))
    if not messages:
        raise SessionReadError(f"Claude's transcript {path} holds no conversation to resume")
    prompt = next((m.content for _, m in messages if m.role == "user"), "")
    meta = SessionMeta(id=session_id, workspace=str(workspace), title=make_title(prompt), status="interrupted")
    with JsonlSessionWriter.create(store.folder(session_id), meta) as writer:
        writer.write_record(ExtraRecord(type="claude_import", source=str(path)))
        turn = 0
        for uid, message in messages:
            if message.role == "user":
                turn += 1
                writer.emit(TurnStarted(turn=turn, prompt=message.content))
            writer.emit(MessageAdded(message=message, turn=max(turn, 1), uuid=uid))
        writer.update_meta(status="interrupted")
    return True


def _entries(data: str) -> list[Entry]:
    entries = []
    for line in data.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # (a torn or corrupt line, as the SDKs skip it)
        if isinstance(entry, dict) and isinstance(entry.get("uuid"), str):
            entries.append(entry)
    return entries


def conversation(entries: list[Entry], view: ClaudeView) -> list[tuple[str, Message]]:
    """The main chain's messages with their uuids, each tool call followed by its result."""
    by_uuid = {entry["uuid"]: entry for entry in entries}
    talk = [e for e in entries if e.get("type") in ("user", "assistant") and not e.get("isSidechain")
            and not e.get("isMeta")]
    if not talk:
        return []
    chain: list[Entry] = []
    seen: set[str] = set()
    entry: Entry | None = talk[-1]
    while entry is not None and entry["uuid"] not in seen:
        seen.add(entry["uuid"])
        chain.append(entry)
        parent = entry.get("parentUuid")
        entry = by_uuid.get(parent) if isinstance(parent, str) else None
    chain.reverse()
    results = {block.get("tool_use_id"): (e["uuid"], block) for e in entries if e.get("type") == "user"
               for block in _blocks(e) if block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str)}
    replies: dict[str, list[Entry]] = {}  # a reply's entries (one per block), by its message id
    for part in entries:
        if part.get("type") == "assistant":
            replies.setdefault(_reply_id(part), []).append(part)
    out: list[tuple[str, Message]] = []
    replies_done: set[str] = set()
    for entry in chain:
        if entry.get("type") not in ("user", "assistant") or entry.get("isSidechain"):
            continue  # (Claude's attachments and system entries are on the chain too)
        if entry.get("type") == "user":
            text = _text(_blocks(entry))
            if text and not entry.get("isMeta"):
                out.append((entry["uuid"], Message.user(text)))
            continue
        reply_id = _reply_id(entry)
        if reply_id in replies_done:
            continue
        replies_done.add(reply_id)
        parts = replies[reply_id]
        blocks = [block for part in parts for block in _blocks(part)]
        calls = tuple(_call(block, view) for block in blocks if block.get("type") == "tool_use")
        out.append((parts[-1]["uuid"], Message(role="assistant", content=_text(blocks), tool_calls=calls)))
        for call in calls:
            if call.id in results:
                uid, block = results[call.id]
                content = block.get("content")
                text = content if isinstance(content, str) else _text(content if isinstance(content, list) else [])
                out.append((uid, Message.tool_result(call, text, is_error=bool(block.get("is_error")))))
    return out


def _reply_id(entry: Entry) -> str:
    message = entry.get("message")
    reply = message.get("id") if isinstance(message, dict) else None
    return reply if isinstance(reply, str) and reply else str(entry["uuid"])


def _blocks(entry: Entry) -> list[dict[str, Any]]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []


def _text(blocks: list[dict[str, Any]]) -> str:
    return "\n\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text" and b.get("text"))


def _call(block: dict[str, Any], view: ClaudeView) -> ToolCall:
    """A Claude `tool_use` block as our call (Bash {command} → run_shell {command})."""
    ours = our_name(str(block.get("name", "")))
    given = block.get("input")
    shown: dict[str, Any] = given if isinstance(given, dict) else {}
    return ToolCall(id=str(block.get("id", "")), name=ours, arguments=json.dumps(view.take_input(ours, shown, {})))
