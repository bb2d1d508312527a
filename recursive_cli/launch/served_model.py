"""The model of a server named by `--api-base` when no model was given: the one it serves.

A local OpenAI-compatible server (Ollama, llama.cpp, vLLM, LM Studio) knows nothing of the
openai provider's default, `gpt-4.1-mini`. So when the openai provider goes to a base URL
other than OpenAI's and no model was given by a flag, a variable or a config file, the
server's `GET /v1/models` decides: one model is used, and said once on stderr; several are an
error (exit 2) that lists them and asks for `-m`; none, or a server that cannot list them, is
an error (exit 1) that says why: a server that does not answer is told as a run would tell it. A session keeps the model it was started with, so `resume` asks nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from typing import TYPE_CHECKING

from ..core.errors import CliError
from ..core.provider import ProviderError
from ..core.settings import LoadedSettings
from .errors import EXIT_ERROR, EXIT_UNAVAILABLE, EXIT_USAGE

if TYPE_CHECKING:
    from ..providers.openai_provider import OpenAIProvider

LIST_SECONDS = 10.0  # a model server lists its models at once; a longer wait is a server in trouble
MAX_SHOWN = 8  # models named in the error that asks to choose


def with_served_model(loaded: LoadedSettings) -> LoadedSettings:
    """`loaded`, its model the one its server serves when the rule above applies; CliError
    when it cannot be told which."""
    settings = loaded.settings
    if not asks_server(loaded):
        return loaded
    from ..providers.openai_provider import OpenAIProvider

    provider = OpenAIProvider("", settings.api_key, settings.api_base, timeout=LIST_SECONDS)
    base = provider.base_url
    try:
        models = asyncio.run(_listed(provider))
    except ProviderError as exc:
        raise CliError(_failure(base, exc), EXIT_UNAVAILABLE if exc.unavailable else EXIT_ERROR) from None
    if not models:
        raise CliError(f"{base} lists no model to pick (no -m MODEL given): load one there, or pass -m MODEL")
    if len(models) > 1:
        raise CliError(_choose(base, models), EXIT_USAGE)
    if not settings.quiet:
        sys.stderr.write(f"note: using {models[0]}, the one model {base} serves (-m MODEL for another)\n")
    sources = {**loaded.sources, "model": f"the one model {base} serves"}
    return dataclasses.replace(loaded, settings=dataclasses.replace(settings, model=models[0]),
                               sources=sources)


def asks_server(loaded: LoadedSettings) -> bool:
    """Whether the model is the server's to say: the openai provider, a base URL other than
    OpenAI's, and no model from a flag, a variable or a config file."""
    from ..providers.openai_provider import DEFAULT_BASE_URL

    settings = loaded.settings
    base = (settings.api_base or "").rstrip("/")
    return settings.provider == "openai" and settings.model is None and bool(base) \
        and base != DEFAULT_BASE_URL


def _failure(base: str, exc: ProviderError) -> str:
    """Why the list could not be had. A server that answered, but with no list, is told so with
    what to do; a request that failed as the run's would have (an unknown host, a refused
    connection, a key wanted) is told in the run's own words, which say what to fix."""
    if exc.status in (404, 405, 501):
        return f"cannot list the models of {base} to pick one (no -m MODEL given): GET /models " \
               f"answered HTTP {exc.status}; pass -m MODEL"
    if exc.reason.startswith("malformed response"):
        return f"cannot list the models of {base} to pick one (no -m MODEL given): {exc.reason}; pass -m MODEL"
    return exc.reason


def _choose(base: str, models: list[str]) -> str:
    shown = ", ".join(models[:MAX_SHOWN]) + (f", … {len(models) - MAX_SHOWN} more" if len(models) > MAX_SHOWN else "")
    return f"{base} serves {len(models)} models ({shown}): pass -m MODEL to choose one"


async def _listed(provider: OpenAIProvider) -> list[str]:
    try:
        return await provider.served_models(LIST_SECONDS)
    finally:
        await provider.aclose()
