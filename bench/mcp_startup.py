"""What MCP servers add to the start-up of a one-step run that configures them but calls none:
`recursive run` beside Claude Code, on the same servers.

Each agent runs against the instant server (bench/instant_server.py), whose first reply is the
final answer; `recursive` with sessions on and checkpoints off, Claude Code as in
side_by_side.py (`-p`, `--output-format json`, ANTHROPIC_BASE_URL on loopback), both with
`--strict-mcp-config --mcp-config JSON`. Per case and agent, the median wall and CPU (user +
sys, the servers' included: they are our children) of `--runs` runs after a warm-up:

    none          no server configured
    python-demo   tests/mcp/demo_server.py over stdio (an MCPServer of the `mcp` SDK)
    demo-http     the same server over streamable HTTP, started once by the bench (so a case
                  is the client's cost alone: its connection, handshake and tool list)
    time          mcp-server-time (PyPI), if installed
    everything    @modelcontextprotocol/server-everything through npx, if npx is there
    all           the three at once (they start in parallel)

Both agents start the servers before their first model request (which needs the tool list).
What a case adds over `none` is the servers' own start and handshake, plus the client's: since
`recursive` speaks MCP itself it loads no SDK (it did: +0.45 s of CPU).

    python bench/mcp_startup.py [--runs 5] [--no-claude] [--before EXECUTABLE]

`--before` adds another `recursive` (an older checkout's entry point, say) in the same rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from harness import BENCH_MODEL, RECURSIVE, ServerProcess, child_env, median, run_child, scratch_dir, table
from side_by_side import claude_binary

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "tests" / "mcp" / "demo_server.py"
TASK = "say hi"


def cases(http_url: str) -> dict[str, dict[str, dict[str, object]]]:
    found: dict[str, dict[str, dict[str, object]]] = {
        "none": {},
        "python-demo": {"demo": {"command": sys.executable, "args": [str(DEMO)]}},
        "demo-http": {"remote": {"type": "http", "url": http_url}},
    }
    if shutil.which("mcp-server-time"):
        found["time"] = {"time": {"command": shutil.which("mcp-server-time") or "", "args": ["--local-timezone", "UTC"]}}
    if shutil.which("npx"):
        found["everything"] = {"everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}}
    found["all"] = {name: entry for case, servers in found.items() if case != "demo-http"
                    for name, entry in servers.items()}
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("the demo HTTP server did not start") from None
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-claude", action="store_true", help="leave Claude Code out")
    parser.add_argument("--before", help="another recursive executable to run beside this one")
    args = parser.parse_args()
    work = Path(scratch_dir("mcp-startup"))
    workspace = work / "ws"
    workspace.mkdir()
    ours = child_env(RECURSIVE_HOME=str(work / "home"), RECURSIVE_API_KEY="x", DEMO_DIR=str(work))
    claude = None if args.no_claude else claude_binary()
    theirs = child_env(HOME=scratch_dir("claude-home"), ANTHROPIC_API_KEY="x", DEMO_DIR=str(work),
                       CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1")
    rows = []
    base: dict[str, tuple[float, float]] = {}
    port = free_port()
    demo = subprocess.Popen([sys.executable, str(DEMO), "http", str(port)], env=ours, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_for(port)
    with ServerProcess(1) as server, contextlib.ExitStack() as stack:
        stack.callback(demo.terminate)
        theirs["ANTHROPIC_BASE_URL"] = server.root_url
        for name, servers in cases(f"http://127.0.0.1:{port}/mcp").items():
            mcp = ["--strict-mcp-config", "--mcp-config", json.dumps({"mcpServers": servers})]
            agents = {"recursive": ([RECURSIVE, "run", TASK, "--provider", "openai", "--api-base", server.base_url,
                                     "-m", BENCH_MODEL, "--no-checkpoints", "-C", str(workspace), *mcp], ours)}
            if args.before:
                agents["recursive (before)"] = ([args.before, *agents["recursive"][0][1:]], ours)
            if claude:
                agents["Claude Code"] = ([claude, "-p", TASK, "--output-format", "json", *mcp], theirs)
            for agent, (argv, env) in agents.items():
                run_child(argv, env=env, cwd=str(workspace))  # warm-up: caches, npx's package folder
                runs = [run_child(argv, env=env, cwd=str(workspace)) for _ in range(args.runs)]
                wall, cpu = median([r.wall for r in runs]), median([r.cpu for r in runs])
                base.setdefault(agent, (wall, cpu))
                added = f"+{wall - base[agent][0]:.2f} / +{cpu - base[agent][1]:.2f}" if servers else "-"
                rows.append([name, agent, len(servers), f"{wall:.2f}", f"{cpu:.2f}", added,
                             "ok" if all(r.returncode == 0 for r in runs) else "FAILED"])
    print(table(["case", "agent", "servers", "wall s", "cpu s", "added wall / cpu s", "exit"], rows))
    if not claude:
        print("(Claude Code left out: --no-claude, or no claude_agent_sdk/_bundled/claude here)")


if __name__ == "__main__":
    main()
