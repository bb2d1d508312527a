"""Growth: does the time per step rise as one session's transcript grows?

One `recursive run` of `max(marks) + 1` steps against the instant server, and the raw loops
(`raw_loop.py`, with and without spawning `bash -c true`) the same way. The server stamps
each request's arrival; the time per step near step m is the median gap between consecutive
requests over a window of steps ending at m. Each step adds two messages (the tool call and
its result), so request m carries 2m messages; the request size is shown too, since bytes
sent is the one cost allowed to grow. Targets (issue 9): ours − raw ≤ 3 ms at 1,000 messages
(step 500) and ≤ 10 ms at 5,000 (step 2,500); flat, not rising with the transcript.

    python bench/growth.py [--marks 10,100,500,1000,2500,5000] [--flags '--no-session'] [--json FILE]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from harness import (
    BENCH,
    PYTHON,
    ServerProcess,
    agent_argv,
    agent_env,
    median,
    request_template,
    run_child,
    scratch_dir,
    step_intervals,
    table,
    write_json,
)

TARGETS_MS = {1000: 3.0, 5000: 10.0}  # messages in the request → allowed ms/step over raw


def window(mark: int) -> int:
    """How many steps before a mark are pooled: enough to tame noise, few enough to stay 'at' it."""
    return max(5, min(20, mark // 10))


def per_mark(argv: list[str], marks: Sequence[int], env: dict[str, str] | None = None) -> dict[int, dict[str, float]]:
    """Run one session of `max(marks) + 1` steps; per mark, median ms per step and request KB."""
    steps = max(marks) + 1
    with ServerProcess(steps) as server:
        run = run_child([a.replace("{base_url}", server.base_url) for a in argv], env=env)
        stats = server.stats()
    if run.returncode or stats["requests"] != steps:
        raise SystemExit(f"{argv[:3]}… exited {run.returncode} after {stats['requests']}/{steps} requests")
    gaps = step_intervals(stats["arrivals"])  # gaps[i]: from request i+1 to request i+2
    return {m: {"ms_per_step": median(gaps[m - window(m):m]) * 1000, "request_kb": stats["sizes"][m - 1] / 1024,
                "peak_rss_mb": run.maxrss_mb}
            for m in marks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--marks", default="10,100,500,1000,2500,5000", help="comma-separated step numbers")
    parser.add_argument("--flags", default="", help="extra flags for `recursive run`, e.g. '--no-session'")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    marks = sorted(int(m) for m in args.marks.split(","))
    started = time.perf_counter()
    workspace, env = scratch_dir("workspace"), agent_env(scratch_dir("home"))
    template = request_template(env, workspace)
    raw = [PYTHON, str(BENCH / "raw_loop.py"), "--base-url", "{base_url}", "--template", str(template)]
    runs = {"raw": per_mark(raw, marks), "raw + bash -c true": per_mark([*raw, "--shell"], marks),
            "recursive run": per_mark(agent_argv("{base_url}", max(marks) + 10, workspace, args.flags.split()),
                                      marks, env)}
    ours, base = runs["recursive run"], runs["raw"]
    rows = [[m, 2 * m, ours[m]["request_kb"], base[m]["ms_per_step"], runs["raw + bash -c true"][m]["ms_per_step"],
             ours[m]["ms_per_step"], ours[m]["ms_per_step"] - base[m]["ms_per_step"]] for m in marks]
    print(table(["step", "messages", "request KB", "raw ms", "raw+sh ms", "ours ms", "ours − raw ms"], rows))
    for messages, limit in TARGETS_MS.items():
        if messages // 2 in ours:
            over = ours[messages // 2]["ms_per_step"] - base[messages // 2]["ms_per_step"]
            print(f"target ours − raw ≤ {limit:g} ms at {messages} messages: {over:.2f} ms — "
                  f"{'met' if over <= limit else 'MISSED'}")
    print(f"peak RSS of the {max(marks) + 1}-step run: {ours[marks[-1]]['peak_rss_mb']:.0f} MB "
          f"(raw: {base[marks[-1]]['peak_rss_mb']:.0f} MB); {time.perf_counter() - started:.0f} s")
    write_json(args.json, {"marks": marks, "flags": args.flags, "runs": runs})


if __name__ == "__main__":
    main()
