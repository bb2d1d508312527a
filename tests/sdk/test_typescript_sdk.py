"""Claude's TypeScript Agent SDK (`@anthropic-ai/claude-agent-sdk`, from npm without its optional
native binary) runs on `recursive` through `pathToClaudeCodeExecutable`.

The package is installed once per machine, into a cache folder of this user's named by its
version ($XDG_CACHE_HOME, else ~/.cache, then recursive-tests/typescript-sdk/VERSION), and
used from there while every file the install wrote is still there at its size; otherwise it
is installed again. Without node and npm, or without the registry when it must install, these
tests are skipped (say why with `-rs`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import AgentCli, system_text, tool_names

SCRIPT = Path(__file__).with_name("ts_query.mjs")
SET_SERVERS = SCRIPT.with_name("ts_set_servers.mjs")  # setMcpServers() on a streaming query
SESSIONS = SCRIPT.with_name("ts_sessions.mjs")  # listSessions() and getSessionMessages() after a query
PACKAGE = "@anthropic-ai/claude-agent-sdk"
VERSION = "0.3.333"  # the release these tests run against: a new one gets a folder of its own
MANIFEST = "installed.json"  # written last: what was installed, and every file of node_modules


def cache_folder() -> Path:
    """Where PACKAGE@VERSION is (to be) installed."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "recursive-tests" / "typescript-sdk" / VERSION


def files_of(folder: Path) -> dict[str, int]:
    """Every file under `folder/node_modules`, by path, with its size."""
    root = folder / "node_modules"
    return {str(path.relative_to(root)): path.stat().st_size for path in root.rglob("*") if path.is_file()}


def complete(folder: Path) -> bool:
    """Whether `folder` holds the whole install of PACKAGE@VERSION that its manifest lists."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        own = json.loads((folder / "node_modules" / PACKAGE / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if (manifest.get("package"), manifest.get("version"), own.get("version")) != (PACKAGE, VERSION, VERSION):
        return False
    files: dict[str, int] = manifest.get("files") or {}
    root = folder / "node_modules"
    for name, size in files.items():
        try:
            if (root / name).stat().st_size != size:
                return False
        except OSError:
            return False
    return bool(files)


def install(folder: Path) -> None:
    """Install PACKAGE@VERSION into a fresh folder beside `folder`, then put it in its place
    (what stood there, an incomplete install, is removed)."""
    fresh = folder.with_name(f".{folder.name}.{os.getpid()}.new")
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir(parents=True)
    try:
        (fresh / "package.json").write_text('{"name": "recursive-sdk-test", "private": true, "type": "module"}')
        subprocess.run(["npm", "install", "--omit=optional", "--no-audit", "--no-fund", f"{PACKAGE}@{VERSION}"],
                       cwd=fresh, check=True, capture_output=True, text=True, timeout=300)
        manifest = {"package": PACKAGE, "version": VERSION, "files": files_of(fresh)}
        (fresh / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
        if folder.exists():
            stale = folder.with_name(f".{folder.name}.{os.getpid()}.old")
            folder.rename(stale)
            shutil.rmtree(stale, ignore_errors=True)
        fresh.rename(folder)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the cache's lock (another test process may be installing the same version)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(f"{folder.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def ts_sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the test's driver script and the cached install's node_modules beside it."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the TypeScript SDK")
    cached = cache_folder()
    with locked(cached):
        if not complete(cached):
            try:
                install(cached)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
                pytest.skip(f"npm could not install {PACKAGE}@{VERSION}: {(getattr(exc, 'stderr', '') or '')[-500:]}")
    folder = tmp_path_factory.mktemp("ts-sdk")
    (folder / "node_modules").symlink_to(cached / "node_modules")  # ESM finds packages next to the script
    for script in (SCRIPT, SET_SERVERS, SESSIONS):
        shutil.copy(script, folder / script.name)
    return folder


def ts_query(folder: Path, cli: AgentCli, prompt: str, options: dict[str, Any] | None = None,
             permissions: dict[str, Any] | None = None, calc: bool = False) -> dict[str, Any]:
    spec = {"cli": str(cli.path), "cwd": str(cli.workspace), "prompt": prompt, "options": options or {},
            "permissions": permissions, "calc": calc}
    proc = subprocess.run(["node", str(folder / SCRIPT.name), json.dumps(spec)], cwd=folder,
                          env={**os.environ, **cli.env()}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_a_cached_install_is_used_only_while_complete(tmp_path: Path) -> None:
    """(The cache itself: a folder counts only while every file of its manifest is there at its size;
    `ts_sdk` installs again into one that does not.)"""
    folder = tmp_path / VERSION
    own = folder / "node_modules" / PACKAGE
    own.mkdir(parents=True)
    (own / "package.json").write_text(json.dumps({"name": PACKAGE, "version": VERSION}))
    (own / "sdk.mjs").write_text("export const query = 1;\n")
    assert not complete(folder)  # no manifest: npm did not finish
    (folder / MANIFEST).write_text(json.dumps({"package": PACKAGE, "version": VERSION, "files": files_of(folder)}))
    assert complete(folder)
    (own / "sdk.mjs").write_text("export const query = 12;\n")
    assert not complete(folder)  # a file of another size
    (own / "sdk.mjs").unlink()
    assert not complete(folder)  # a file gone
    (own / "sdk.mjs").write_text("export const query = 1;\n")
    assert complete(folder)
    (folder / MANIFEST).write_text(json.dumps({"package": PACKAGE, "version": "0.0.1", "files": files_of(folder)}))
    assert not complete(folder)  # another version's install in the folder of this one


def test_typescript_query(ts_sdk: Path, agent_cli: AgentCli) -> None:
    agent_cli.server.add({"tool_calls": [{"name": "run_shell", "arguments": {"command": "rm -rf build"}}]},
                         {"tool_calls": [{"name": "write_file", "arguments": {"path": "t.txt", "content": "model"}}]},
                         {"text": "done"})

    out = ts_query(ts_sdk, agent_cli, "go", {"systemPrompt": "You are a TS test.", "maxTurns": 5},
                   permissions={"Write": {"behavior": "allow", "merge": {"content": "from ts"}}})

    assert out["error"] is None
    assert out["asked"] == [["Bash", {"command": "rm -rf build"}],  # (`ls` would run unasked: it only reads)
                            ["Write", {"file_path": str(agent_cli.workspace / "t.txt"), "content": "model"}]]
    assert (agent_cli.workspace / "t.txt").read_text() == "from ts"
    kinds = [m["type"] for m in out["messages"]]
    assert kinds[0] == "system" and kinds[-1] == "result" and "assistant" in kinds
    result = out["messages"][-1]
    assert (result["subtype"], result["is_error"], result["result"], result["num_turns"]) == ("success", False, "done", 3)
    assert [d["tool_name"] for d in result["permission_denials"]] == ["Bash"]
    # the TypeScript SDK sends the system prompt in `initialize`, not as a flag
    assert system_text(agent_cli.server.requests[0].body).startswith("You are a TS test.")
    agent_cli.lines()


def test_typescript_query_error_result(ts_sdk: Path, agent_cli: AgentCli) -> None:
    agent_cli.server.add({"tool_calls": [{"name": "read_file", "arguments": {"path": "missing.txt"}}]},
                         {"text": "never asked for"})

    out = ts_query(ts_sdk, agent_cli, "read", {"maxTurns": 1})

    result = out["messages"][-1]
    assert (result["type"], result["subtype"], result["is_error"]) == ("result", "error_max_turns", True)
    assert result["errors"] and out["error"] is not None  # the SDK raises, as it does for Claude Code
    assert out["error"].endswith("Reached maximum number of turns (1)")


def test_typescript_sdk_mcp_server_in_the_programs_own_process(ts_sdk: Path, agent_cli: AgentCli) -> None:
    """createSdkMcpServer + tool(): recursive reaches the program's own server through
    `mcp_message` control requests, as Claude Code does."""
    agent_cli.server.add({"tool_calls": [{"name": "mcp__calc__add", "arguments": {"a": 2, "b": 40}}]},
                         {"text": "It is 42."})

    out = ts_query(ts_sdk, agent_cli, "what is 2 + 40?", {"allowedTools": ["mcp__calc__add"], "maxTurns": 3},
                   calc=True)

    assert out["error"] is None, out
    assert out["added"] == [{"a": 2, "b": 40}]
    init = out["messages"][0]
    assert {"name": "calc", "status": "connected"} in init["mcp_servers"] and "mcp__calc__add" in init["tools"]
    assert out["messages"][-1]["result"] == "It is 42."
    tool_message = agent_cli.server.requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"] == "42"
    shown = [block for m in out["messages"] if m["type"] == "user" for block in m["message"]["content"]]
    assert [block["content"] for block in shown] == [[{"type": "text", "text": "42"}]]  # blocks, as Claude Code


def test_typescript_query_api_error_in_claude_codes_shape(ts_sdk: Path, agent_cli: AgentCli) -> None:
    agent_cli.server.add({"error": {"status": 400, "message": "model: no-such-model"}})

    out = ts_query(ts_sdk, agent_cli, "Reply with: pong", {"maxTurns": 1, "model": "no-such-model"})

    synthetic, result = (m for m in out["messages"] if m["type"] in ("assistant", "result"))
    assert synthetic["message"]["model"] == "<synthetic>" and synthetic["api_error_status"] == 400
    assert (result["subtype"], result["is_error"], result["terminal_reason"], result["api_error_status"]) == (
        "success", True, "api_error", 400)
    assert result["result"] == synthetic["message"]["content"][0]["text"] and "no-such-model" in result["result"]
    assert out["error"] is not None and result["result"] in out["error"]  # the SDK throws with the cause
    agent_cli.lines()


def test_typescript_sdk_external_mcp_servers_come_in_initialize(ts_sdk: Path, agent_cli: AgentCli,
                                                               tmp_path: Path) -> None:
    """This SDK sends `mcpServers` in the `initialize` request (`--await-initialize`), not as
    `--mcp-config`, and ends the session unless the answer says they were applied."""
    raw = Path(__file__).parents[1] / "mcp" / "raw_server.py"
    servers = {"raw": {"type": "stdio", "command": sys.executable, "args": [str(raw), str(tmp_path / "raw.jsonl")]}}
    agent_cli.server.add({"tool_calls": [{"name": "mcp__raw__echo", "arguments": {"text": "over initialize"}}]},
                         {"text": "done"})

    out = ts_query(ts_sdk, agent_cli, "echo", {"mcpServers": servers, "allowedTools": ["mcp__raw__echo"],
                                               "maxTurns": 3})

    assert out["error"] is None, out
    init = out["messages"][0]
    assert {"name": "raw", "status": "connected"} in init["mcp_servers"]
    tool_message = agent_cli.server.requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"] == "over initialize"
    assert any(line.get("method") == "tools/call" for line in map(json.loads, (tmp_path / "raw.jsonl").read_text()
                                                                  .splitlines()) if "eof" not in line)


def test_typescript_sdk_set_mcp_servers_adds_then_removes_a_server(ts_sdk: Path, agent_cli: AgentCli,
                                                                  tmp_path: Path) -> None:
    """`setMcpServers({raw})` between two prompts starts the server (the second prompt's model
    request offers its tool, and the call runs); `setMcpServers({})` then removes it."""
    raw = Path(__file__).parents[1] / "mcp" / "raw_server.py"
    servers = {"raw": {"type": "stdio", "command": sys.executable, "args": [str(raw), str(tmp_path / "raw.jsonl")]}}
    agent_cli.server.add({"text": "one"}, {"tool_calls": [{"name": "mcp__raw__echo", "arguments": {"text": "set"}}]},
                         {"text": "two"})
    spec = {"cli": str(agent_cli.path), "cwd": str(agent_cli.workspace), "servers": servers}
    proc = subprocess.run(["node", str(ts_sdk / SET_SERVERS.name), json.dumps(spec)], cwd=ts_sdk,
                          env={**os.environ, **agent_cli.env()}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["error"] is None, out
    assert out["set"] == {"added": ["raw"], "removed": [], "errors": {}}
    assert out["cleared"] == {"added": [], "removed": ["raw"], "errors": {}}
    offered = [tool_names(request.body) for request in agent_cli.server.requests]
    assert ["mcp__raw__echo" in names for names in offered] == [False, True, True]
    tool_message = agent_cli.server.requests[2].body["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"] == "set"


def test_sessions_are_read_back_with_the_typescript_session_api(ts_sdk: Path, agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "", "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
                         {"text": "It says hello."})
    (agent_cli.workspace / "notes.txt").write_text("hello\n")
    spec = {"cli": str(agent_cli.path), "cwd": str(agent_cli.workspace), "prompt": "What do the notes say?"}

    proc = subprocess.run(["node", str(ts_sdk / SESSIONS.name), json.dumps(spec)], cwd=ts_sdk,
                          env={**os.environ, **agent_cli.env()}, capture_output=True, text=True, timeout=120)

    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["error"] is None
    (result,) = [m for m in out["messages"] if m["type"] == "result"]
    assert [(s["sessionId"], s["summary"]) for s in out["sessions"]] == [(result["session_id"], "What do the notes say?")]
    assert [m["type"] for m in out["read"]] == ["user", "assistant", "user", "assistant"]
    streamed = [m["uuid"] for m in out["messages"] if m["type"] in ("assistant", "user")]
    assert [m["uuid"] for m in out["read"][1:]] == streamed
    assert out["read"][1]["message"]["content"][0]["name"] == "Read"
