"""The provider contract: how the kernel asks a model for its next message.

Exceptions::

    ProviderError            one-line `reason`, optional HTTP `status`
      (retryable=True)       429, 5xx, 529, dropped connections, timeouts, malformed
                             responses — retried by `retry.py`
      (retryable=False)      400, 401, 403, 404 — fail at once
      ContextLengthError     the request does not fit the model's context window (a 400
                             saying so) — not retried as it is; compaction can make it fit
      DeadlineError          the run's deadline (--max-duration) came before an answer, or
                             left no time for the next retry — the budget ends the run
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

from .errors import ContextLengthError, DeadlineError, ProviderError  # noqa: F401 (re-exported)
from .messages import Message, Usage

# Why the model stopped. Only after "end" and "tool_calls" is a reply whole; "length" is the
# output limit, "content_filter" the provider's filter, "refusal" the model declining.
StopKind = Literal["end", "tool_calls", "length", "content_filter", "refusal", "other"]


class ToolSpec(NamedTuple):
    """What the model is told about one tool: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Completion:
    """One model response: the assistant message, why the model stopped, and what it cost.

    `reason` is the provider's own word for the stop (`max_tokens`, `refusal`, `abort`…), for
    messages; `stop` is what the kernel acts on. `model` and `response_id` are what the
    response said of itself, for telemetry.
    """

    message: Message
    stop: StopKind
    usage: Usage = field(default_factory=Usage)
    reason: str = ""
    model: str = ""  # the model the server says answered ("": it did not say)
    response_id: str = ""  # the server's id of the response ("": none)

    @property
    def whole(self) -> bool:
        """The model finished its reply: it was not cut off, filtered or refused."""
        return self.stop in ("end", "tool_calls")


class RetryNotice(NamedTuple):
    """Told to the hooks before each retry of a failed request."""

    attempt: int
    max_retries: int
    delay_seconds: float
    status: int | None
    reason: str


class ProviderHooks(Protocol):
    """Callbacks a provider uses while a request is in flight."""

    def on_text(self, delta: str) -> None:
        """A piece of streamed answer text arrived."""

    def on_retry(self, notice: RetryNotice) -> None:
        """A request failed and will be retried after `notice.delay_seconds`."""


def thinking_hook(hooks: ProviderHooks) -> Callable[[str], None] | None:
    """The hooks' `on_thinking(delta)`, for the model's thinking (or reasoning summary) as it
    streams; None when they take none: an optional hook, as the kernel's hooks have it and
    hooks that only want the answer (a judge's, compaction's) have not."""
    hook = getattr(hooks, "on_thinking", None)
    return hook if callable(hook) else None


def deadline_of(hooks: ProviderHooks) -> float | None:
    """When the call `hooks` belong to must have ended (None: whenever it ends): the hooks'
    `deadline` property (the kernel's carry the run's --max-duration), an optional hook as
    `on_thinking` is."""
    deadline = getattr(hooks, "deadline", None)
    return deadline if isinstance(deadline, (int, float)) else None


class NullHooks:
    """Hooks that ignore everything."""

    def on_text(self, delta: str) -> None:
        pass

    def on_retry(self, notice: RetryNotice) -> None:
        pass


class ChatProvider(Protocol):
    """A model behind some API. `messages` starts with the system message."""

    model: str

    @property
    def name(self) -> str:
        """The provider's name as settings spell it (`openai`, `anthropic`, `scripted`)."""
        ...

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                       hooks: ProviderHooks) -> Completion:
        """Return the model's next message; raise ProviderError when it cannot."""
        ...

    async def aclose(self) -> None:
        """Release the HTTP client."""
        ...


@runtime_checkable
class Replaying(Protocol):
    """A provider whose replies are a fixed sequence (the scripted provider): a resumed session
    tells it how many of them the session already used."""

    def skip_replies(self, count: int) -> None: ...
