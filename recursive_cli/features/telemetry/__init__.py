"""OpenTelemetry: a trace of each run and metrics of its tokens and cost, over OTLP/HTTP (issue 34).

`--otel` (config `otel = true`, `RECURSIVE_OTEL=1`) turns it on; the standard variables
say where and how (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`…), and
`OTEL_SDK_DISABLED=true` turns it off again. An endpoint alone turns nothing on: OTEL_*
variables are often set for a whole CI job or machine, and an agent's run is not to be sent
anywhere unasked (Claude Code asks for `CLAUDE_CODE_ENABLE_TELEMETRY=1` the same way).

This module is light: the SDK (the `[otel]` extra) is imported by `otlp.py` only when a run
asks for telemetry. Missing, it is one warning line and the run goes on without: telemetry
is never what a run is for, so it never fails or holds one up (`otlp.py` bounds the final
export).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...core.runtime import RuntimeCore
    from ...core.settings import Settings

MISSING_SDK = ("warning: --otel needs the OpenTelemetry SDK: pip install 'recursive-cli[otel]'; "
               "this run exports no telemetry")
_TRUE = ("1", "true", "yes", "on")


def telemetry_wanted(settings: Settings, env: Mapping[str, str] | None = None) -> bool:
    """Whether this run exports telemetry: asked for, and not switched off by `OTEL_SDK_DISABLED`."""
    env = os.environ if env is None else env
    return settings.otel and env.get("OTEL_SDK_DISABLED", "").strip().lower() not in _TRUE


def attach_telemetry(runtime: RuntimeCore, settings: Settings, mode: str,
                     env: Mapping[str, str] | None = None) -> None:
    """Export the runtime's run as a trace and metrics when the settings ask for it (a sink of
    its events, ending with the run's result); a missing SDK is one warning on stderr."""
    env = os.environ if env is None else env
    if not telemetry_wanted(settings, env):
        return
    try:
        from .otlp import start_telemetry
    except ImportError:
        sys.stderr.write(MISSING_SDK + "\n")
        return
    try:
        sink = start_telemetry(runtime, settings, mode, env, sys.stderr)
    except Exception as exc:  # (a certificate file that is not there, a header it cannot read…)
        sys.stderr.write(f"warning: OpenTelemetry could not be set up ({type(exc).__name__}: {exc}); "
                         "this run exports no telemetry\n")
        return
    if sink is not None:
        runtime.add_event_sink(sink)
