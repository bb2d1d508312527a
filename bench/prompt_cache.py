"""Prompt caching on a scripted 50-step session: billed input tokens and the cache hit ratio.

Each agent works in the same workspace of small Python files against `cache_server.py`, which
answers every step with a call of the agent's file-reading tool on the next file, then with the
final answer, and bills each request's prompt as the provider would (cache_control breakpoints
and a 5-minute prefix cache for Anthropic; automatic 1024-token prefixes in 128-token steps
for OpenAI). Each agent gets a fresh server, so a fresh cache.

    recursive openai      `recursive run` on the Chat Completions wire, -m gpt-4.1
    recursive openai responses   the same on the Responses wire (`--wire responses --no-stream`)
    recursive anthropic   `recursive run` on the Messages API, -m claude-sonnet-4-5
    Claude Code           the CLI in the claude-agent-sdk wheel, `-p … --allowedTools Read`,
                          ANTHROPIC_BASE_URL on loopback, -m claude-sonnet-4-5

Figures per agent (its steps only; side requests such as a title or a quota probe are counted
apart): the prompt tokens of all steps, how many of them were cache reads, cache writes and
plain input, the hit ratio (cache reads / prompt tokens), the input billed in plain-input
tokens (reads at the model's cache-read price, writes at its cache-write price: core/pricing.py)
and that input's cost, and whether each step's prompt began with the whole of the previous
one (a byte-stable prefix).

    python bench/prompt_cache.py [--steps 50] [--parallel 1] [--only PREFIXES] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from cache_server import CacheServer, Script, anthropic_parts, openai_text  # noqa: E402
from harness import child_env, scratch_dir  # noqa: E402
from side_by_side import claude_binary  # noqa: E402

from recursive_cli.core.messages import Usage  # noqa: E402
from recursive_cli.core.pricing import price_for  # noqa: E402

TASK = "Read each file the tool results point you to, one by one, then say done."


@dataclass
class Agent:
    label: str
    wire: str  # "openai" or "anthropic"
    model: str
    argv: list[str]
    env: dict[str, str]
    base: str  # how the server's root URL is given: "openai" (…/v1) or "anthropic"


def make_workspace(files: int) -> Path:
    """`file_001.py` … : each some 1.5 kB of distinct code."""
    folder = Path(scratch_dir("cache-workspace"))
    for number in range(1, files + 1):
        lines = [f"def function_{number}_{i}(value):\n    return value * {i} + {number}\n" for i in range(30)]
        (folder / f"file_{number:03d}.py").write_text("".join(lines), encoding="utf-8")
    return folder


def agents(workspace: Path, steps: int) -> list[Agent]:
    python = sys.executable
    home = scratch_dir("recursive-home")
    ours = child_env(RECURSIVE_HOME=home, RECURSIVE_API_KEY="x", PYTHONPATH=str(BENCH.parent))
    common = ["run", TASK, "-C", str(workspace), "--max-steps", str(steps + 5), "--no-checkpoints",
              "--permission-mode", "auto", "-q"]
    found = [Agent("recursive openai", "openai", "gpt-4.1",
                   [python, "-m", "recursive_cli", *common, "--provider", "openai", "-m", "gpt-4.1"], ours, "openai"),
             Agent("recursive openai responses", "openai", "gpt-4.1",
                   [python, "-m", "recursive_cli", *common, "--provider", "openai", "-m", "gpt-4.1",
                    "--wire", "responses", "--no-stream"], ours, "openai"),
             Agent("recursive anthropic", "anthropic", "claude-sonnet-4-5",
                   [python, "-m", "recursive_cli", *common, "--provider", "anthropic", "-m", "claude-sonnet-4-5"],
                   ours, "anthropic")]
    claude = claude_binary()
    if claude:
        env = child_env(HOME=scratch_dir("claude-home"), ANTHROPIC_API_KEY="x",
                        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
                        DISABLE_AUTOUPDATER="1")
        found.append(Agent("Claude Code", "anthropic", "claude-sonnet-4-5",
                           [claude, "-p", TASK, "--allowedTools", "Read", "--output-format", "json",
                            "--model", "claude-sonnet-4-5", "--max-turns", str(steps + 5)], env, "claude"))
    else:
        print("note: Claude Code left out: no claude_agent_sdk/_bundled/claude in this interpreter", file=sys.stderr)
    return found


def run_agent(agent: Agent, workspace: Path, steps: int, parallel: int = 1) -> dict[str, Any]:
    server = CacheServer(Script(steps, str(workspace), parallel)).start()
    env = dict(agent.env)
    argv = list(agent.argv)
    if agent.base == "claude":
        env["ANTHROPIC_BASE_URL"] = server.root_url
    else:
        argv += ["--api-base", server.root_url + ("/v1" if agent.base == "openai" else "")]
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=600,
                              stdin=subprocess.DEVNULL)
    finally:
        server.stop()
    elapsed = time.monotonic() - started
    if proc.returncode != 0:
        print(f"note: {agent.label} exited {proc.returncode}: {proc.stderr.strip()[-500:]}", file=sys.stderr)
    return summarise(agent, server, elapsed, proc.returncode)


def summarise(agent: Agent, server: CacheServer, elapsed: float, code: int) -> dict[str, Any]:
    bills = server.steps
    total = sum(b.total for b in bills)
    read = sum(b.cache_read for b in bills)
    write = sum(b.cache_write for b in bills)
    plain = sum(b.input for b in bills)
    price = price_for(agent.model)
    assert price is not None
    cost = price.cost(Usage(input_tokens=total, cache_read_tokens=read, cache_write_tokens=write))
    billed = round(cost * 1_000_000 / price.input)  # in plain-input tokens
    return {"agent": agent.label, "exit": code, "steps": len(bills), "side_requests": len(server.side),
            "prompt_tokens": total, "cache_read": read, "cache_write": write, "uncached": plain,
            "hit_ratio": round(read / total, 4) if total else 0.0, "billed_input_tokens": billed,
            "input_cost_usd": round(cost, 4), "uncached_cost_usd": round(total * price.input / 1_000_000, 4),
            "prefix_breaks": prefix_breaks(agent.wire, server.bodies), "seconds": round(elapsed, 1)}


def prefix_breaks(wire: str, bodies: list[dict[str, Any]]) -> int:
    """The steps whose prompt does not begin with the whole of the step before's."""
    def text(body: dict[str, Any]) -> bytes:
        return openai_text(body) if wire == "openai" else b"".join(part for part, _ in anthropic_parts(body))

    texts = [text(body) for body in bodies]
    return sum(1 for before, after in zip(texts, texts[1:]) if not after.startswith(before))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--parallel", type=int, default=1, help="files read per step, in one reply (default 1)")
    parser.add_argument("--only", help="comma-separated label prefixes to run")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    workspace = make_workspace(args.steps * args.parallel)
    wanted = [p.strip() for p in args.only.split(",")] if args.only else None
    rows = [run_agent(agent, workspace, args.steps, args.parallel) for agent in agents(workspace, args.steps)
            if wanted is None or any(agent.label.startswith(p) for p in wanted)]
    head = ("agent", "steps", "prompt tok", "cache read", "cache write", "uncached", "hit ratio",
            "billed in", "input $", "no-cache $", "prefix breaks")
    print(" | ".join(head))
    for row in rows:
        print(" | ".join(str(v) for v in (
            row["agent"], row["steps"], row["prompt_tokens"], row["cache_read"], row["cache_write"],
            row["uncached"], f"{row['hit_ratio']:.1%}", row["billed_input_tokens"], row["input_cost_usd"],
            row["uncached_cost_usd"], row["prefix_breaks"])))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0 if all(row["exit"] == 0 for row in rows) else 1


if __name__ == "__main__":
    os.environ.pop("CLAUDECODE", None)
    sys.exit(main())
