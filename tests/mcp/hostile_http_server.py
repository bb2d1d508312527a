"""A hostile streamable-HTTP MCP server (stdlib only), for tests/mcp/test_hostile_mcp.py: it
serves one tool, `echo`, and prints its port on stdout.

    python hostile_http_server.py [--notices MIB] [--flood N]

--notices  its answer to `tools/list` is an event stream of MIB MiB of `notifications/message`
           before the answer itself
--flood    that stream has N `ping` requests before the answer, and it takes 60 s to accept
           each answer we POST (so that they pile up on our side)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ARGS = argparse.Namespace()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, number = message.get("method"), message.get("id")
        if method is None:  # one of our answers to its requests
            if ARGS.flood:
                time.sleep(60)
            self.reply(202, b"", "application/json")
        elif number is None:  # a notification
            self.reply(202, b"", "application/json")
        elif method == "initialize":
            self.answer(number, {"protocolVersion": message["params"]["protocolVersion"],
                                 "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile-http", "version": "1"}})
        elif method == "tools/list":
            self.stream(number, {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
        elif method == "tools/call":
            self.answer(number, {"content": [{"type": "text", "text": json.dumps(message["params"]["arguments"])}]})
        else:
            self.answer(number, {})

    def do_GET(self) -> None:
        self.reply(405, b"", "text/plain")

    def do_DELETE(self) -> None:
        self.reply(200, b"", "text/plain")

    def reply(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Mcp-Session-Id", "s1")
        self.end_headers()
        self.wfile.write(body)

    def answer(self, number: Any, result: Any) -> None:
        self.reply(200, json.dumps({"jsonrpc": "2.0", "id": number, "result": result}).encode(), "application/json")

    def event(self, message: Any) -> None:
        self.wfile.write(b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n")

    def stream(self, number: Any, result: Any) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        notice = {"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "logger": "flood", "data": "n" * 1000}}
        for _ in range(int(ARGS.notices * 1024)):
            self.event(notice)
        for n in range(ARGS.flood):
            self.event({"jsonrpc": "2.0", "id": f"ping-{n}", "method": "ping"})
        self.event({"jsonrpc": "2.0", "id": number, "result": result})
        self.wfile.flush()
        self.close_connection = True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notices", type=float, default=0)
    parser.add_argument("--flood", type=int, default=0)
    parser.parse_args(namespace=ARGS)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    sys.stdout.write(f"{server.server_address[1]}\n")
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
