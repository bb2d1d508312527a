"""The raw baseline: the least a Python agent loop can do per step, with one httpx2 client (the HTTP stack the SDKs and we use), no SDK.

It replays the shape of a real `recursive run` request (same system prompt, tools and stream
flag, taken from a JSON template), posts the growing message list to the server, parses the
reply (SSE or whole JSON) and appends the assistant message plus a fake tool result, until the
server answers with text. Each message is JSON-encoded once and the body is a join of the
cached pieces, so its per-step cost grows only with the bytes sent. `--shell` also spawns
`bash -c true` per step the way a real tool call would, to split process-spawn cost from ours:
through asyncio's subprocess (on Python 3.10–3.11 a watcher thread per child), or with
`--pidfd` as `run_shell` does where Linux allows (Popen, its end heard on the loop through a
pidfd: no thread), the least a spawn can cost from an asyncio loop.

    python bench/raw_loop.py --base-url http://127.0.0.1:PORT/v1 --template first.json [--shell [--pidfd]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
from typing import Any

import httpx2 as httpx

TOOL_OUTPUT = "(no output)\n\nexit code: 0 (0.0 s)"  # what run_shell returns for `true`


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


async def read_reply(response: httpx.Response, streaming: bool) -> dict[str, Any]:
    """The assistant message of a whole or streamed reply, as a Chat Completions dict."""
    if not streaming:
        return dict(json.loads(await response.aread())["choices"][0]["message"])
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    async for line in response.aiter_lines():
        if not line.startswith("data: ") or line == "data: [DONE]":
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
    steps = 0
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        while True:
            body = b'{"messages":[' + b",".join(encoded) + b"]," + rest + b"}"
            steps += 1
            async with client.stream("POST", "/chat/completions", content=body,
                                     headers={"content-type": "application/json"}) as response:
                message = await read_reply(response, streaming)
            encoded.append(_encode(message))
            if not message.get("tool_calls"):
                return steps
            for call in message["tool_calls"]:
                if shell:
                    await spawn_shell(pidfd)
                encoded.append(_encode({"role": "tool", "tool_call_id": call["id"], "content": TOOL_OUTPUT}))


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
