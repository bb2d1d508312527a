"""The raw baseline: the least a Python agent loop can do per step: h11 framing on one asyncio connection, no SDK.

It replays the shape of a real `recursive run` request (same system prompt, tools and stream
flag, taken from a JSON template), posts the growing message list to the server, parses the
reply (SSE or whole JSON) and appends the assistant message plus a fake tool result, until the
server answers with text. Each message is JSON-encoded once and the body is a join of the
cached pieces, so its per-step cost grows only with the bytes sent. The HTTP is h11 (the
framing httpx rests on, and the one library a client cannot do without unless it writes HTTP
itself) over one keep-alive asyncio stream: no client object, pool, proxy lookup or retry.
`--shell` also spawns `bash -c true` per step the way a real tool call would, to split
process-spawn cost from ours: through asyncio's subprocess (on Python 3.10–3.11 a watcher
thread per child), or with `--pidfd` as `run_shell` does where Linux allows (Popen, its end
heard on the loop through a pidfd: no thread), the least a spawn can cost from an asyncio loop.

    python bench/raw_loop.py --base-url http://127.0.0.1:PORT/v1 --template first.json [--shell [--pidfd]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
from typing import Any
from urllib.parse import urlsplit

import h11

TOOL_OUTPUT = "(no output)\n\nexit code: 0 (0.0 s)"  # what run_shell returns for `true`


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


class Connection:
    """One HTTP/1.1 keep-alive connection framed by h11: a POST out, the body's chunks in."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self.reader, self.writer, self.host = reader, writer, host
        self.h11 = h11.Connection(h11.CLIENT)

    async def post(self, target: str, body: bytes) -> None:
        headers = [("Host", self.host), ("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        self.writer.write(self.h11.send(h11.Request(method="POST", target=target, headers=headers))
                          + self.h11.send(h11.Data(data=body)) + self.h11.send(h11.EndOfMessage()))
        await self.writer.drain()

    async def chunks(self) -> Any:
        """The response body as it arrives; raises on a status other than 200."""
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                self.h11.receive_data(await self.reader.read(1 << 16))
            elif isinstance(event, h11.Response) and event.status_code != 200:
                raise SystemExit(f"HTTP {event.status_code}")
            elif isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self.h11.start_next_cycle()
                return


async def read_reply(connection: Connection, streaming: bool) -> dict[str, Any]:
    """The assistant message of a whole or streamed reply, as a Chat Completions dict."""
    if not streaming:
        return dict(json.loads(b"".join([c async for c in connection.chunks()]))["choices"][0]["message"])
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    pending = b""
    async for chunk in connection.chunks():
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            for choice in json.loads(line[6:])["choices"]:
                delta = choice["delta"]
                text.append(delta.get("content") or "")
                for fragment in delta.get("tool_calls") or ():
                    call = calls.setdefault(fragment["index"], {"id": "", "type": "function",
                                                                "function": {"name": "", "arguments": ""}})
                    call["id"] = fragment.get("id") or call["id"]
                    call["function"]["name"] += fragment.get("function", {}).get("name", "")
                    call["function"]["arguments"] += fragment.get("function", {}).get("arguments", "")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


async def spawn_shell(pidfd: bool) -> None:
    """`bash -c true` in a new session, waited for."""
    if not pidfd:
        proc = await asyncio.create_subprocess_exec("bash", "-c", "true", start_new_session=True)
        await proc.wait()
        return
    loop = asyncio.get_running_loop()
    popen = subprocess.Popen(["bash", "-c", "true"], start_new_session=True)
    fd = os.pidfd_open(popen.pid)
    exited = loop.create_future()
    loop.add_reader(fd, exited.set_result, None)
    try:
        await exited
    finally:
        loop.remove_reader(fd)
        os.close(fd)
    popen.wait()


async def run(base_url: str, template: dict[str, Any], shell: bool, pidfd: bool = False) -> int:
    """Loop until the server stops asking for tools; returns the number of requests made."""
    streaming = bool(template.get("stream"))
    encoded = [_encode(m) for m in template.pop("messages")]
    rest = _encode(template)[1:-1]
    url = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port or 80)
    connection = Connection(reader, writer, url.netloc)
    steps = 0
    try:
        while True:
            body = b'{"messages":[' + b",".join(encoded) + b"]," + rest + b"}"
            steps += 1
            await connection.post(url.path.rstrip("/") + "/chat/completions", body)
            message = await read_reply(connection, streaming)
            encoded.append(_encode(message))
            if not message.get("tool_calls"):
                return steps
            for call in message["tool_calls"]:
                if shell:
                    await spawn_shell(pidfd)
                encoded.append(_encode({"role": "tool", "tool_call_id": call["id"], "content": TOOL_OUTPUT}))
    finally:
        writer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--template", required=True, help="JSON file: a request body to replay")
    parser.add_argument("--shell", action="store_true", help="spawn `bash -c true` per tool call")
    parser.add_argument("--pidfd", action="store_true", help="with --shell: heard through a pidfd, no thread")
    args = parser.parse_args()
    with open(args.template, encoding="utf-8") as f:
        template = json.load(f)
    asyncio.run(run(args.base_url, template, args.shell, args.pidfd))


if __name__ == "__main__":
    main()
