"""A stdio MCP server written by hand, line by line, to hold our stdio session to the corners
of the protocol that SDK servers never show: requests from the server before it answers
`initialize`, a log notification, a banner that is not JSON, a batch, a 1 MiB line, an error
answer, a request never answered, a server that does not exit when its stdin closes; and a
prompt, `greet` (its argument `who`).

    python raw_server.py RECORD_FILE

Every message it reads is appended to RECORD_FILE as a JSON line. Environment:
RAW_VERSION the revision it counters `initialize` with (default: the one offered);
RAW_DEAF=1  keep running after stdin ends (only a signal stops it);
RAW_STDERR=N  write N MiB to stderr before reading anything.
"""

from __future__ import annotations

import json
import os
import sys
import time

BIG = "x" * (1 << 20)


def send(message: object) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(number: object, result: object) -> None:
    send({"jsonrpc": "2.0", "id": number, "result": result})


def tools_list(number: object, params: dict) -> None:
    if params.get("cursor") == "page-2":
        answer(number, {"tools": [{"name": "big", "inputSchema": {"type": "object"}}]})
    else:
        answer(number, {"tools": [{"description": "no name: left out"},
                                  {"name": "echo", "title": "Echo", "inputSchema": {
                                      "type": "object", "properties": {"text": {"type": "string"}}},
                                   "annotations": {"readOnlyHint": True}},
                                  {"name": "fail"}, {"name": "hang"}],
                        "nextCursor": "page-2"})


def tools_call(number: object, params: dict) -> None:
    name = params.get("name")
    if name == "echo":  # a batch of one (2025-03-26 allowed batches)
        sys.stdout.write(json.dumps([{"jsonrpc": "2.0", "id": number, "result": {
            "content": [{"type": "text", "text": params["arguments"]["text"]}],
            "structuredContent": {"result": params["arguments"]["text"]}}}]) + "\n")
        sys.stdout.flush()
    elif name == "big":
        answer(number, {"content": [{"type": "text", "text": BIG}]})
    elif name == "fail":
        send({"jsonrpc": "2.0", "id": number, "error": {"code": -32602, "message": "unknown tool: fail"}})
    # "hang": never answered


def main() -> None:
    record = open(sys.argv[1], "a", encoding="utf-8")  # noqa: SIM115
    for _ in range(int(os.environ.get("RAW_STDERR") or 0) * 1024):
        sys.stderr.write("e" * 1023 + "\n")
    sys.stderr.flush()
    for line in sys.stdin:
        record.write(line if line.endswith("\n") else line + "\n")
        record.flush()
        message = json.loads(line)
        method, number = message.get("method"), message.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": "from-server-1", "method": "ping"})
            send({"jsonrpc": "2.0", "id": 7, "method": "roots/list"})
            send({"jsonrpc": "2.0", "id": 8, "method": "sampling/createMessage", "params": {"messages": []}})
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "warning", "logger": "raw", "data": "starting up"}})
            sys.stdout.write("a banner that is not JSON\n")
            version = os.environ.get("RAW_VERSION") or message["params"]["protocolVersion"]
            answer(number, {"protocolVersion": version, "capabilities": {"tools": {}, "prompts": {}},
                            "serverInfo": {"name": "raw", "version": "1"}})
        elif method == "tools/list":
            tools_list(number, message.get("params") or {})
        elif method == "tools/call":
            tools_call(number, message["params"])
        elif method == "prompts/list":
            answer(number, {"prompts": [{"name": "greet", "description": "Greet someone.",
                                         "arguments": [{"name": "who", "required": True}]}]})
        elif method == "prompts/get":
            who = message["params"]["arguments"]["who"]
            answer(number, {"messages": [{"role": "user", "content": {"type": "text", "text": f"Say hello to {who}."}}]})
        elif method == "ping" and number is not None:
            answer(number, {})
    record.write('{"eof": true}\n')
    record.close()
    while os.environ.get("RAW_DEAF"):
        time.sleep(1)


if __name__ == "__main__":
    main()
