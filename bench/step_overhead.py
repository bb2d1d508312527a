"""Per-step overhead: a long `recursive run` against the instant server, minus a raw loop.

Every step is one request answered at once with a `run_shell` call of `true`, so the time
between requests is our code plus spawning the shell. Three configurations of the CLI —
default, `--no-session`, `--no-session --no-checkpoints` — and two baselines (`raw_loop.py`:
one httpx client posting the same JSON; and the same loop also spawning `bash -c true` per
step) each run `--steps` steps and once with 1 step, so:

    wall/step = (last request − first request) / (steps − 1), from the server's clock
    CPU/step  = (CPU of the N-step run − CPU of the 1-step run) / (N − 1)   (user+sys, children included)
    overhead  = ours − raw, per step;  peak RSS = max RSS of the N-step run

Targets (issue 9): overhead ≤ 2 ms/step with sessions and checkpoints off, ≤ 5 ms with them
on; peak RSS ≤ 150 MB.

    python bench/step_overhead.py [--steps 500] [--repeats 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from harness import (BENCH, PYTHON, ChildRun, ServerProcess, agent_argv, agent_env, median, run_child,
                     scratch_dir, table, write_json)

CONFIGS = {"default": [], "--no-session": ["--no-session"],
           "--no-session --no-checkpoints": ["--no-session", "--no-checkpoints"]}
RAW = {"raw (httpx only)": [], "raw + bash -c true": ["--shell"]}
LIMITS_MS = {"default": 5.0, "--no-session": 5.0, "--no-session --no-checkpoints": 2.0}


def timed(argv: list[str], steps: int, env: dict[str, str] | None = None) -> tuple[ChildRun, float]:
    """Run `argv` against a fresh server answering `steps` requests; (child run, wall per step)."""
    with ServerProcess(steps) as server:
        run = run_child([a.replace("{base_url}", server.base_url) for a in argv], env=env)
        arrivals = server.arrivals()
    if run.returncode or len(arrivals) != steps:
        raise SystemExit(f"{argv[:3]}… exited {run.returncode} after {len(arrivals)}/{steps} requests")
    per_step = (arrivals[-1] - arrivals[0]) / (steps - 1) if steps > 1 else 0.0
    return run, per_step


def measure(argv: list[str], steps: int, repeats: int, env: dict[str, str] | None = None) -> dict[str, float]:
    """Wall and CPU ms per step (medians over repeats), whole-run wall and peak RSS."""
    walls, cpus, totals, rss = [], [], [], []
    for _ in range(repeats):
        one, _ = timed(argv, 1, env)
        run, wall = timed(argv, steps, env)
        walls.append(wall * 1000)
        cpus.append((run.cpu - one.cpu) / (steps - 1) * 1000)
        totals.append(run.wall)
        rss.append(run.maxrss_mb)
    return {"wall_ms": median(walls), "cpu_ms": median(cpus), "run_s": median(totals), "rss_mb": max(rss)}


def request_template(env: dict[str, str], workspace: str) -> Path:
    """The first request body of a real run, for the raw loop to replay."""
    with ServerProcess(1) as server:
        run_child(agent_argv(server.base_url, 10, workspace), env=env)
        body = json.loads(server.get("/first"))
    path = Path(scratch_dir("template")) / "first.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    started = time.perf_counter()
    workspace, env = scratch_dir("workspace"), agent_env(scratch_dir("home"))
    template = request_template(env, workspace)
    results: dict[str, dict[str, float]] = {}
    for label, flags in RAW.items():
        argv = [PYTHON, str(BENCH / "raw_loop.py"), "--base-url", "{base_url}", "--template", str(template), *flags]
        results[label] = measure(argv, args.steps, args.repeats)
    for label, flags in CONFIGS.items():
        argv = agent_argv("{base_url}", args.steps + 10, workspace, flags)
        results[label] = measure(argv, args.steps, args.repeats, env)
    raw, raw_shell = results["raw (httpx only)"], results["raw + bash -c true"]
    for label in CONFIGS:
        r = results[label]
        r["over_raw_wall_ms"] = r["wall_ms"] - raw["wall_ms"]
        r["over_raw_cpu_ms"] = r["cpu_ms"] - raw["cpu_ms"]
        r["over_shell_wall_ms"] = r["wall_ms"] - raw_shell["wall_ms"]
        r["over_shell_cpu_ms"] = r["cpu_ms"] - raw_shell["cpu_ms"]
    print(table(["run", "wall ms/step", "CPU ms/step", "− raw wall", "− raw CPU", "− raw+sh wall",
                 "− raw+sh CPU", "run s", "peak RSS MB"],
                [[label, r["wall_ms"], r["cpu_ms"], r.get("over_raw_wall_ms", ""), r.get("over_raw_cpu_ms", ""),
                  r.get("over_shell_wall_ms", ""), r.get("over_shell_cpu_ms", ""), r["run_s"], r["rss_mb"]]
                 for label, r in results.items()]))
    for label, limit in LIMITS_MS.items():
        over = results[label]["over_raw_wall_ms"]
        print(f"target {label}: ours − raw ≤ {limit} ms/step: {over:.2f} ms — {'met' if over <= limit else 'MISSED'}")
    rss = results["default"]["rss_mb"]
    print(f"target peak RSS ≤ 150 MB: {rss:.0f} MB — {'met' if rss <= 150 else 'MISSED'}")
    print(f"({args.steps} steps × {args.repeats} repeats, {time.perf_counter() - started:.0f} s)")
    write_json(args.json, {"steps": args.steps, "repeats": args.repeats, "results": results})


if __name__ == "__main__":
    main()
