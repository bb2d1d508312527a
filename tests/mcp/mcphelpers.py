"""Helpers of the MCP tests: the demo server (demo_server.py beside this file) as a stdio entry
or running over HTTP, its pid files, and `.mcp.json` text. (No __init__.py in this folder: a
package named `mcp` would hide the SDK.)"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SERVER = Path(__file__).with_name("demo_server.py")


def demo_entry(*extra: str) -> dict[str, Any]:
    """The `.mcp.json` entry that runs the demo server over stdio."""
    return {"command": sys.executable, "args": [str(SERVER), *extra]}


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
    proc = subprocess.Popen([sys.executable, str(SERVER), transport, str(port)], env={**os.environ},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"the demo {transport} server did not start") from None
            time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/" + ("mcp" if transport == "http" else "sse")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
