"""What `recursive fleet` adds per task over running the same `recursive goal` directly (issue 19).

N scripted goal tasks (two steps: a shell command, then the answer; one `--check`), each in
its own workspace, run three ways on a fresh RECURSIVE_HOME each:

    direct           `recursive goal … --provider scripted` N times, one after another
    fleet c=1        `recursive fleet run TASKS.jsonl --concurrency 1` (a local Ray started in
                     the process, the same N tasks one at a time: the per-task cost is comparable)
    fleet c=K        the same with --concurrency K (default: the CPU count)

Reported: wall time of the whole command, time per task; for the fleet, the mean task duration
from results.jsonl (driver's clock, submit to result) minus the mean direct run = the overhead
per task (Ray scheduling, the worker, stream-json reading, session bundles), and the fixed cost
(wall − the tasks' own time at concurrency 1: Ray's start and shutdown, the results folder).

    python bench/fleet_overhead.py [--tasks 8] [--concurrency 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from harness import RECURSIVE, child_env, run_child, scratch_dir, table, write_json

REPLIES = [{"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo done > out.txt"}}]},
           {"text": "wrote out.txt"}]
CHECK = "test -f out.txt"


def workspaces(count: int) -> list[str]:
    return [scratch_dir(f"ws{n}") for n in range(count)]


def script_file() -> str:
    path = Path(scratch_dir("script")) / "script.json"
    path.write_text(json.dumps(REPLIES), encoding="utf-8")
    return str(path)


def direct(count: int, script: str) -> dict[str, Any]:
    """N `recursive goal` runs, one after another."""
    env = child_env(RECURSIVE_HOME=scratch_dir("home"))
    runs = []
    start = time.perf_counter()
    for workspace in workspaces(count):
        run = run_child([RECURSIVE, "goal", "write out.txt", "--check", CHECK, "--provider", "scripted",
                         "--script", script, "-C", workspace, "-o", "json"], env=env)
        assert run.returncode == 0, f"recursive goal exited {run.returncode}"
        runs.append(run.wall)
    return {"wall": time.perf_counter() - start, "task": statistics.mean(runs)}


def fleet(count: int, script: str, concurrency: int) -> dict[str, Any]:
    """One `recursive fleet run` of N tasks at `concurrency`."""
    root = Path(scratch_dir("fleet"))
    tasks = root / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{n}", "prompt": "write out.txt", "workspace": ws,
                                         "checks": [CHECK]}) + "\n"
                             for n, ws in enumerate(workspaces(count))), encoding="utf-8")
    env = child_env(RECURSIVE_HOME=str(root / "home"))
    start = time.perf_counter()
    run = run_child([RECURSIVE, "fleet", "run", str(tasks), "--provider", "scripted", "--script", script,
                     "--concurrency", str(concurrency), "--results", str(root / "out"), "-q"], env=env)
    wall = time.perf_counter() - start
    assert run.returncode == 0, f"recursive fleet run exited {run.returncode}"
    lines = [json.loads(line) for line in (root / "out" / "results.jsonl").read_text().splitlines()]
    durations = [line["duration_ms"] / 1000 for line in lines]
    return {"wall": wall, "task": statistics.mean(durations), "tasks_sum": sum(durations)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--json")
    args = parser.parse_args()
    script = script_file()
    direct(1, script)  # warm-up: the interpreter's caches, git
    one_by_one = direct(args.tasks, script)
    serial = fleet(args.tasks, script, 1)
    parallel = fleet(args.tasks, script, args.concurrency)
    overhead = serial["task"] - one_by_one["task"]
    fixed = serial["wall"] - serial["tasks_sum"]
    rows = [
        ["direct `recursive goal`", args.tasks, one_by_one["wall"], one_by_one["wall"] / args.tasks,
         one_by_one["task"], ""],
        ["fleet, concurrency 1", args.tasks, serial["wall"], serial["wall"] / args.tasks, serial["task"],
         f"{overhead * 1000:.0f} ms/task + {fixed:.1f} s fixed"],
        [f"fleet, concurrency {args.concurrency}", args.tasks, parallel["wall"], parallel["wall"] / args.tasks,
         parallel["task"], ""],
    ]
    print(table(["how", "tasks", "wall s", "wall s / task", "task s (mean)", "fleet overhead"], rows))
    write_json(args.json, {"tasks": args.tasks, "direct": one_by_one, "fleet_c1": serial,
                           "fleet_parallel": parallel, "overhead_per_task_s": overhead, "fixed_s": fixed})


if __name__ == "__main__":
    main()
