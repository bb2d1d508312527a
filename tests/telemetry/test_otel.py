"""`--otel`: what a real OTLP/HTTP receiver on loopback gets of a run (tests/telemetry/collector.py
decodes the bodies with opentelemetry-proto), and that a collector that refuses or hangs
never fails a run or keeps it from its answer."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from clitools import invoke, json_lines, run_cli, wait_until, write_script
from fakeserver import FakeLLMServer

from .collector import OtlpReceiver, Received
from .collector import attributes as attributes_of

ANSWER = "all done"
TOOL_THEN_ANSWER = [
    {"tool_calls": [{"id": "call_list", "name": "list_dir", "arguments": {}}],
     "usage": {"input_tokens": 1000, "output_tokens": 40}},
    {"text": ANSWER, "usage": {"input_tokens": 1200, "output_tokens": 10}},
]
PRICE = '[prices."fake-model"]\ninput = 2.0\noutput = 10.0\n'  # USD per million tokens
SPAN_KIND_CLIENT, SPAN_KIND_INTERNAL, STATUS_ERROR = 3, 1, 2


def _otel_env(receiver: OtlpReceiver, **more: str) -> dict[str, str | None]:
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SDK_DISABLED": None, "RECURSIVE_OTEL": None,
            "OTEL_TRACES_EXPORTER": None, "OTEL_METRICS_EXPORTER": None, "OTEL_SERVICE_NAME": None,
            "OTEL_RESOURCE_ATTRIBUTES": None, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": None, **more}


def _by_name(spans: list[Received]) -> dict[str, list[Received]]:
    found: dict[str, list[Received]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


def _fake_run(tmp_path: Path, isolated_home: Path, provider: str, receiver: OtlpReceiver,
              replies: list[dict[str, Any]], **env: str) -> tuple[int, dict[str, Any], str]:
    """`recursive run --otel -o json` against the fake model server; (exit, result line, stderr)."""
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(PRICE, encoding="utf-8")
    with FakeLLMServer(replies, model="fake-model-2026-01") as server:
        base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
        result = invoke("run", "list the files", "--otel", "-o", "json", "-C", str(tmp_path), "--provider", provider,
                        "--api-base", base, "-m", "fake-model", env=_otel_env(receiver, **env))
    return result.returncode, json.loads(result.stdout), result.stderr


def test_a_run_is_one_trace_of_turn_model_and_tool_spans_named_by_the_genai_conventions(
        tmp_path: Path, isolated_home: Path) -> None:
    with OtlpReceiver() as receiver:
        code, result, stderr = _fake_run(tmp_path, isolated_home, "openai", receiver, TOOL_THEN_ANSWER,
                                         OTEL_SERVICE_NAME="ci-agent",
                                         OTEL_RESOURCE_ATTRIBUTES="deployment.environment.name=test,team=infra",
                                         OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer sekrit")
    assert code == 0, stderr
    assert result["result"] == ANSWER and "warning" not in stderr
    spans = receiver.spans()
    named = _by_name(spans)
    assert sorted(named) == ["chat fake-model", "execute_tool list_dir", "invoke_agent recursive", "turn 1"]
    [root], [turn], [tool] = named["invoke_agent recursive"], named["turn 1"], named["execute_tool list_dir"]
    calls = sorted(named["chat fake-model"], key=lambda span: span.attributes["recursive.step"])
    # one trace: root → turn → (chat, execute_tool, chat)
    assert {span.span.trace_id for span in spans} == {root.span.trace_id}
    assert root.span.parent_span_id == b"" and turn.span.parent_span_id == root.span.span_id
    assert [span.span.parent_span_id for span in (*calls, tool)] == [turn.span.span_id] * 3
    assert calls[0].span.end_time_unix_nano <= tool.span.start_time_unix_nano
    assert tool.span.end_time_unix_nano <= calls[1].span.start_time_unix_nano
    assert [span.span.kind for span in (root, turn, tool, *calls)] == [SPAN_KIND_INTERNAL] * 3 + [SPAN_KIND_CLIENT] * 2
    # what the fake model answered, call by call
    for call, reply, finish in zip(calls, TOOL_THEN_ANSWER, (["tool_calls"], ["stop"])):
        attributes = call.attributes
        assert attributes["gen_ai.operation.name"] == "chat" and attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.request.model"] == "fake-model"
        assert attributes["gen_ai.response.model"] == "fake-model-2026-01"
        assert attributes["gen_ai.response.id"].startswith("chatcmpl-")
        assert attributes["gen_ai.usage.input_tokens"] == reply["usage"]["input_tokens"]
        assert attributes["gen_ai.usage.output_tokens"] == reply["usage"]["output_tokens"]
        assert attributes["gen_ai.response.finish_reasons"] == finish
    assert calls[0].attributes["recursive.cost_usd"] == pytest.approx((1000 * 2.0 + 40 * 10.0) / 1e6)
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "list_dir" and tool.attributes["gen_ai.tool.call.id"] == "call_list"
    # the session, on every span; the run's totals on the root
    assert {span.attributes["gen_ai.conversation.id"] for span in spans} == {result["session_id"]}
    assert {span.attributes["session.id"] for span in spans} == {result["session_id"]}
    assert root.attributes["gen_ai.usage.input_tokens"] == result["usage"]["input_tokens"] == 2200
    assert root.attributes["recursive.cost_usd"] == pytest.approx(result["total_cost_usd"])
    assert root.attributes["recursive.exit_code"] == 0 and root.span.status.code != STATUS_ERROR
    assert turn.attributes["recursive.finish_reason"] == "completed" and turn.attributes["recursive.steps"] == 2
    # the standard variables: resource, headers
    assert root.resource["service.name"] == "ci-agent"
    assert root.resource["deployment.environment.name"] == "test" and root.resource["team"] == "infra"
    assert {headers.get("authorization") for headers in receiver.headers} == {"Bearer sekrit"}
    assert {headers.get("content-type") for headers in receiver.headers} == {"application/x-protobuf"}


def test_metrics_give_tokens_by_type_and_the_cost_in_usd(tmp_path: Path, isolated_home: Path) -> None:
    with OtlpReceiver() as receiver:
        code, result, stderr = _fake_run(tmp_path, isolated_home, "openai", receiver, TOOL_THEN_ANSWER)
    assert code == 0, stderr
    tokens: dict[str, float] = {}
    for point, attributes, unit in receiver.metric_points("gen_ai.client.token.usage"):
        assert unit == "{token}" and attributes["gen_ai.request.model"] == "fake-model"
        assert attributes["gen_ai.response.model"] == "fake-model-2026-01"
        assert attributes["gen_ai.provider.name"] == "openai" and attributes["gen_ai.operation.name"] == "chat"
        tokens[attributes["gen_ai.token.type"]] = tokens.get(attributes["gen_ai.token.type"], 0) + point.sum
    assert tokens == {"input": 2200, "output": 50}
    durations = list(receiver.metric_points("gen_ai.client.operation.duration"))
    assert durations and all(unit == "s" and point.count == 2 for point, _, unit in durations)
    cost = [(point.as_double, unit) for point, _, unit in receiver.metric_points("recursive.cost.usage")]
    assert cost == [(pytest.approx(result["total_cost_usd"]), "USD")]


def test_the_anthropic_wire_reports_its_own_stop_words(tmp_path: Path, isolated_home: Path) -> None:
    with OtlpReceiver() as receiver:
        code, _, stderr = _fake_run(tmp_path, isolated_home, "anthropic", receiver, TOOL_THEN_ANSWER)
    assert code == 0, stderr
    calls = sorted(_by_name(receiver.spans())["chat fake-model"], key=lambda span: span.attributes["recursive.step"])
    assert [call.attributes["gen_ai.response.finish_reasons"] for call in calls] == [["tool_use"], ["end_turn"]]
    assert {call.attributes["gen_ai.provider.name"] for call in calls} == {"anthropic"}
    assert {call.attributes["gen_ai.response.model"] for call in calls} == {"fake-model-2026-01"}


def test_a_failed_model_call_ends_its_span_and_the_trace_in_error(tmp_path: Path, isolated_home: Path) -> None:
    refused = [{"error": {"status": 400, "message": "no such model"}}]
    with OtlpReceiver() as receiver:
        code, result, _ = _fake_run(tmp_path, isolated_home, "openai", receiver, refused)
    assert code == 1 and result["subtype"] == "error_during_execution"
    named = _by_name(receiver.spans())
    [call], [turn], [root] = named["chat fake-model"], named["turn 1"], named["invoke_agent recursive"]
    assert call.span.status.code == STATUS_ERROR and call.attributes["error.type"] == "provider_error"
    assert "no such model" in call.span.status.message
    assert turn.span.status.code == STATUS_ERROR and root.span.status.code == STATUS_ERROR
    assert root.attributes["recursive.exit_code"] == 1


def test_the_headless_print_mode_exports_its_run_too(tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.json", TOOL_THEN_ANSWER)
    with OtlpReceiver() as receiver:  # (-p is read before the typer app: a process of its own)
        result = run_cli("-p", "list the files", "--otel", "--output-format", "json", "-C", str(tmp_path),
                         "--provider", "scripted", "--script", str(script),
                         env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
    assert result.returncode == 0, result.stderr
    session = json.loads(result.stdout)["session_id"]
    named = _by_name(receiver.spans())
    assert sorted(named) == ["chat scripted", "execute_tool list_dir", "invoke_agent recursive", "turn 1"]
    assert {span.attributes["session.id"] for spans in named.values() for span in spans} == {session}


@pytest.mark.parametrize(("flag", "env", "config", "sent"), [
    ([], {}, "", False),  # an endpoint alone turns nothing on
    ([], {"RECURSIVE_OTEL": "1"}, "", True),
    ([], {}, "otel = true\n", True),
    (["--otel"], {"OTEL_SDK_DISABLED": "true"}, "", False),
    (["--otel"], {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, "", False),
], ids=["endpoint-alone", "env", "config", "sdk-disabled", "exporters-none"])
def test_what_turns_telemetry_on_and_off(flag: list[str], env: dict[str, str], config: str, sent: bool,
                                         tmp_path: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(config, encoding="utf-8")
    script = write_script(tmp_path / "script.json", [{"text": ANSWER}])
    with OtlpReceiver() as receiver:
        result = invoke("run", "hi", *flag, "-C", str(tmp_path), "--provider", "scripted", "--script", str(script),
                        env=_otel_env(receiver, **env))
    assert (result.returncode, result.stdout) == (0, f"{ANSWER}\n"), result.stderr
    assert bool(receiver.traces) is sent and bool(receiver.metrics) is sent
    assert "OpenTelemetry" not in result.stderr


def test_only_traces_when_metrics_are_off(tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.json", [{"text": ANSWER}])
    with OtlpReceiver() as receiver:
        result = invoke("run", "hi", "--otel", "-C", str(tmp_path), "--provider", "scripted", "--script", str(script),
                        env=_otel_env(receiver, OTEL_METRICS_EXPORTER="none"))
    assert result.returncode == 0, result.stderr
    assert receiver.traces and not receiver.metrics


def test_without_the_sdk_a_run_says_so_in_one_line_and_goes_on(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "recursive_cli.features.telemetry.otlp", None)  # (what a missing SDK does)
    script = write_script(tmp_path / "script.json", [{"text": ANSWER}])
    with OtlpReceiver() as receiver:
        result = invoke("run", "hi", "--otel", "-C", str(tmp_path), "--provider", "scripted", "--script", str(script),
                        env=_otel_env(receiver))
    assert (result.returncode, result.stdout) == (0, f"{ANSWER}\n")
    assert [line for line in result.stderr.splitlines() if "warning" in line] == [
        "warning: --otel needs the OpenTelemetry SDK: pip install 'recursive-cli[otel]'; this run exports no telemetry"]
    assert not receiver.traces


# A collector that fails leaves the SDK's threads retrying after the run: these run in a process of their own.

def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_alone(tmp_path: Path, endpoint: str, **env: str) -> Any:
    script = write_script(tmp_path / "script.json", TOOL_THEN_ANSWER)
    return run_cli("run", "list the files", "--otel", "-C", str(tmp_path), "--provider", "scripted",
                   "--script", str(script), env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, **env}, timeout=60)


def test_a_collector_that_refuses_costs_one_warning_line_not_the_run(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    done = _run_alone(tmp_path, endpoint)
    assert (done.returncode, done.stdout) == (0, f"{ANSWER}\n"), done.stderr
    warnings = [line for line in done.stderr.splitlines() if "OpenTelemetry" in line]
    assert len(warnings) == 1 and "Connection refused" in warnings[0]
    assert warnings[0].startswith(f"warning: OpenTelemetry: the run's telemetry could not be sent to {endpoint}: ")


def test_a_collector_that_hangs_is_waited_for_a_bounded_time(tmp_path: Path) -> None:
    with OtlpReceiver(hang=True) as receiver:
        done = _run_alone(tmp_path, receiver.url, OTEL_BSP_EXPORT_TIMEOUT="300")
    assert (done.returncode, done.stdout) == (0, f"{ANSWER}\n"), done.stderr
    warnings = [line for line in done.stderr.splitlines() if "OpenTelemetry" in line]
    assert warnings == [f"warning: OpenTelemetry: the collector at {receiver.url} did not answer within 0.3 s; "
                        "the rest of the run's telemetry is dropped"]


def test_a_goal_run_is_one_trace_of_its_turns_with_the_verdicts_as_events(tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.json", [
        {"text": "not yet"},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "done.txt", "content": "ok\n"}}]},
        {"text": ANSWER}])
    with OtlpReceiver() as receiver:
        result = invoke("goal", "make done.txt", "--check", "test -f done.txt", "--max-turns", "3", "--otel",
                        "-C", str(tmp_path), "--provider", "scripted", "--script", str(script),
                        env=_otel_env(receiver))
    assert result.returncode == 0, result.stderr
    named = _by_name(receiver.spans())
    [root] = named["invoke_agent recursive"]
    turns = [*named["turn 1"], *named["turn 2"]]
    assert [turn.span.parent_span_id for turn in turns] == [root.span.span_id] * 2
    assert root.attributes["recursive.mode"] == "goal" and root.attributes["recursive.num_turns"] == 2
    verdicts = [attributes_of(event.attributes)["achieved"]
                for span in (root, *turns) for event in span.span.events if event.name == "goal_evaluation"]
    assert verdicts == [False, True]


def test_a_resumed_session_is_traced_under_the_same_conversation_id(tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.json", [{"text": "first"}, {"text": ANSWER}])
    flags = ["-C", str(tmp_path), "--provider", "scripted", "--script", str(script)]
    first = invoke("run", "hi", "-o", "json", *flags)
    session = json.loads(first.stdout)["session_id"]
    with OtlpReceiver() as receiver:
        again = invoke("resume", session, "and again", "--otel", *flags, env=_otel_env(receiver))
    assert (again.returncode, again.stdout) == (0, f"{ANSWER}\n"), again.stderr
    named = _by_name(receiver.spans())
    assert sorted(named) == ["chat scripted", "invoke_agent recursive", "turn 2"]
    assert {span.attributes["gen_ai.conversation.id"] for spans in named.values() for span in spans} == {session}


def test_a_failure_inside_the_telemetry_costs_one_warning_not_the_run(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from recursive_cli.features.telemetry import spans

    def broken(self: object, event: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(spans.OtelSink, "_on_tool_started", broken)
    script = write_script(tmp_path / "script.json", TOOL_THEN_ANSWER)
    with OtlpReceiver() as receiver:
        result = invoke("run", "list", "--otel", "-C", str(tmp_path), "--provider", "scripted",
                        "--script", str(script), env=_otel_env(receiver))
    assert (result.returncode, result.stdout) == (0, f"{ANSWER}\n"), result.stderr
    assert [line for line in result.stderr.splitlines() if "OpenTelemetry" in line] == [
        "warning: OpenTelemetry: the run's telemetry stopped here (RuntimeError: boom); the run goes on"]


def test_a_loop_is_traced_as_a_loop(tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.json", [{"text": ANSWER}])
    with OtlpReceiver() as receiver:
        result = invoke("loop", "check once", "--otel", "-C", str(tmp_path), "--provider", "scripted",
                        "--script", str(script), env=_otel_env(receiver))
    assert (result.returncode, result.stdout) == (0, f"{ANSWER}\n"), result.stderr
    [root] = _by_name(receiver.spans())["invoke_agent recursive"]
    assert root.attributes["recursive.mode"] == "loop" and root.attributes["recursive.subtype"] == "success"


def test_an_interrupted_run_still_sends_its_trace_with_the_tool_call_cut_short(tmp_path: Path) -> None:
    command = "echo $$ > tool.pid; exec sleep 30"
    script = write_script(tmp_path / "script.json", [
        {"tool_calls": [{"id": "call_sleep", "name": "run_shell", "arguments": {"command": command}}]},
        {"text": "never"}])
    with OtlpReceiver() as receiver:
        proc = subprocess.Popen([sys.executable, "-m", "recursive_cli", "run", "wait", "--otel", "-C", str(tmp_path),
                                 "--provider", "scripted", "--script", str(script)],
                                env={**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url},
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pid_file = tmp_path / "tool.pid"
        wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", proc=proc)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    named = _by_name(receiver.spans())
    [tool], [root] = named["execute_tool run_shell"], named["invoke_agent recursive"]
    assert tool.span.status.code == STATUS_ERROR and tool.span.parent_span_id == named["turn 1"][0].span.span_id
    assert root.attributes["recursive.subtype"] == "interrupted" and root.attributes["recursive.exit_code"] == 130
    assert root.span.status.code == STATUS_ERROR


def test_telemetry_that_cannot_be_set_up_is_one_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recursive_cli.features.telemetry import otlp

    def unreadable(*args: object) -> None:
        raise OSError("cannot read /etc/otel/ca.pem")

    monkeypatch.setattr(otlp, "Exporters", unreadable)
    script = write_script(tmp_path / "script.json", [{"text": ANSWER}])
    result = invoke("run", "hi", "--otel", "-C", str(tmp_path), "--provider", "scripted", "--script", str(script))
    assert (result.returncode, result.stdout) == (0, f"{ANSWER}\n"), result.stderr
    assert [line for line in result.stderr.splitlines() if "OpenTelemetry" in line] == [
        "warning: OpenTelemetry could not be set up (OSError: cannot read /etc/otel/ca.pem); "
        "this run exports no telemetry"]


# Model calls outside the conversation: the goal judge's and a compaction's summary.

JUDGED = [
    {"tool_calls": [{"id": "call_write", "name": "write_file", "arguments": {"path": "a.txt", "content": "a\n"}}],
     "usage": {"input_tokens": 1000, "output_tokens": 40}},
    {"text": "wrote a.txt", "usage": {"input_tokens": 1100, "output_tokens": 10}},
    {"text": json.dumps({"achieved": True, "reason": "a.txt is there"}), "usage": {"input_tokens": 700, "output_tokens": 15}},
]


def _fake_goal(tmp_path: Path, receiver: OtlpReceiver | None) -> Any:
    """`recursive goal --until … -o stream-json` on the fake OpenAI server, with --otel when there is a receiver."""
    workspace = tmp_path / ("traced" if receiver else "untraced")
    workspace.mkdir()
    otel = ["--otel"] if receiver else []
    with FakeLLMServer(JUDGED, model="fake-model-2026-01") as server:
        return invoke("goal", "write a.txt", "--until", "a.txt exists", "-o", "stream-json", *otel,
                      "-C", str(workspace), "--provider", "openai", "--api-base", server.openai_base_url,
                      "-m", "fake-model", env=_otel_env(receiver) if receiver else {"RECURSIVE_OTEL": None})


def _shape(stdout: str) -> list[tuple[Any, ...]]:
    """A stream-json output with its ids and times left out: each line's kind and its text."""
    shape: list[tuple[Any, ...]] = []
    for line in json_lines(stdout):
        content = line.get("message", {}).get("content", []) if line["type"] in ("assistant", "user") else []
        shape.append((line["type"], line.get("subtype"), line.get("achieved"), line.get("result"),
                      json.dumps([{k: v for k, v in block.items() if k not in ("id", "tool_use_id")}
                                  for block in content], sort_keys=True)))
    return shape


def test_the_goal_judge_is_a_chat_span_under_the_turn_it_judged_and_in_the_token_metric(
        tmp_path: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(PRICE, encoding="utf-8")
    with OtlpReceiver() as receiver:
        traced = _fake_goal(tmp_path, receiver)
    assert traced.returncode == 0, traced.stderr
    named = _by_name(receiver.spans())
    [turn], [root] = named["turn 1"], named["invoke_agent recursive"]
    calls = named["chat fake-model"]
    [judge] = [span for span in calls if span.attributes.get("recursive.call") == "judge"]
    assert len(calls) == 3 and all("recursive.call" not in span.attributes for span in calls if span is not judge)
    assert judge.span.parent_span_id == turn.span.span_id and judge.span.trace_id == root.span.trace_id
    assert judge.span.kind == SPAN_KIND_CLIENT and judge.span.start_time_unix_nano >= turn.span.end_time_unix_nano
    attributes = judge.attributes
    assert attributes["gen_ai.operation.name"] == "chat" and attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "fake-model"
    assert attributes["gen_ai.response.model"] == "fake-model-2026-01"
    assert attributes["gen_ai.response.id"].startswith("chatcmpl-")
    assert attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (700, 15)
    assert attributes["recursive.cost_usd"] == pytest.approx((700 * 2.0 + 15 * 10.0) / 1e6)
    assert attributes["gen_ai.conversation.id"] == root.attributes["gen_ai.conversation.id"]
    assert judge.span.status.code != STATUS_ERROR
    # its tokens in the metric, told apart by recursive.call
    tokens: dict[tuple[str, str], float] = {}
    for point, point_attributes, _ in receiver.metric_points("gen_ai.client.token.usage"):
        key = (point_attributes.get("recursive.call", "turn"), point_attributes["gen_ai.token.type"])
        tokens[key] = tokens.get(key, 0) + point.sum
    assert tokens == {("turn", "input"): 2100, ("turn", "output"): 50, ("judge", "input"): 700, ("judge", "output"): 15}
    assert root.attributes["gen_ai.usage.input_tokens"] == 2800  # (the run's totals had it already)
    # stream-json is what it is without telemetry: the judge's answer is no assistant message there
    untraced = _fake_goal(tmp_path, None)
    assert untraced.returncode == 0, untraced.stderr
    assert _shape(traced.stdout) == _shape(untraced.stdout)
    assert "a.txt is there" not in "".join(str(shape) for shape in _shape(traced.stdout) if shape[0] == "assistant")


def test_a_judge_call_that_fails_is_a_chat_span_with_its_error(tmp_path: Path) -> None:
    replies = [{"text": "nothing to do"},
               {"error": {"status": 400, "message": "no such model for the judge"}}]
    with OtlpReceiver() as receiver, FakeLLMServer(replies, model="fake-model") as server:
        result = invoke("goal", "do it", "--until", "it is done", "--otel", "-C", str(tmp_path),
                        "--provider", "openai", "--api-base", server.openai_base_url, "-m", "fake-model",
                        env=_otel_env(receiver))
    assert result.returncode == 1 and "error: goal judge: " in result.stderr
    named = _by_name(receiver.spans())
    [judge] = [span for span in named["chat fake-model"] if span.attributes.get("recursive.call") == "judge"]
    assert judge.span.parent_span_id == named["turn 1"][0].span.span_id
    assert judge.attributes["error.type"] == "provider_error" and judge.span.status.code == STATUS_ERROR
    assert "HTTP 400" in judge.span.status.message


def test_a_retry_of_the_judge_is_an_event_on_its_span(tmp_path: Path) -> None:
    replies = [{"text": "nothing to do"},
               {"error": {"status": 429, "message": "slow down", "headers": {"retry-after": "0"}}},
               {"text": json.dumps({"achieved": True, "reason": "nothing was to be done"})}]
    with OtlpReceiver() as receiver, FakeLLMServer(replies, model="fake-model") as server:
        result = invoke("goal", "do nothing", "--until", "nothing is left", "--otel", "-C", str(tmp_path),
                        "--provider", "openai", "--api-base", server.openai_base_url, "-m", "fake-model",
                        env=_otel_env(receiver))
    assert (result.returncode, result.stdout) == (0, "nothing to do\n"), result.stderr
    calls = _by_name(receiver.spans())["chat fake-model"]
    [judge] = [span for span in calls if span.attributes.get("recursive.call") == "judge"]
    [turn_call] = [span for span in calls if span is not judge]
    assert [(event.name, attributes_of(event.attributes)["http.response.status_code"])
            for event in judge.span.events] == [("api_retry", 429)]
    assert not turn_call.span.events and judge.span.status.code != STATUS_ERROR


def test_a_compaction_summary_is_a_chat_span_under_its_turn(tmp_path: Path) -> None:
    def wake(n: int) -> dict[str, Any]:
        return {"tool_calls": [{"name": "schedule_wakeup", "arguments": {"delay_seconds": 0.05, "prompt": f"turn {n}"}}]}

    script = write_script(tmp_path / "script.json", [
        wake(2), {"text": "t1"}, wake(3), {"text": "t2"},
        wake(4), {"text": "t3", "usage": {"input_tokens": 3_500, "output_tokens": 5}},
        {"text": "THE SUMMARY", "usage": {"input_tokens": 900, "output_tokens": 30}}, {"text": "t4"},
    ])
    with OtlpReceiver() as receiver:
        result = invoke("loop", "turn 1", "--otel", "-C", str(tmp_path), "--max-context-tokens", "4000",
                        "--provider", "scripted", "--script", str(script), "-o", "stream-json",
                        env=_otel_env(receiver))
    assert result.returncode == 0, result.stderr
    lines = json_lines(result.stdout)
    assert [line["subtype"] for line in lines if line.get("subtype") == "compaction"] == ["compaction"]
    assert "THE SUMMARY" not in [block.get("text") for line in lines if line["type"] == "assistant"
                                 for block in line["message"]["content"]]
    named = _by_name(receiver.spans())
    [summary] = [span for span in named["chat scripted"] if span.attributes.get("recursive.call") == "compaction"]
    [turn] = named["turn 4"]
    assert summary.span.parent_span_id == turn.span.span_id and summary.span.kind == SPAN_KIND_CLIENT
    attributes = summary.attributes
    assert attributes["gen_ai.operation.name"] == "chat" and attributes["gen_ai.provider.name"] == "scripted"
    assert attributes["gen_ai.request.model"] == attributes["gen_ai.response.model"] == "scripted"
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (900, 30)
    [compacted] = [event for event in turn.span.events if event.name == "compaction"]
    # the summary was asked for before the turn's own call, which then ran on the compacted conversation
    [answer] = [span for span in named["chat scripted"] if span.span.parent_span_id == turn.span.span_id
                and span is not summary]
    assert summary.span.end_time_unix_nano <= answer.span.start_time_unix_nano
    assert attributes["gen_ai.response.finish_reasons"] == answer.attributes["gen_ai.response.finish_reasons"]
    assert compacted.time_unix_nano <= answer.span.start_time_unix_nano
    tokens = {(attrs.get("recursive.call"), attrs["gen_ai.token.type"]): point.sum
              for point, attrs, _ in receiver.metric_points("gen_ai.client.token.usage")
              if attrs.get("recursive.call")}
    assert tokens == {("compaction", "input"): 900, ("compaction", "output"): 30}


def test_subagents_model_and_tool_calls_are_spans_under_their_task_call(tmp_path: Path) -> None:
    agents = json.dumps({"a": {"description": "Agent A", "prompt": "AGENT A"},
                         "b": {"description": "Agent B", "prompt": "AGENT B"}})
    release = threading.Event()

    def task(call_id: str, agent: str) -> dict[str, Any]:
        return {"id": call_id, "name": "task", "arguments": {"description": f"task {agent}", "prompt": "look",
                                                              "subagent_type": agent}}

    def listing(call_id: str, **more: Any) -> dict[str, Any]:
        return {"tool_calls": [{"id": call_id, "name": "list_dir", "arguments": {}}],
                "usage": {"input_tokens": 300, "output_tokens": 3}, **more}

    replies = [{"tool_calls": [task("call_a", "a"), task("call_b", "b")], "usage": {"input_tokens": 1000, "output_tokens": 20}},
               listing("call_l1", hold=release),  # answered once both subagents have asked: they run at once
               listing("call_l2"),
               {"text": "a report", "usage": {"input_tokens": 400, "output_tokens": 7}},
               {"text": "a report", "usage": {"input_tokens": 400, "output_tokens": 7}},
               {"text": ANSWER, "usage": {"input_tokens": 1500, "output_tokens": 10}}]
    with OtlpReceiver() as receiver, FakeLLMServer(replies, model="fake-model") as server:
        def watch() -> None:
            wait_until(lambda: len(server.requests) >= 3, timeout=30)
            release.set()

        watcher = threading.Thread(target=watch)
        watcher.start()
        result = invoke("run", "look twice", "--otel", "--no-session", "--no-checkpoints", "--agents", agents,
                        "-C", str(tmp_path), "--provider", "openai", "--api-base", server.openai_base_url,
                        "-m", "fake-model", env=_otel_env(receiver))
        watcher.join()
    assert (result.returncode, result.stdout) == (0, f"{ANSWER}\n"), result.stderr
    spans = receiver.spans()
    named = _by_name(spans)
    assert sorted(named) == ["chat fake-model", "execute_tool list_dir", "execute_tool task",
                             "invoke_agent recursive", "turn 1"]  # no turn of the subagents' own
    [turn] = named["turn 1"]
    tasks = {span.attributes["gen_ai.tool.call.id"]: span for span in named["execute_tool task"]}
    assert sorted(tasks) == ["call_a", "call_b"]
    assert all(span.span.parent_span_id == turn.span.span_id for span in tasks.values())
    main_calls = [span for span in named["chat fake-model"] if span.span.parent_span_id == turn.span.span_id]
    assert len(main_calls) == 2 and all("recursive.call" not in span.attributes for span in main_calls)
    for call_id, agent in (("call_a", "a"), ("call_b", "b")):
        task_span = tasks[call_id]
        assert task_span.attributes["recursive.subagent.type"] == agent
        assert task_span.attributes["recursive.subagent.status"] == "completed"
        under = [span for span in spans if span.span.parent_span_id == task_span.span.span_id]
        calls = sorted((span for span in under if span.name == "chat fake-model"),
                       key=lambda span: span.span.start_time_unix_nano)
        [tool] = [span for span in under if span.name == "execute_tool list_dir"]
        assert len(under) == 3 and len(calls) == 2
        assert [span.attributes["recursive.call"] for span in calls] == ["subagent", "subagent"]
        assert [span.attributes["gen_ai.response.finish_reasons"] for span in calls] == [["tool_calls"], ["stop"]]
        assert [span.attributes["gen_ai.usage.input_tokens"] for span in calls] == [300, 400]
        assert calls[0].attributes["gen_ai.provider.name"] == "openai"
        assert calls[0].span.end_time_unix_nano <= tool.span.start_time_unix_nano
        assert tool.span.end_time_unix_nano <= calls[1].span.start_time_unix_nano
        assert task_span.span.start_time_unix_nano <= calls[0].span.start_time_unix_nano
        assert calls[1].span.end_time_unix_nano <= task_span.span.end_time_unix_nano
    assert sorted(span.attributes["gen_ai.tool.call.id"] for span in named["execute_tool list_dir"]) == [
        "call_l1", "call_l2"]
    tokens: dict[tuple[str, str], float] = {}
    for point, attributes, _ in receiver.metric_points("gen_ai.client.token.usage"):
        key = (attributes.get("recursive.call", "turn"), attributes["gen_ai.token.type"])
        tokens[key] = tokens.get(key, 0) + point.sum
    assert tokens == {("turn", "input"): 2500, ("turn", "output"): 30,
                      ("subagent", "input"): 1400, ("subagent", "output"): 20}


def test_a_subagents_model_call_that_fails_is_an_error_span_under_its_task_call(tmp_path: Path) -> None:
    agents = json.dumps({"a": {"description": "Agent A", "prompt": "AGENT A"}})
    replies = [{"tool_calls": [{"id": "call_a", "name": "task",
                                "arguments": {"description": "task a", "prompt": "look", "subagent_type": "a"}}]},
               {"error": {"status": 400, "message": "no such model"}},
               {"text": ANSWER}]
    with OtlpReceiver() as receiver, FakeLLMServer(replies, model="fake-model") as server:
        result = invoke("run", "look", "--otel", "--no-session", "--agents", agents, "-C", str(tmp_path),
                        "--provider", "openai", "--api-base", server.openai_base_url, "-m", "fake-model",
                        env=_otel_env(receiver))
    assert (result.returncode, result.stdout) == (0, f"{ANSWER}\n"), result.stderr
    spans = receiver.spans()
    [task] = _by_name(spans)["execute_tool task"]
    [failed] = [span for span in spans if span.span.parent_span_id == task.span.span_id]
    assert failed.name == "chat fake-model" and failed.attributes["recursive.call"] == "subagent"
    assert failed.span.status.code == STATUS_ERROR and failed.attributes["error.type"] == "provider_error"
    assert "HTTP 400" in failed.span.status.message
    assert task.attributes["recursive.subagent.status"] == "failed" and task.span.status.code == STATUS_ERROR
