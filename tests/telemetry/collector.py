"""A real OTLP/HTTP receiver on 127.0.0.1: what an OpenTelemetry collector's `otlphttp`
receiver is to an exporter. It takes `POST /v1/traces` and `POST /v1/metrics` with protobuf
bodies (gzip too) and decodes them with opentelemetry-proto's ExportTraceServiceRequest and
ExportMetricsServiceRequest, and can hang instead of answering (a stuck collector).
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


def value_of(value: AnyValue) -> Any:
    """An attribute's value as Python: str, int, float, bool or a list of them."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None


def attributes(pairs: Any) -> dict[str, Any]:
    """Protobuf KeyValue pairs as a dict."""
    return {pair.key: value_of(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


@dataclass
class Received:
    """One span as the collector got it: its proto, its attributes and its resource's."""

    span: Any
    attributes: dict[str, Any]
    resource: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.span.name)


class OtlpReceiver:
    """The receiver, serving in a daemon thread; a context manager. `hang`: take each request
    and never answer it (until the receiver stops)."""

    def __init__(self, hang: bool = False) -> None:
        self.hang = hang
        self.traces: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.headers: list[dict[str, str]] = []
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    def __enter__(self) -> OtlpReceiver:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.receiver = self  # type: ignore[attr-defined]
        self._httpd = httpd
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._released.set()
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self) -> str:
        """The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it."""
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def take(self, path: str, body: bytes, headers: dict[str, str]) -> bytes | None:
        """Decode one request; the serialized response, or None for a path it does not serve."""
        with self._lock:
            self.headers.append(headers)
            if path == "/v1/traces":
                self.traces.append(ExportTraceServiceRequest.FromString(body))
                return ExportTraceServiceResponse().SerializeToString()
            if path == "/v1/metrics":
                self.metrics.append(ExportMetricsServiceRequest.FromString(body))
                return ExportMetricsServiceResponse().SerializeToString()
        return None

    def wait_released(self) -> None:
        self._released.wait(30)

    # -- what arrived --------------------------------------------------------------------------

    def spans(self) -> list[Received]:
        """Every span received, in the order received."""
        found = []
        for request in self.traces:
            for resource_spans in request.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    found.extend(Received(span, attributes(span.attributes), resource) for span in scope_spans.spans)
        return found

    def metric_points(self, name: str) -> Iterator[tuple[Any, dict[str, Any], str]]:
        """(data point, its attributes, the metric's unit) of every point of metric `name`."""
        for request in self.metrics:
            for resource_metrics in request.resource_metrics:
                for scope_metrics in resource_metrics.scope_metrics:
                    for metric in scope_metrics.metrics:
                        if metric.name != name:
                            continue
                        kind = metric.WhichOneof("data")
                        for point in getattr(metric, kind).data_points:
                            yield point, attributes(point.attributes), metric.unit


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        receiver: OtlpReceiver = self.server.receiver  # type: ignore[attr-defined]
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if receiver.hang:
            receiver.wait_released()
            return
        answer = receiver.take(self.path, body, {key.lower(): value for key, value in self.headers.items()})
        if answer is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)
