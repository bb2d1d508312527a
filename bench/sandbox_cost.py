"""What the command sandbox adds to one `run_shell` call (issue 29; target: ≤ 5 ms).

The real `run_shell` tool runs `true` N times in one process, as a run would, for each way of
running it: unconfined (`--sandbox off`), bubblewrap alone, bubblewrap with the Landlock
stage inside (the default where the kernel has Landlock), and with `--sandbox-network`. It
also times the one-off check a run makes at start (bubblewrap tried once) and each way's
first call (the run's sandbox starting). Prints median milliseconds per call after the first
and the difference to unconfined.

    python bench/sandbox_cost.py [--calls 60] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from recursive_cli.core.tool import ToolContext
from recursive_cli.tools.os_sandbox import CommandSandbox, _bwrap_problem, command_sandbox
from recursive_cli.tools.sandbox import WorkspaceSandbox
from recursive_cli.tools.shell import RunShellTool


def copy(sandbox: CommandSandbox, **changes: object) -> CommandSandbox:
    """`sandbox` with `changes` (its own private temp folder made at first use)."""
    fields = {name: getattr(sandbox, name) for name in ("mode", "writable", "protected", "network", "bwrap",
                                                         "landlock")}
    return CommandSandbox(**{**fields, **changes})  # type: ignore[arg-type]


async def per_call(ctx: ToolContext, calls: int) -> tuple[float, float]:
    """Milliseconds of the first call (the run's sandbox starts) and the median of the next."""
    tool = RunShellTool()
    start = time.perf_counter()
    await tool.invoke({"command": "true"}, ctx)  # (the private temp folder made, the zygote started)
    first = (time.perf_counter() - start) * 1000
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        result = await tool.invoke({"command": "true"}, ctx)
        times.append(time.perf_counter() - start)
        assert not result.is_error, result.content
    return first, statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        workspace, home = Path(temp) / "ws", Path(temp) / "home"
        workspace.mkdir()
        home.mkdir()
        confined = command_sandbox("workspace-write", workspace, protected=[home])
        ways = {
            "off (unconfined)": command_sandbox("off", workspace),
            "bubblewrap": copy(confined, landlock=False),
            "bubblewrap + Landlock (default)": confined,
            "bubblewrap + Landlock, --sandbox-network": copy(confined, network=True),
        }
        figures: dict[str, float] = {}
        firsts: dict[str, float] = {}
        for name, sandbox in ways.items():
            ctx = ToolContext(WorkspaceSandbox(workspace, protected=[home]), home, commands=sandbox)
            firsts[name], figures[name] = asyncio.run(per_call(ctx, args.calls))
            sandbox.close()
        start = time.perf_counter()
        _bwrap_problem.cache_clear()
        _bwrap_problem(confined.bwrap)
        figures["start-up check (once per run)"] = (time.perf_counter() - start) * 1000
    base = figures["off (unconfined)"]
    print(f"{'run_shell `true`':45} {'ms/call':>8} {'added':>8} {'1st call':>9}")
    for name, value in figures.items():
        added = "" if name.startswith(("off", "start-up")) else f"+{value - base:.1f}"
        first = f"{firsts[name]:.1f}" if name in firsts else ""
        print(f"{name:45} {value:8.1f} {added:>8} {first:>9}")
    if args.json:
        args.json.write_text(json.dumps({"per_call": figures, "first_call": firsts}, indent=2) + "\n")


if __name__ == "__main__":
    main()
