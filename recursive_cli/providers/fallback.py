"""`--fallback-model M[,M2]`: when the model stays unavailable through every retry (an error that
was worth retrying: 429, 5xx, 529 overloaded, timeouts, refused connections), the same call
goes to the next model of the list, and every call after it too.

The kernel prices a reply at the model of the provider that answered (`provider.model` after
the call), so the fallback's requests are priced on it and show in the result's `modelUsage`
under its name; the switch is said on stderr.
A permanent failure (400, 401, 404: the request itself is wrong) is not sent elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..core.errors import DeadlineError, ProviderError
from ..core.messages import Message
from ..core.provider import ChatProvider, Completion, ProviderHooks, ToolSpec


class FallbackProvider:
    """`first`, then a provider made by `make` for each of `models` in turn, each taking over
    when the one before it is unavailable."""

    def __init__(self, first: ChatProvider, models: Sequence[str], make: Callable[[str], ChatProvider],
                 note: Callable[[str], None]) -> None:
        self._current = first
        self._rest = list(models)
        self._make = make
        self._note = note
        self._retired: list[ChatProvider] = []

    @property
    def model(self) -> str:
        return self._current.model

    @model.setter
    def model(self, value: str) -> None:  # (the headless set_model on a scripted provider)
        self._current.model = value

    @property
    def name(self) -> str:
        return self._current.name

    @property
    def current(self) -> ChatProvider:
        """The provider the next call goes to."""
        return self._current

    def skip_replies(self, count: int) -> None:
        """A scripted provider's replay of a resumed session (core.provider.Replaying)."""
        skip = getattr(self._current, "skip_replies", None)
        if skip is not None:
            skip(count)

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                       hooks: ProviderHooks) -> Completion:
        while True:
            try:
                return await self._current.complete(messages, tools, hooks)
            except ProviderError as exc:
                if not exc.retryable or isinstance(exc, DeadlineError) or not self._rest:
                    raise
                failed, reason = self._current.model, exc.reason
            following = self._rest.pop(0)
            self._note(f"{failed} is unavailable ({reason}); going on with --fallback-model {following}")
            replacement = self._make(following)
            if replacement is not self._current:
                self._retired.append(self._current)
            self._current = replacement

    async def aclose(self) -> None:
        for provider in (*self._retired, self._current):
            await provider.aclose()
