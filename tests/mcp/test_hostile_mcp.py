"""Hostile MCP servers (hostile_server.py) through `recursive run` (issue 36): none costs a key,
the disk or the memory, nor takes another server's calls."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clitools import CliResult, invoke, json_lines, write_script
from fakeserver import FakeLLMServer
from mcphelpers import servers_json

from recursive_cli.features.mcp.logfile import LOG_CAP
from recursive_cli.features.mcp.rpc import SOON_CAP
from recursive_cli.features.mcp.tools import DESCRIPTION_CAP, TOOLS_CAP

HOSTILE = Path(__file__).with_name("hostile_server.py")
HOSTILE_HTTP = Path(__file__).with_name("hostile_http_server.py")
SECRETS = {"RECURSIVE_API_KEY": "sk-recursive-secret", "OPENAI_API_KEY": "sk-openai-secret",
           "ANTHROPIC_API_KEY": "sk-ant-secret", "AWS_SECRET_ACCESS_KEY": "aws-secret"}
MIB = 1 << 20
# peak RSS of `recursive run` and its server, more than enough: a deaf server made it 447 MB before
PEAK_BOUND = 200 * MIB


def hostile(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(HOSTILE), *args], **({"env": env} if env else {})}


@contextlib.contextmanager
def hostile_http(*args: str) -> Iterator[dict[str, Any]]:
    """hostile_http_server.py running; its entry."""
    proc = subprocess.Popen([sys.executable, str(HOSTILE_HTTP), *args], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield {"type": "http", "url": f"http://127.0.0.1:{int(proc.stdout.readline())}/mcp"}
    finally:
        proc.kill()
        proc.wait(timeout=10)


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def run(workspace: Path, replies: list[dict[str, Any]], config: str,
        env: dict[str, str | None] | None = None) -> tuple[CliResult, list[dict[str, Any]]]:
    script = write_script(workspace.parent / "script.json", replies)
    result = invoke("run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                    "--mcp-config", config, "-o", "stream-json", env=env)
    return result, json_lines(result.stdout)


def tool_results(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [block for line in lines if line["type"] == "user"
            for block in line["message"]["content"] if block.get("type") == "tool_result"]


def warnings(result: CliResult | subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("warning: MCP")]


# --- 1. the environment: no key reaches a server ------------------------------------------------

def test_a_server_gets_only_the_safe_variables_and_its_own_env(workspace: Path, tmp_path: Path) -> None:
    dump = tmp_path / "env.json"
    entry = hostile("--dump-env", str(dump), env={"GIVEN": "yes", "FROM_VAR": "${MY_TOKEN}", "TERM": "own-term"})
    result, lines = run(workspace, [call("mcp__h__echo", text="hi"), {"text": "done"}], servers_json(h=entry),
                        env={**SECRETS, "MY_TOKEN": "tok-123", "TERM": "xterm", "SOMETHING_ELSE": "x"})
    assert result.returncode == 0, result.stderr
    assert tool_results(lines)[0]["content"] == 'hostile:echo:{"text": "hi"}'
    text = dump.read_text()
    got = json.loads(text)
    assert not any(secret in text for secret in SECRETS.values())
    assert got["GIVEN"] == "yes" and got["FROM_VAR"] == "tok-123"  # its `env`, ${VAR} expanded
    assert got["TERM"] == "own-term"  # (its `env` wins)
    assert got["PATH"] == os.environ["PATH"] and got["HOME"] == os.environ["HOME"]
    inherited = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
    assert set(got) - inherited - {"GIVEN", "FROM_VAR"} <= {"LC_CTYPE"}  # (Python sets it in a C locale)


# --- 2. the disk: a server's log stops at its cap --------------------------------------------------

def test_a_flood_of_log_notices_or_junk_lines_stops_at_the_logs_cap(workspace: Path, isolated_home: Path) -> None:
    flood = str(3 * LOG_CAP // MIB)  # MiB: three logs' worth
    config = servers_json(h=hostile("--notices", flood), j=hostile("--junk", flood, "--label", "j"))
    result, lines = run(workspace, [call("mcp__h__echo", text="still here"), call("mcp__j__echo", text="me too"),
                                    {"text": "done"}], config)
    assert result.returncode == 0, result.stderr
    assert [r["content"] for r in tool_results(lines)] == ['hostile:echo:{"text": "still here"}',
                                                           'j:echo:{"text": "me too"}']  # read and answered
    full = "(the log is full at 8 MiB: the server's stderr and notices past it are not kept)\n"
    for name, line in (("h", "[info flood] nnn"), ("j", "(not JSON from the server, skipped: jjj")):
        (log,) = isolated_home.rglob(f"mcp/{name}.log")
        assert LOG_CAP <= log.stat().st_size < LOG_CAP + 4096
        text = log.read_text()
        assert text.startswith(line) and text.endswith(full)


def test_an_http_servers_flood_of_log_notices_stops_at_the_logs_cap(workspace: Path, isolated_home: Path) -> None:
    with hostile_http("--notices", str(2 * LOG_CAP // MIB)) as entry:
        result, lines = run(workspace, [call("mcp__h__echo", text="x"), {"text": "done"}], servers_json(h=entry))
    assert result.returncode == 0, result.stderr
    assert tool_results(lines)[0]["content"] == '{"text": "x"}'
    (log,) = isolated_home.rglob("mcp/h.log")
    assert LOG_CAP <= log.stat().st_size < LOG_CAP + 4096


# --- 3. the memory: a server that asks and never reads is cut off ----------------------------------

PEAK = """import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024))
sys.exit(code)
"""


def run_measured(workspace: Path, replies: list[dict[str, Any]], config: str,
                 env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], int]:
    """`recursive run` in a process of its own under a small one that reads its peak RSS (its
    servers' included) with getrusage(RUSAGE_CHILDREN): what it took, and those bytes."""
    script = write_script(workspace.parent / "script.json", replies)
    peak = workspace.parent / "peak"
    done = subprocess.run([sys.executable, "-c", PEAK, str(peak), sys.executable, "-m", "recursive_cli", "run", "go",
                           "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                           "--mcp-config", config, "-o", "stream-json"],
                          env={**os.environ, **env}, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=300)
    return done, int(peak.read_text())


@pytest.mark.parametrize("method", ["ping", "roots/list"])
def test_a_server_that_floods_requests_and_never_reads_is_cut_off(workspace: Path, method: str) -> None:
    config = servers_json(h=hostile("--flood", "400", "--flood-method", method), ok=hostile("--label", "ok"))
    done, peak = run_measured(workspace, [call("mcp__h__echo", text="hi"), call("mcp__ok__echo", text="hi"),
                                          call("mcp__h__echo", text="again"), {"text": "done"}], config,
                              env={"MCP_TOOL_TIMEOUT": "30000"})  # (unbounded, a call would wait 30 s)
    assert done.returncode == 0, done.stderr
    assert peak < PEAK_BOUND, f"peak RSS {peak / MIB:.0f} MiB"
    cut = ("the server does not read its input: over 8 MiB of our answers to its requests wait unread")
    assert warnings(done) == [f"warning: MCP server 'h' was cut off: {cut}; going on without it"]
    first, other, again = tool_results(json_lines(done.stdout))
    assert first["is_error"] and cut in first["content"]
    assert other["content"] == 'ok:echo:{"text": "hi"}'  # the run goes on, with the other server
    assert again["is_error"] and f"the MCP server 'h' is not running ({cut})" in again["content"]  # not restarted


def test_a_server_cut_off_while_it_starts_fails_to_start(workspace: Path) -> None:
    """(Its flood begins once it answered `initialize`: it never lists its tools.)"""
    result, lines = run(workspace, [{"text": "done"}], servers_json(h=hostile("--flood", "40", "--flood-at",
                                                                             "initialize")))
    assert result.returncode == 0, result.stderr
    assert lines[0]["mcp_servers"] == [{"name": "h", "status": "failed"}]
    assert warnings(result) == ["warning: MCP server 'h' failed to start: the server does not read its input: over "
                                "8 MiB of our answers to its requests wait unread; going on without it"]


def test_an_http_server_that_asks_faster_than_it_takes_our_answers_is_cut_off(workspace: Path) -> None:
    with hostile_http("--flood", str(4 * SOON_CAP)) as entry:
        result, lines = run(workspace, [{"text": "done"}], servers_json(h=entry))
    assert result.returncode == 0, result.stderr
    assert lines[0]["mcp_servers"] == [{"name": "h", "status": "failed"}]
    assert warnings(result) == [f"warning: MCP server 'h' failed to start: the server sent requests faster than it "
                                f"took {SOON_CAP} answers; going on without it"]


def test_a_line_nested_too_deep_to_read_is_skipped_and_the_call_still_answered(workspace: Path) -> None:
    result, lines = run(workspace, [call("mcp__h__echo", text="deep"), {"text": "done"}],
                        servers_json(h=hostile("--deep")), env={"MCP_TOOL_TIMEOUT": "20000"})
    assert result.returncode == 0, result.stderr
    assert tool_results(lines)[0]["content"] == 'hostile:echo:{"text": "deep"}'


# --- 4. tool names: a name two tools come to goes to neither -------------------------------------

def test_two_servers_whose_tools_come_to_one_name_offer_it_from_neither(workspace: Path, tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    config = servers_json(**{"a.b": hostile("--tools", "x,y", "--label", "dot", "--record", str(record)),
                             "a_b": hostile("--tools", "x", "--label", "under", "--record", str(record))})
    result, lines = run(workspace, [call("mcp__a_b__x", path="p"), call("mcp__a_b__y"), {"text": "done"}], config)
    assert result.returncode == 0, result.stderr
    assert "mcp__a_b__x" not in lines[0]["tools"] and "mcp__a_b__y" in lines[0]["tools"]
    assert warnings(result) == [
        "warning: MCP tool 'x' of server 'a.b' and tool 'x' of server 'a_b' both come to the name mcp__a_b__x: "
        "offered from neither, so that no call goes to the wrong server (rename a server in its config)"]
    x, y = tool_results(lines)
    assert x["is_error"] and y["content"] == "dot:y:{}"
    assert [json.loads(line)["tool"] for line in record.read_text().splitlines()] == ["y"]


def test_a_server_that_changes_its_tools_to_take_anothers_name_gets_no_call(workspace: Path, tmp_path: Path) -> None:
    """`my.fs` lists `other`, and once called, `read` too: the name `mcp__my_fs__read` of the
    server `my_fs`. From then on neither has it; the secret path never reaches `my.fs`."""
    record = tmp_path / "calls.jsonl"
    config = servers_json(my_fs=hostile("--tools", "read", "--label", "good", "--record", str(record)),
                          **{"my.fs": hostile("--tools", "other", "--later", "read", "--label", "evil",
                                              "--record", str(record))})
    result, lines = run(workspace, [call("mcp__my_fs__read", path="a"), call("mcp__my_fs__other"),
                                    call("mcp__my_fs__read", path="secret"), {"text": "done"}], config)
    assert result.returncode == 0, result.stderr
    first, other, second = tool_results(lines)
    assert first["content"] == 'good:read:{"path": "a"}' and other["content"] == "evil:other:{}"
    assert second["is_error"] and "mcp__my_fs__read" in second["content"]
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(c["server"], c["tool"]) for c in calls] == [("good", "read"), ("evil", "other")]
    assert ("warning: MCP tool 'read' of server 'my_fs' and tool 'read' of server 'my.fs' both come to the name "
            "mcp__my_fs__read: offered from neither") in result.stderr


# --- 5. what goes into every model request: schemas checked and capped ---------------------------

def test_unfit_or_huge_schemas_and_too_many_tools_are_left_out_of_the_model_request(workspace: Path) -> None:
    config = servers_json(h=hostile("--bad-schemas", "15", "--many", str(TOOLS_CAP + 20)))
    with FakeLLMServer([{"text": "done"}]) as srv:
        result = invoke("run", "go", "-C", str(workspace), "--provider", "openai", "--api-base", srv.openai_base_url,
                        "-m", "fake-model", "--mcp-config", config, "--no-checkpoints",
                        env={"RECURSIVE_API_KEY": "sk-test"})
        (request,) = srv.requests
    assert result.returncode == 0, result.stderr
    body = json.dumps(request.body)
    assert len(body) < 2 * MIB  # (the 15 MiB schema went into it)
    tools = {t["function"]["name"]: t["function"] for t in request.body["tools"]}
    offered = [name for name in tools if name.startswith("mcp__h__")]
    assert len(offered) == TOOLS_CAP - 4  # echo, wordy and t0…: the first TOOLS_CAP listed, less 4 unfit
    assert not {"mcp__h__huge", "mcp__h__scalar", "mcp__h__listy", "mcp__h__loose"} & set(tools)
    assert len(tools["mcp__h__wordy"]["description"]) == DESCRIPTION_CAP
    assert tools["mcp__h__wordy"]["description"].endswith("… [truncated]")
    assert warnings(result) == [
        "warning: MCP server 'h': tool 'huge' left out: its input schema is 15.3 MB of JSON, over the 64 KB cap",
        "warning: MCP server 'h': tool 'scalar' left out: its input schema is not an object schema (type 'string')",
        "warning: MCP server 'h': tool 'listy' left out: its input schema is not a JSON object",
        "warning: MCP server 'h': tool 'loose' left out: its input schema's properties are not an object of schemas",
        f"warning: MCP server 'h': 26 tools left out, from 't{TOOLS_CAP - 6}' on: a server is offered "
        f"{TOOLS_CAP} tools and 1 MiB of their schemas and descriptions at most"]
