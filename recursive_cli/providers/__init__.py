"""Model providers, each imported only when chosen, so start-up stays fast (no SDK is imported:
the HTTP ones speak the wire formats through net/http_client.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.provider import ChatProvider, ContextLengthError, ProviderError

if TYPE_CHECKING:
    from ..core.settings import Settings

__all__ = ["ChatProvider", "ContextLengthError", "ProviderError", "make_provider"]


def make_provider(settings: Settings, session_id: str | None = None) -> ChatProvider:
    """Build the provider the settings name; raises ConfigError for missing keys or scripts.

    A key is optional with a base URL (a local server); with neither, the error says how to go
    on, naming the local servers that answer on this machine (it never picks one itself).
    `session_id` keys the provider's prompt cache where it has one (the Responses wire).
    """
    from ..core.settings import ConfigError

    model = settings.effective_model
    if settings.provider == "scripted":
        from .scripted import ScriptedProvider, ScriptError, load_script

        if settings.script is None:
            raise ConfigError("the scripted provider needs --script FILE (or RECURSIVE_SCRIPT)")
        try:
            return ScriptedProvider(load_script(settings.script), model=model)
        except ScriptError as exc:
            raise ConfigError(str(exc)) from None
    if not settings.api_key and not settings.api_base:  # (keys are read by settings only)
        from .local import missing_key_help

        raise ConfigError(missing_key_help(settings.provider, settings.model))
    from .retry import request_timeout

    stream = not settings.no_stream
    timeout = request_timeout()
    if settings.provider == "anthropic":
        from .anthropic_provider import AnthropicProvider

        return AnthropicProvider(model, settings.api_key, settings.api_base, stream=stream,
                                 timeout=timeout, thinking_budget=settings.thinking_budget,
                                 effort=settings.effort)
    if openai_wire(settings) == "responses":
        from .openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(model, settings.api_key, settings.api_base, stream=stream,
                                       effort=settings.effort, session_id=session_id, timeout=timeout)
    from .openai_provider import OpenAIProvider

    return OpenAIProvider(model, settings.api_key, settings.api_base, stream=stream, timeout=timeout,
                          effort=settings.effort)


def openai_wire(settings: Settings) -> str:
    """The openai provider's wire: `--wire`'s, else `responses` for OpenAI's own API (no base
    URL, or one on api.openai.com) and `chat` for any other server."""
    if settings.wire:
        return settings.wire
    from urllib.parse import urlsplit

    host = urlsplit(settings.api_base).hostname if settings.api_base else "api.openai.com"
    return "responses" if host == "api.openai.com" else "chat"
