"""The OpenTelemetry SDK set up for one run: OTLP/HTTP (protobuf) exporters of spans and
metrics, configured by the standard variables, and a bounded last export.

The SDK reads the exporter variables itself (`OTEL_EXPORTER_OTLP_ENDPOINT` and the
`_TRACES_`/`_METRICS_` ones, `_HEADERS`, `_TIMEOUT`, `_COMPRESSION`, `_CERTIFICATE`…) and
the resource ones (`OTEL_SERVICE_NAME`, default `recursive`; `OTEL_RESOURCE_ATTRIBUTES`).
`OTEL_TRACES_EXPORTER=none` / `OTEL_METRICS_EXPORTER=none` leave one signal out; only
`otlp` over `http/protobuf` is spoken, another choice is said once and `otlp` used.

Spans leave in batches from the SDK's own thread while the run goes on, so a slow collector
never holds a step up. At the run's end the last batch and the metrics are sent from a
daemon thread that the run waits for at most `FINISH_WAIT` seconds (2 s;
`OTEL_BSP_EXPORT_TIMEOUT`, in ms, sets another), and no longer once the SDK reports a
failure: a collector that refuses costs a run next to nothing, one that hangs that long at
most; then one warning line, and the process exits without waiting for it. The SDK's own log lines are kept off stderr (shown with `-v`).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.metrics import NoOpMeter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracer, Tracer

from .spans import AGENT, Instruments, OtelSink, RunFacts

if TYPE_CHECKING:
    from ...core.runtime import RuntimeCore
    from ...core.settings import Settings

FINISH_WAIT = 2.0  # seconds a run's end waits for its last spans and metrics (OTEL_BSP_EXPORT_TIMEOUT, ms)
DEFAULT_ENDPOINT = "http://localhost:4318"
SCOPE = "recursive_cli"


class _Trouble(logging.Handler):
    """Keeps the SDK's last complaint (for our one warning line) instead of printing it, and
    says that there was one (`settled`: the last export need not be waited for any longer)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last = ""
        self.settled = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.last = record.getMessage()
        except Exception:  # (a record whose arguments do not fit its format)
            self.last = str(record.msg)
        self.settled.set()


_TROUBLE = _Trouble()  # (one for the process: a logger left with no handler would print to stderr)


class _CountedSpanExporter(SpanExporter):
    """The OTLP span exporter, counting the batches the collector did not take."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.failures = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is not SpanExportResult.SUCCESS:
            self.failures += 1
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class Exporters:
    """The run's tracer and meter providers (None: that signal is off), and their last export."""

    def __init__(self, env: Mapping[str, str], err: TextIO, verbose: bool) -> None:
        self._err = err
        self.wait = _finish_wait(env)
        self._quiet_sdk(verbose)
        resource = _resource()
        self.endpoint = (env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                         or DEFAULT_ENDPOINT)
        self.spans: _CountedSpanExporter | None = None
        self.tracing: TracerProvider | None = None
        self.metering: MeterProvider | None = None
        if _signal_on(env, "OTEL_TRACES_EXPORTER", err):
            self.spans = _CountedSpanExporter(OTLPSpanExporter())
            self.tracing = TracerProvider(resource=resource, shutdown_on_exit=False)
            self.tracing.add_span_processor(BatchSpanProcessor(self.spans))
        if _signal_on(env, "OTEL_METRICS_EXPORTER", err):
            reader = PeriodicExportingMetricReader(OTLPMetricExporter())
            self.metering = MeterProvider([reader], resource=resource, shutdown_on_exit=False)

    def _quiet_sdk(self, verbose: bool) -> None:
        """The SDK logs each failed export (with retries, a few lines a batch); one line of
        ours says it at the end instead. With -v its lines go to stderr as well."""
        log = logging.getLogger("opentelemetry")
        if _TROUBLE not in log.handlers:
            log.addHandler(_TROUBLE)
        _TROUBLE.last = ""
        log.propagate = verbose

    def tracer(self) -> Tracer:
        return self.tracing.get_tracer(SCOPE) if self.tracing is not None else NoOpTracer()

    def instruments(self) -> Instruments:
        return Instruments(self.metering.get_meter(SCOPE) if self.metering is not None else NoOpMeter(SCOPE))

    def finish(self) -> None:
        """Send what is left and stop, waiting `self.wait` seconds at most, and no longer
        once the SDK has said the collector failed (it would only retry); one warning line
        when the collector did not take it all."""
        _TROUBLE.settled.clear()
        worker = threading.Thread(target=self._flush, name="recursive-otel-finish", daemon=True)
        worker.start()
        _TROUBLE.settled.wait(self.wait)
        why = _short(_TROUBLE.last)
        if worker.is_alive() and not why:
            self.warn(f"the collector at {self.endpoint} did not answer within {self.wait:g} s; "
                       "the rest of the run's telemetry is dropped")
        elif why or (self.spans is not None and self.spans.failures):
            self.warn(f"the run's telemetry could not be sent to {self.endpoint}" + (f": {why}" if why else ""))

    def _flush(self) -> None:
        try:
            for provider in (self.tracing, self.metering):
                if provider is not None:
                    provider.shutdown()  # (its last spans, its last collection of the metrics, sent)
        finally:
            _TROUBLE.settled.set()

    def warn(self, text: str) -> None:
        """One line on stderr, `warning: OpenTelemetry: TEXT`."""
        try:
            self._err.write(f"warning: OpenTelemetry: {text}\n")
            self._err.flush()
        except (OSError, ValueError):  # (stderr closed: nothing to tell it on)
            pass


def _finish_wait(env: Mapping[str, str]) -> float:
    """Seconds the run's end waits for its last export: `OTEL_BSP_EXPORT_TIMEOUT` (ms), else
    `FINISH_WAIT`."""
    try:
        return max(0.0, float(env["OTEL_BSP_EXPORT_TIMEOUT"]) / 1000)
    except (KeyError, ValueError):
        return FINISH_WAIT


def _short(complaint: str) -> str:
    """The gist of an SDK log line: the OS's words for a failed connection, else its start."""
    found = re.search(r"\[Errno -?\d+\] [^\"')]+", complaint)
    if found:
        return found.group(0).strip()
    return complaint if len(complaint) <= 160 else complaint[:157] + "..."


def _resource() -> Resource:
    """The SDK's resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), named `recursive`
    when neither names the service."""
    from importlib import metadata

    try:
        version = metadata.version("recursive-cli")
    except metadata.PackageNotFoundError:  # (run from a checkout that was never installed)
        version = "unknown"
    resource = Resource.create({SERVICE_VERSION: version})
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: AGENT}))
    return resource


def _signal_on(env: Mapping[str, str], variable: str, err: TextIO) -> bool:
    """Whether `variable` (OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER) leaves its signal on."""
    chosen = [part.strip().lower() for part in env.get(variable, "otlp").split(",") if part.strip()]
    if chosen == ["none"]:
        return False
    if any(part != "otlp" for part in chosen):
        err.write(f"warning: OpenTelemetry: {variable}={env.get(variable)}: only otlp is exported here; using it\n")
    return True


def start_telemetry(runtime: RuntimeCore, settings: Settings, mode: str, env: Mapping[str, str],
                    err: TextIO) -> OtelSink | None:
    """The sink that exports `runtime`'s run (None: both signals are off)."""
    protocol = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "").strip()
    if protocol and protocol != "http/protobuf":
        err.write(f"warning: OpenTelemetry: protocol {protocol} is not spoken here; "
                  "exporting over http/protobuf\n")
    exporters = Exporters(env, err, settings.verbose)
    if exporters.tracing is None and exporters.metering is None:
        return None
    facts = RunFacts(session_id=runtime.session_id, mode=mode, provider=lambda: runtime.provider.name,
                     model=lambda: runtime.provider.model,
                     cost=lambda model, usage: runtime.budget.price.of(model)(usage))
    return OtelSink(exporters.tracer(), exporters.instruments(), facts, exporters.finish, exporters.warn)
