"""A hostile MCP server over streamable HTTP, through the real CLI (issue 36): its event-stream
lines are capped as the model APIs' are (providers/caps.py, the same cap as MCP stdio's), so a
tool answer whose line never ends costs a bounded amount of memory and an error result, and
the run goes on to its answer.

The server answers `initialize` and `tools/list` as a server should, then answers the call of
its one tool with an event stream whose first line never ends (it stops at 512 MiB). The model
is the scripted provider. (The old client held the whole line: about 1.1 GB for 1 GiB.)
"""

from __future__ import annotations

import json
from pathlib import Path

from providers.hostile import MIB, HostileServer, Peer, Request, measured_run, response, send_filler

LIMIT = 512 * MIB


def hostile_mcp(request: Request, peer: Peer) -> None:
    """Streamable HTTP, honest until its tool is called."""
    if request.method != "POST":
        peer.send(response("405 Method Not Allowed"))
        return
    message = json.loads(request.body)
    if "id" not in message:  # a notification
        peer.send(response("202 Accepted"))
        return
    result: object = {}
    if message["method"] == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "hostile", "version": "1"}}
    elif message["method"] == "tools/list":
        result = {"tools": [{"name": "big", "description": "answers without end",
                             "inputSchema": {"type": "object", "properties": {}}}]}
    elif message["method"] == "tools/call":
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: "
        if peer.send(head):
            send_filler(peer, LIMIT)
        return
    body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
    peer.send(response("200 OK", body, "Content-Type: application/json", "Mcp-Session-Id: hostile-1"))


def test_an_endless_line_from_an_mcp_server_is_cut_at_the_cap(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "mcp__x__big", "arguments": {}}]}, {"text": "done"}]))
    with HostileServer(hostile_mcp) as server:
        config = json.dumps({"mcpServers": {"x": {"type": "http", "url": f"{server.url}/mcp"}}})
        run = measured_run("run", "use big", "--provider", "scripted", "--script", str(script), "--mcp-config",
                           config, "--strict-mcp-config", "--no-session", "--no-checkpoints", "-o", "stream-json",
                           timeout=120)
        calls = [r for r in server.requests if r.method == "POST" and b'"tools/call"' in r.body]
    assert run.returncode == 0, run.stderr[-2000:]
    records = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    (result,) = [block for r in records if r["type"] == "user" for block in r["message"]["content"]]
    assert result["is_error"] is True and "over 64 MiB" in json.dumps(result["content"]), result
    assert records[-1]["result"] == "done"
    assert calls and run.peak_mib < 200, (run.peak_mib, result)
    assert "Traceback" not in run.stderr
