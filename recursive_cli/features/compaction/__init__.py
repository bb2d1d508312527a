"""Compaction: keep a long conversation inside the model's context window.

Before each model call the kernel asks the runtime's `Compactor` whether the conversation is
near the window (estimated from the last request's reported `input_tokens` plus about one
token per four bytes added since, counted as the provider encodes each message for its
request — JSON structure, ids and escaping included, which outweigh the text of a small tool
call). If it is, the older messages are summarised by one
provider call without tools and replaced by that summary, as one user message right after
the system prompt. The system prompt is never touched, the most recent turns are kept
verbatim, and the cut is always made before a user or assistant message, so a tool call is
never separated from its result.

The kept turns that are over drop their thinking (`Message.reasoning`), as the API allows: only
the turn under way, a tool-use loop, must send its signed thinking blocks back; the replaced
turns' thinking goes with them, as the summariser never sees it.

Each compaction is recorded in the session as a `compaction` record (the summary and how many
messages it replaced); `sessions.reader` applies it again when the session is loaded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from ...core.events import CompactionDone
from ...core.interrupt import Interrupted
from ...core.kernel import side_call
from ...core.messages import Message
from ...core.provider import ProviderError, RetryNotice
from ...core.tool import cap_text

if TYPE_CHECKING:
    from ...core.kernel import TurnContext

RECORD_TYPE = "compaction"
DEFAULT_CONTEXT_WINDOW = 128_000
# Longest prefix first: the first match wins.
CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576), ("gpt-5", 400_000), ("gpt-4o", 128_000), ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192), ("gpt-3.5", 16_385), ("o1", 200_000), ("o3", 200_000), ("o4", 200_000),
    ("claude", 200_000), ("gemini", 1_000_000), ("deepseek", 128_000), ("qwen", 32_768),
    ("llama", 128_000), ("mistral", 32_000),
)
COMPACT_AT = 0.8  # share of the window at which to compact (room is left for the answer)
KEEP_SHARE = 0.3  # share of the window the verbatim recent messages may take
KEEP_TURNS = 3  # at most this many recent turns are kept verbatim
MIN_REPLACED = 2  # fewer messages than this are not worth a summary
MESSAGE_CHARS = 4_000  # each message as the summariser sees it
RETRY_AFTER_CALLS = 5  # after a failed summary, model calls to wait before trying again
SUMMARY_HEADER = ("[Summary of the earlier conversation, written when it was compacted to fit "
                  "the context window]\n\n")
SUMMARY_SYSTEM = """\
You compress the earlier part of a coding agent's conversation so that the agent can carry on \
without it. Write a summary, in plain text or short bullet lists, with no preamble, covering:
- the user's task and every explicit request or constraint (quote the most recent one verbatim);
- what was done: files read or changed, commands run and their results;
- what was learned: key facts, errors and decisions, with exact names, paths and numbers;
- background jobs started and wakeups scheduled, if any;
- the current state and what remains to be done."""


class Compaction(NamedTuple):
    """What one compaction did."""

    summary: str
    replaced: int  # messages after the system prompt that the summary replaced
    kept: int  # messages kept verbatim after it
    tokens_before: int
    tokens_after: int


def context_window(model: str) -> int:
    """The context window of `model` in tokens, from a small table (128k when unknown)."""
    name = model.lower().rsplit("/", 1)[-1]
    for prefix, size in CONTEXT_WINDOWS:
        if name.startswith(prefix):
            return size
    return DEFAULT_CONTEXT_WINDOW


WireSize = Callable[[Message], int]  # bytes a message takes in a request body


def json_size(message: Message) -> int:
    """Bytes of `message` as compact Chat Completions JSON (with its comma): about what any
    provider sends for it, for providers that cannot say (`wire_size`)."""
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [{"id": call.id, "type": "function",
                               "function": {"name": call.name, "arguments": call.arguments}}
                              for call in message.tool_calls]
    if message.tool_call_id is not None:
        wire["tool_call_id"] = message.tool_call_id
    return len(_json_bytes(wire)) + 1


def message_tokens(message: Message, size: WireSize = json_size) -> int:
    """A rough token count: a quarter of the bytes the message takes in a request."""
    return (size(message) + 3) // 4


def estimate_tokens(messages: Sequence[Message], size: WireSize = json_size,
                    unreported: int = 0) -> int:
    """The prompt size of the next request: the last reported request size plus what came since.

    With no request size reported yet, every message is counted, plus `unreported` tokens for
    what else the request holds (the tools).
    """
    index = last_reported(messages)
    if index is None:
        return unreported + _tokens(messages, size)
    usage = messages[index].usage
    assert usage is not None
    return usage.input_tokens + usage.output_tokens + _tokens(messages[index + 1:], size)


def last_reported(messages: Sequence[Message]) -> int | None:
    """The index of the last reply whose request size the provider reported, or None."""
    for index in range(len(messages) - 1, -1, -1):
        usage = messages[index].usage
        if messages[index].role == "assistant" and usage is not None and usage.input_tokens:
            return index
    return None


def provider_size(provider: object) -> WireSize:
    """How `provider` measures a message: its own `wire_size` (the bytes it encodes, cached on
    the message for its request), else `json_size`."""
    size = getattr(provider, "wire_size", None)
    return size if callable(size) else json_size


def _tokens(messages: Sequence[Message], size: WireSize) -> int:
    """`message_tokens` summed, each count cached on its message (without reported usage the
    whole transcript is counted before every call)."""
    key = "approx_tokens" if size is json_size else f"approx_tokens:{getattr(size, '__qualname__', '')}"

    def count(message: Message) -> int:
        return message_tokens(message, size)

    return sum(m.wire(key, count) for m in messages)


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")


def choose_cut(body: Sequence[Message], keep_tokens: int, keep_turns: int = KEEP_TURNS,
               size: WireSize = json_size) -> int:
    """Where the verbatim tail of `body` (the conversation after the system prompt) starts.

    The tail holds at most `keep_turns` turns and about `keep_tokens` tokens, and always the
    last step. Cuts are made only before user and assistant messages, never before a tool
    result, so every call stays with its results. 0 means there is nothing to replace.
    """
    cut = len(body)
    tokens = turns = 0
    for index in range(len(body) - 1, -1, -1):
        message = body[index]
        tokens += message_tokens(message, size)
        if message.role == "tool":
            continue
        if cut < len(body) and tokens > keep_tokens:
            break
        cut = index
        if message.role == "user":
            turns += 1
            if turns >= keep_turns:
                break
    return cut


def summary_message(summary: str) -> Message:
    """The user message that stands for the replaced part of the conversation."""
    return Message.user(SUMMARY_HEADER + summary.strip())


def without_usage(message: Message) -> Message:
    """`message` without its token usage, which counted a context that no longer exists."""
    return replace(message, usage=None) if message.usage is not None else message


def without_thinking(message: Message) -> Message:
    """`message` without its reasoning (thinking blocks), for a turn that is over."""
    return replace(message, reasoning=None) if message.reasoning else message


def compacted(body: Sequence[Message], summary: str, replaced: int) -> list[Message]:
    """The conversation after the system prompt once its first `replaced` messages are
    summarised; the kept messages before the last prompt (turns that are over) lose their thinking."""
    kept = [without_usage(m) for m in body[replaced:]]
    last_prompt = max((i for i, m in enumerate(kept) if m.role == "user"), default=0)
    return [summary_message(summary), *map(without_thinking, kept[:last_prompt]), *kept[last_prompt:]]


def apply_record(body: Sequence[Message], fields: dict[str, Any]) -> list[Message]:
    """Replay a `compaction` record's fields on the conversation it was made from.

    Raises ValueError when the record is malformed or does not fit the conversation.
    """
    summary, replaced = fields.get("summary"), fields.get("replaced")
    if not isinstance(summary, str) or not isinstance(replaced, int) or replaced < 1:
        raise ValueError("it has no summary or no count of replaced messages")
    if replaced > len(body):
        raise ValueError(f"it replaced {replaced} messages but only {len(body)} came before it")
    return compacted(body, summary, replaced)


def summary_request(head: Sequence[Message], max_chars: int) -> list[Message]:
    """The summariser's messages: its instructions, then the part to summarise as text."""
    text = cap_text("\n\n".join(_render(m) for m in head), max_chars)
    return [Message.system(SUMMARY_SYSTEM),
            Message.user(f"Summarise this conversation:\n\n<conversation>\n{text}\n</conversation>")]


def _render(message: Message) -> str:
    if message.role == "tool":
        mark = ", error" if message.is_error else ""
        content = cap_text(message.content, MESSAGE_CHARS)
        return f"## tool result ({message.tool_name or '?'}{mark})\n{content}"
    parts = [f"## {message.role}", cap_text(message.content, MESSAGE_CHARS)]
    parts += [f"-> called {call.name} {cap_text(call.arguments, MESSAGE_CHARS // 4)}"
              for call in message.tool_calls]
    return "\n".join(part for part in parts if part)


class _RetryHooks:
    """Summary calls stream nothing to the user but still report their retries."""

    def __init__(self, ctx: TurnContext) -> None:
        self._ctx = ctx

    def on_text(self, delta: str) -> None:
        pass

    def on_retry(self, notice: RetryNotice) -> None:
        self._ctx.retry(notice)


class Compactor:
    """Keeps one runtime's conversation under `max_tokens`; the kernel calls it before each model call."""

    def __init__(self, max_tokens: int = DEFAULT_CONTEXT_WINDOW) -> None:
        self.max_tokens = max_tokens
        self._pause = 0  # model calls left before trying again after a failed summary
        self._tools: tuple[tuple[str, ...], int] = ((), 0)  # tool names → their tokens

    async def maybe_compact(self, ctx: TurnContext) -> None:
        """Compact when the next request would come near the limit."""
        if self._pause > 0:
            self._pause -= 1
            return
        if self.estimate(ctx) >= self.max_tokens * COMPACT_AT:
            if await self.compact(ctx) is None:
                self._pause = RETRY_AFTER_CALLS

    def estimate(self, ctx: TurnContext) -> int:
        """`estimate_tokens` of the next request, measured as `ctx.provider` encodes it."""
        transcript = ctx.transcript
        unreported = self._tool_tokens(ctx) if last_reported(transcript) is None else 0
        return estimate_tokens(transcript, provider_size(ctx.provider), unreported)

    def _tool_tokens(self, ctx: TurnContext) -> int:
        """The tools' share of a request (their names, descriptions and schemas), kept per tool set."""
        names = tuple(ctx.tools.names())
        if names != self._tools[0]:
            specs = [{"name": s.name, "description": s.description, "parameters": s.parameters}
                     for s in ctx.tools.specs()]
            self._tools = (names, (len(_json_bytes(specs)) + 3) // 4)
        return self._tools[1]

    async def compact(self, ctx: TurnContext) -> Compaction | None:
        """Summarise the older messages now; None when there is nothing to replace or it failed."""
        transcript = ctx.transcript
        body = transcript[1:]
        size = provider_size(ctx.provider)
        replaced = choose_cut(body, int(self.max_tokens * KEEP_SHARE), size=size)
        if replaced < MIN_REPLACED:
            return None
        summary = await self._summarise(ctx, body[:replaced])
        if not summary:
            return None
        before = self.estimate(ctx)
        transcript[1:] = compacted(body, summary, replaced)
        result = Compaction(summary, replaced, len(body) - replaced, before, self.estimate(ctx))
        ctx.sink.emit(_notice(result, ctx.turn))
        return result

    async def _summarise(self, ctx: TurnContext, head: Sequence[Message]) -> str:
        """One provider call without tools; '' when it fails or is interrupted."""
        request = summary_request(head, self.max_tokens * 2)  # about half the window
        try:
            reply = await side_call("compaction", ctx.provider, request, _RetryHooks(ctx), ctx.interrupt, ctx.sink)
        except (Interrupted, ProviderError):
            return ""
        ctx.budget.charge(reply.usage)
        return reply.message.content.strip()


def _notice(result: Compaction, turn: int) -> CompactionDone:
    return CompactionDone(turn=turn, summary=result.summary, replaced=result.replaced,
                          kept=result.kept, tokens_before=result.tokens_before,
                          tokens_after=result.tokens_after)
