"""The provider layer's cost per step, alone: `provider.complete` in a loop against the instant
server, the conversation growing by the reply and one tool result per step, next to the floor
of the same requests sent raw.

In a fresh interpreter per (tree, provider), with the instant server in its own process:

    complete   CPU ms per step of `await provider.complete(messages, tools, hooks)`
    raw        CPU ms per step of the same body (built by the same provider, so its building is
               not counted) POSTed through one `httpx2.AsyncClient` and the answer read whole
    body       CPU ms per step of `provider.request_body` alone (the part that could grow)

each the mean over the `--window` steps ending at each mark (a mark of m steps is a request of
2m + 1 messages). `--pythonpath DIR` (repeatable) measures other revisions' trees (`git
archive REV recursive_cli | tar -x -C DIR`) in the same run.

    python bench/provider_step.py [--marks 5,500,2500] [--window 100] [--pythonpath DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess

from harness import PYTHON, ServerProcess, child_env, table, write_json

CHILD = r'''
import asyncio, json, sys, time
import httpx2
from recursive_cli.core.messages import Message
from recursive_cli.core.provider import NullHooks, ToolSpec

kind, url, marks, window = sys.argv[1], sys.argv[2], [int(m) for m in sys.argv[3].split(",")], int(sys.argv[4])
TOOLS = [ToolSpec("run_shell", "Run a shell command.", {"type": "object", "properties": {"command": {"type": "string"}}})]
if kind == "anthropic":
    from recursive_cli.providers.anthropic_provider import AnthropicProvider as P, PATH
    provider, endpoint = P("claude-bench", "k", url), url + PATH
else:
    from recursive_cli.providers.openai_provider import OpenAIProvider as P, PATH
    provider, endpoint = P("gpt-bench", "k", url + "/v1"), url + "/v1" + PATH
headers = {"content-type": "application/json", "authorization": "Bearer k", "anthropic-version": "2023-06-01"}

async def main():
    messages = [Message.system("You are a coding agent."), Message.user("go")]
    raw = httpx2.AsyncClient(timeout=60)
    out, spans = {}, {"complete": [], "raw": [], "body": []}
    for step in range(1, max(marks) + 1):
        t0 = time.process_time()
        completion = await provider.complete(messages, TOOLS, NullHooks())
        t1 = time.process_time()
        body = provider.request_body(messages, TOOLS)
        t2 = time.process_time()
        response = await raw.post(endpoint, content=body, headers=headers)
        response.read()
        t3 = time.process_time()
        spans["complete"].append(t1 - t0); spans["body"].append(t2 - t1); spans["raw"].append(t3 - t2)
        message = completion.message
        messages.append(message)
        for call in message.tool_calls:
            messages.append(Message.tool_result(call, "ok"))
        if step in marks:
            out[step] = {k: 1000 * sum(v[-window:]) / len(v[-window:]) for k, v in spans.items()}
    await raw.aclose(); await provider.aclose()
    print(json.dumps(out))

asyncio.run(main())
'''


def measure(kind: str, marks: list[int], window: int, pythonpath: str | None) -> dict[str, dict[str, float]]:
    env = child_env()
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    # two requests per step: the provider's and the raw one; the server answers tool calls throughout
    with ServerProcess(4 * max(marks) + 10) as server:
        proc = subprocess.run([PYTHON, "-c", CHILD, kind, server.root_url, ",".join(map(str, marks)), str(window)],
                              env=env, capture_output=True, text=True, check=True,
                              cwd="/")  # (`-c` puts the working folder first on sys.path, before PYTHONPATH)
    return {int(k): v for k, v in json.loads(proc.stdout).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--marks", default="5,500,2500")
    parser.add_argument("--window", type=int, default=100)
    parser.add_argument("--pythonpath", action="append", default=[], help="another revision's tree")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    marks = [int(m) for m in args.marks.split(",")]
    trees = [("this tree", None), *((path, path) for path in args.pythonpath)]
    rows, results = [], {}
    for label, path in trees:
        for kind in ("openai", "anthropic"):
            found = measure(kind, marks, args.window, path)
            results[f"{label} {kind}"] = found
            for mark in marks:
                r = found[mark]
                rows.append([f"{label} {kind}", 2 * mark + 1, r["complete"], r["raw"], r["complete"] - r["raw"],
                             r["body"]])
    print(table(["tree, provider", "messages", "complete ms", "raw ms", "complete − raw", "body ms"], rows))
    print(f"(CPU ms per step, mean of the {args.window} steps up to each mark)")
    write_json(args.json, {"marks": marks, "window": args.window, "results": results})


if __name__ == "__main__":
    main()
