"""Hostile MCP servers (tests/mcp/hostile_server.py) against `recursive run` and against the
official `mcp` SDK's client, side by side (issue 36): peak RSS, bytes written to disk on the
server's behalf, wall time, and what became of one tool call.

    notices   after `initialize`, 64 MiB of `notifications/message`, then it serves as usual
    junk      after `initialize`, 64 MiB of lines that are not JSON, then it serves as usual
    flood     once it listed its tools, 400 MiB of `ping` requests (1 KiB ids, so each answer
              is as big), and it never reads its stdin again
    schema    it lists, beside `echo`, a tool whose input schema is 15 MiB of JSON

(a) `recursive run` against the instant model server (bench/instant_server.py), whose first
reply calls `mcp__h__echo` and second says done; `--strict-mcp-config --mcp-config JSON`,
sessions on (the server's log is `mcp/h.log` in the session folder), checkpoints off.
"request" is the first model request's bytes (the tool list goes into every one).
(b) the SDK's client (`mcp.ClientSession` over `mcp.client.stdio.stdio_client`, the server's
stderr to a file): initialize, list_tools, one call of `echo`; "request" is the JSON of the
tool list it got (what an agent built on it would send the model).

Both get MCP_TOOL_TIMEOUT / read_timeout_seconds of 30 s, and each run is killed after 120 s.
"disk" is what the client wrote to files and its stderr (a file here) on the server's behalf:
our `mcp/h.log` and warnings; the SDK's errlog (the server's stderr) and its own log lines.
Peak RSS is the child's `wait4` rusage: the largest of it and its descendants (the server).

    python bench/hostile_mcp.py [--cases notices,flood,schema] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness import PYTHON, RECURSIVE, ServerProcess, child_env, scratch_dir, table, write_json

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "mcp" / "hostile_server.py"
CASES = {"notices": ["--notices", "64"], "junk": ["--junk", "64"], "flood": ["--flood", "400"],
         "schema": ["--huge-schema", "15"]}
CALL_TIMEOUT = 30.0
KILL_AFTER = 120.0
MB = 1 << 20


def measured(argv: list[str], env: dict[str, str], cwd: str, out: Path) -> tuple[float, float, int, bool]:
    """Run `argv`, stdout to `out` (stderr beside it); wall s, peak RSS MB, exit code, killed."""
    started = time.perf_counter()
    with open(out, "wb") as stdout, open(out.with_suffix(".err"), "wb") as stderr:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                start_new_session=True)
        killed = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - started > KILL_AFTER and not killed:
                os.killpg(proc.pid, 9)
                killed = True
            time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - started, usage.ru_maxrss / 1024, proc.returncode, killed


def ours(case: str) -> dict[str, Any]:
    work = Path(scratch_dir(f"ours-{case}"))
    (work / "ws").mkdir()
    config = json.dumps({"mcpServers": {"h": {"command": PYTHON, "args": [str(HOSTILE), *CASES[case]]}}})
    env = child_env(RECURSIVE_HOME=str(work / "home"), RECURSIVE_API_KEY="x",
                    MCP_TOOL_TIMEOUT=str(int(CALL_TIMEOUT * 1000)))
    with ServerProcess(2, tool="mcp__h__echo", arguments={"text": "hi"}) as server:
        argv = [RECURSIVE, "run", "--provider", "openai", "--api-base", server.base_url, "-m", "bench",
                "--max-steps", "3", "--no-checkpoints", "--strict-mcp-config", "--mcp-config", config,
                "-o", "stream-json", "-C", str(work / "ws"), "call the tool"]
        wall, rss, code, killed = measured(argv, env, str(work), work / "out")
        sizes = server.stats()["sizes"]
    logs = sum(path.stat().st_size for path in (work / "home").rglob("mcp/*.log")) + (work / "out.err").stat().st_size
    results = [block for line in (work / "out").read_text().splitlines() if line.startswith('{"type":"user"')
               for block in json.loads(line)["message"]["content"] if block.get("type") == "tool_result"]
    outcome = "killed" if killed else (results[0]["content"] if results else f"exit {code}, no call")
    return {"client": "recursive run", "case": case, "peak_rss_mb": rss, "disk_mb": logs / MB,
            "request_mb": (sizes[0] / MB) if sizes else 0.0, "wall_s": wall, "outcome": outcome}


def theirs(case: str) -> dict[str, Any]:
    work = Path(scratch_dir(f"sdk-{case}"))
    argv = [PYTHON, __file__, "--sdk-client", str(work / "errlog"), PYTHON, str(HOSTILE), *CASES[case]]
    wall, rss, code, killed = measured(argv, child_env(), str(work), work / "out")
    try:
        report = json.loads((work / "out").read_text())
    except ValueError:
        report = {"outcome": f"exit {code}", "tools_bytes": 0}
    disk = (work / "out.err").stat().st_size + ((work / "errlog").stat().st_size if (work / "errlog").exists() else 0)
    return {"client": "mcp SDK ClientSession", "case": case, "peak_rss_mb": rss, "disk_mb": disk / MB,
            "request_mb": report["tools_bytes"] / MB, "wall_s": wall,
            "outcome": "killed" if killed else report["outcome"]}


async def sdk_client(errlog_path: str, argv: list[str]) -> dict[str, Any]:
    """The SDK's client: initialize, list_tools, call `echo`; what came of it."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    outcome, tools_bytes = "", 0
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    with open(errlog_path, "w") as errlog:
        try:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT) as session:
                await session.initialize()
                tools = await session.list_tools()
                tools_bytes = len(tools.model_dump_json(by_alias=True, exclude_none=True))
                result = await session.call_tool("echo", {"text": "hi"})
                outcome = result.model_dump_json(exclude_none=True)[:100]
        except Exception as exc:  # (what a hostile server made of the call)
            leaf: BaseException = exc
            while getattr(leaf, "exceptions", None):  # (an exception group's first leaf)
                leaf = leaf.exceptions[0]  # type: ignore[attr-defined]
            outcome = f"{type(leaf).__name__}: {leaf}"[:100]
    return {"outcome": outcome, "tools_bytes": tools_bytes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--json", default=None)
    parser.add_argument("--sdk-client", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sdk_client:
        print(json.dumps(asyncio.run(sdk_client(args.sdk_client[0], args.sdk_client[1:]))))
        return
    rows = []
    for case in args.cases.split(","):
        for run in (ours, theirs):
            rows.append(run(case))
            print(f"  {case}: {rows[-1]['client']} done", file=sys.stderr)
    headers = ["case", "client", "peak RSS MB", "disk MB", "request MB", "wall s", "the call"]
    print(table(headers, [[r["case"], r["client"], r["peak_rss_mb"], r["disk_mb"], r["request_mb"], r["wall_s"],
                           r["outcome"][:70]] for r in rows]))
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
