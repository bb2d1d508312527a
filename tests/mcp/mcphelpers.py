"""Helpers of the MCP tests: the demo server (demo_server.py beside this file) as a stdio entry
or running over HTTP, its pid files, `.mcp.json` text, and the demo zygote that makes starting
a demo server cheap. (No __init__.py in this folder: a package named `mcp` would hide the SDK.)

A demo entry runs demo_launch.py, a small process that, when $DEMO_ZYGOTE names a running
zygote (the `demo_dir` fixture sees to it), has a server forked from it serve its own stdio, and
otherwise execs demo_server.py. `demo_entry(direct=True)` spawns demo_server.py itself."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SERVER = Path(__file__).with_name("demo_server.py")
LAUNCHER = Path(__file__).with_name("demo_launch.py")
ZYGOTE = Path(__file__).with_name("demo_zygote.py")


DEMO_VARIABLES = ("DEMO_DIR", "DEMO_ZYGOTE")  # (a server gets only what its entry's `env` gives it)


def demo_entry(*extra: str, direct: bool = False, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The `.mcp.json` entry that runs the demo server over stdio: through the launcher, or with
    `direct`, as `python demo_server.py` (the SDK imported in that very process); its `env`
    passes $DEMO_DIR and $DEMO_ZYGOTE on, and `env`."""
    given = {**{name: f"${{{name}:-}}" for name in DEMO_VARIABLES}, **(env or {})}
    if direct:
        return {"command": sys.executable, "args": [str(SERVER), *extra], "env": given}
    return {"command": sys.executable, "args": ["-S", "-I", str(LAUNCHER), *extra], "env": given}


def demo_env() -> dict[str, str]:
    """$DEMO_DIR and $DEMO_ZYGOTE as they are set now, for a server started without a config."""
    return {name: os.environ[name] for name in DEMO_VARIABLES if name in os.environ}


def zygote() -> Iterator[str]:
    """Run a demo zygote; yield the path of its socket (for $DEMO_ZYGOTE)."""
    folder = Path(tempfile.mkdtemp(prefix="demo-zygote-"))  # (short: a socket path has 107 bytes at most)
    path = folder / "socket"
    proc = subprocess.Popen([sys.executable, str(ZYGOTE), str(path)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        if proc.stdout.readline() != "ready\n":
            raise AssertionError(f"the demo zygote did not start (exit code {proc.wait(timeout=10)})")
        yield str(path)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        path.unlink(missing_ok=True)
        folder.rmdir()


def servers_json(**servers: dict[str, Any]) -> str:
    return json.dumps({"mcpServers": servers})


def started_pids(folder: Path) -> list[int]:
    """The pids of the demo servers started so far, in order."""
    files = sorted(folder.glob("pid-*"), key=lambda p: int(p.name.split("-")[1]))
    return [int(p.read_text()) for p in files]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(demo_dir: Path, transport: str) -> Iterator[str]:
    """Run the demo server over `transport` (http or sse); yield its URL."""
    port = free_port()
    entry = demo_entry(transport, str(port))
    proc = subprocess.Popen([entry["command"], *entry["args"]], env={**os.environ},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, proc, 30, f"the demo {transport} server")
    try:
        yield f"http://127.0.0.1:{port}/" + ("mcp" if transport == "http" else "sse")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def wait_for_port(port: int, proc: subprocess.Popen[Any], timeout: float, what: str) -> None:
    """Wait until `proc` listens on `port` of loopback; killed and an AssertionError when it
    exits first or takes longer than `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"{what} did not start") from None
            time.sleep(0.05)


def command_or_skip(name: str, missing: str, in_ci: str) -> str:
    """The path of the command `name`: the test skips saying `missing` where it is not
    installed, and fails saying `in_ci` in CI, which must have it."""
    import pytest

    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(in_ci)
        pytest.skip(missing)
    return path


def time_server() -> str:
    """The published `mcp-server-time` (PyPI), in the test extra."""
    return command_or_skip("mcp-server-time", "mcp-server-time is not installed (pip install -e '.[test]')",
                           "mcp-server-time is missing: it is in the test extra")
