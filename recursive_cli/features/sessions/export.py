"""Sessions for people and other programs: `sessions export` (jsonl, json, md, atif) and `sessions show`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from ...core.messages import Message, ToolCall
from ...core.values import as_json, parse
from ...core.wording import counted
from .reader import LoadedSession, rewound_turns
from .records import ExtraRecord, MessageRecord, RepairRecord

EXPORT_FORMATS: tuple[str, ...] = ("jsonl", "json", "md", "atif")
RESULT_LIMIT = 2000
ARGS_LIMIT = 200
REWOUND = " (rewound: no longer in the conversation)"


def export_session(loaded: LoadedSession, fmt: str, agent_version: str = "unknown") -> str:
    """The session in `fmt`: `jsonl` (the transcript verbatim), `json`, `md` or `atif` (atif.py,
    which names recursive's `agent_version`)."""
    if fmt == "jsonl":
        return loaded.transcript_path.read_bytes().decode("utf-8", errors="replace")
    if fmt == "json":
        return _json(loaded)
    if fmt == "md":
        return _markdown(loaded)
    if fmt == "atif":
        from .atif import export_atif

        return export_atif(loaded, agent_version)
    raise ValueError(f"unknown export format {fmt!r}: use one of {', '.join(EXPORT_FORMATS)}")


def _json(loaded: LoadedSession) -> str:
    document = {
        "meta": as_json(loaded.meta),
        "turns": loaded.turns,
        "messages": [as_json(message) for message in loaded.messages],
        "warnings": loaded.warnings,
    }
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def _turns(loaded: LoadedSession) -> Iterator[tuple[int, Message]]:
    """(turn, message) in file order, repairs included as the tool results they stand for."""
    calls: dict[str, ToolCall] = {}
    for record in loaded.records:
        if isinstance(record, MessageRecord) and record.message.role != "system":
            calls.update((call.id, call) for call in record.message.tool_calls)
            yield record.turn, record.message
        elif isinstance(record, RepairRecord):
            call = calls.get(record.tool_call_id, ToolCall(id=record.tool_call_id, name="?"))
            yield record.turn, Message.tool_result(call, record.content, is_error=True)


def _markdown(loaded: LoadedSession) -> str:
    meta = loaded.meta
    table = ["| | |", "|---|---|"] + [f"| {name} | {_cell(value)} |" for name, value in _meta_rows(loaded)]
    blocks = [f"# {_one_line(meta.title) or 'Session ' + meta.id}", "\n".join(table)]
    current = 0
    rewound = rewound_turns(loaded.records)
    for turn, message in _turns(loaded):
        if turn != current:
            current = turn
            blocks.append(f"## Turn {turn}" + (REWOUND if turn in rewound else ""))
        blocks += _markdown_message(message)
    return "\n\n".join(blocks) + "\n"


def _meta_rows(loaded: LoadedSession) -> list[tuple[str, str]]:
    meta = loaded.meta
    usage = meta.usage
    cost = "unknown" if meta.cost_usd is None else f"${meta.cost_usd:.4f}"
    return [
        ("session", meta.id), ("workspace", meta.workspace), ("mode", meta.mode),
        ("model", f"{meta.model} ({meta.provider})"), ("status", meta.status),
        ("finish reason", meta.finish_reason or ""), ("created", meta.created),
        ("updated", meta.updated), ("turns", str(loaded.turns)), ("steps", str(meta.steps)),
        ("tokens", f"{usage.input_tokens} in, {usage.output_tokens} out"), ("cost", cost),
        ("permissions", " ".join([meta.permission_mode, *("allow " + r for r in meta.allow),
                                  *("deny " + r for r in meta.deny)])),
    ]


def _markdown_message(message: Message) -> list[str]:
    """The message as Markdown blocks (paragraphs and code blocks)."""
    if message.role == "user":
        return ["**User**", message.content]
    if message.role == "tool":
        label = "error" if message.is_error else "result"
        return [f"**Tool {label}** `{message.tool_name or '?'}`", _fence(_truncate(message.content), "")]
    blocks = ["**Assistant**", message.content] if message.content else []
    for call in message.tool_calls:
        blocks += [f"**Tool call** `{call.name}`", _fence(_pretty(call.arguments), "json")]
    return blocks


def render_conversation(loaded: LoadedSession) -> str:
    """The conversation as plain text, for `sessions show`."""
    meta = loaded.meta
    lines = [f"session {meta.id} · {meta.mode} · {meta.model} · {meta.status} · "
             f"{counted(loaded.turns, 'turn')} · {meta.workspace}"]
    lines += [f"warning: {warning}" for warning in loaded.warnings]
    worktree = meta.state.get("worktree")  # (-w: features/worktrees' part of the state)
    if isinstance(worktree, dict) and worktree.get("branch"):
        lines.append(f"worktree: branch {worktree['branch']} in {worktree.get('path', '?')} "
                     f"(of {worktree.get('repo', '?')})")
    if meta.imported is not None:
        lines.append(f"imported from {meta.imported.source} at {meta.imported.at}")
        lines += [f"  kept out: {line}" for line in meta.imported.dropped]
    current = 0
    rewound = rewound_turns(loaded.records)
    subagents = _subagent_messages(loaded)
    for turn, message in _turns(loaded):
        if turn != current:
            current = turn
            lines += ["", f"── turn {turn}{REWOUND if turn in rewound else ''} ──"]
        lines += _plain_message(message)
        for call in message.tool_calls:  # (a task call: its subagent's conversation, under it)
            for sub in subagents.get(call.id, []):
                lines += [_indent(line, "    │ ") if line else "    │" for line in _plain_message(sub)]
    return "\n".join(lines) + "\n"


def _subagent_messages(loaded: LoadedSession) -> dict[str, list[Message]]:
    """The messages of each subagent (`subagent_message` records), by the task call that ran it."""
    found: dict[str, list[Message]] = {}
    for record in loaded.records:
        if isinstance(record, ExtraRecord) and record.type == "subagent_message":
            fields = record.fields()
            try:
                message = parse(Message, fields.get("message"))
            except ValueError:
                continue
            found.setdefault(str(fields.get("parent_tool_use_id")), []).append(message)
    return found


def _plain_message(message: Message) -> list[str]:
    if message.role == "user":
        return ["", "user: " + message.content]
    if message.role == "tool":
        mark = " (error)" if message.is_error else ""
        return [f"  ← {message.tool_name or '?'}{mark}:", _indent(_truncate(message.content), "    ")]
    lines = ["", "assistant: " + message.content] if message.content else []
    return lines + [f"  → {call.name} {_truncate(_arguments_line(call.arguments), ARGS_LIMIT)}"
                    for call in message.tool_calls]


def _arguments_line(arguments: str) -> str:
    """A call's arguments as one line of JSON, their text as written: non-ASCII as it is (not
    `\\u` escapes), the spaces inside strings (a file's indentation) kept."""
    try:
        return json.dumps(json.loads(arguments or "{}"), ensure_ascii=False)
    except ValueError:
        return _one_line(arguments)


def _truncate(text: str, limit: int = RESULT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit} more characters)"


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), ensure_ascii=False, indent=2)
    except ValueError:
        return arguments


def _fence(text: str, lang: str) -> str:
    """A code block whose fence is longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines()) or prefix


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _cell(text: str) -> str:
    return _one_line(text).replace("|", "\\|")
