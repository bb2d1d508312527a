"""What MCP servers add to the start-up of a `recursive run` that configures them but calls none.

One scripted reply (the final answer, no tool call), sessions on, checkpoints off; per case,
the median wall time of `--runs` runs after a warm-up:

    none          no server configured (`--strict-mcp-config`)
    python-demo   tests/mcp/demo_server.py over stdio (an MCPServer of the `mcp` SDK)
    time          mcp-server-time (PyPI), if installed
    everything    @modelcontextprotocol/server-everything through npx, if npx is there
    all           the three at once (they start in parallel)

The servers start before the first model request (which needs their tool list) and the init
line, in parallel; what a case adds over `none` is the SDK's import (~0.3-0.8 s, paid once) plus
the slowest server's start and handshake.

    python bench/mcp_startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from harness import RECURSIVE, median, run_child, scratch_dir, table

ROOT = Path(__file__).resolve().parents[1]


def cases() -> dict[str, dict[str, dict[str, object]]]:
    found: dict[str, dict[str, dict[str, object]]] = {
        "none": {},
        "python-demo": {"demo": {"command": sys.executable, "args": [str(ROOT / "tests" / "mcp" / "demo_server.py")]}},
    }
    if shutil.which("mcp-server-time"):
        found["time"] = {"time": {"command": shutil.which("mcp-server-time") or "", "args": ["--local-timezone", "UTC"]}}
    if shutil.which("npx"):
        found["everything"] = {"everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}}
    found["all"] = {name: entry for servers in found.values() for name, entry in servers.items()}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    work = Path(scratch_dir("mcp-startup"))
    script = work / "script.json"
    script.write_text(json.dumps([{"text": "done"}] * (args.runs + 1)))
    workspace = work / "ws"
    workspace.mkdir()
    env = {**os.environ, "RECURSIVE_HOME": str(work / "home"), "DEMO_DIR": str(work)}
    rows = []
    baseline = 0.0
    for name, servers in cases().items():
        argv = [RECURSIVE, "run", "hi", "--provider", "scripted", "--script", str(script), "--no-checkpoints",
                "-C", str(workspace), "--strict-mcp-config"]
        if servers:
            argv += ["--mcp-config", json.dumps({"mcpServers": servers})]
        run_child(argv, env=env)  # warm-up: caches, npx's package folder
        times = [run_child(argv, env=env).wall for _ in range(args.runs)]
        wall = median(times)
        baseline = baseline or wall
        rows.append([name, len(servers), f"{wall:.2f}", f"+{wall - baseline:.2f}" if servers else "-"])
    print(table(["case", "servers", "median wall s", "added s"], rows))


if __name__ == "__main__":
    main()
