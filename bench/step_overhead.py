"""Per-step overhead: a long `recursive run` against the instant server, minus a raw loop.

Every step is one request answered at once with a `run_shell` call of `true`, so the time
between requests is our code plus spawning the shell. Three configurations of the CLI —
default, `--no-session`, `--no-session --no-checkpoints` — and two baselines (`raw_loop.py`:
one httpx client posting the same JSON; and the same loop also spawning `bash -c true` per
step) each run `--steps` steps and once with 1 step, so:

    wall/step = (last request − first request) / (steps − 1), from the server's clock
    process wall/step = (wall time of the N-step run − that of the 1-step run) / (N − 1)
                (issue 16's definition: start-up and exit cancel out, one-off costs of a
                first tool call do not)
    CPU/step  = (CPU of the N-step run − CPU of the 1-step run) / (N − 1)   (user+sys, children included)
    overhead  = ours − raw, per step;  peak RSS = max RSS of the N-step run

Medians over `--repeats` rounds; the runs take turns within a round, so load from elsewhere
on the machine lands on all of them alike.

Targets (issue 9): overhead ≤ 2 ms/step with sessions and checkpoints off, ≤ 5 ms with them
on; peak RSS ≤ 150 MB. Issue 16's goal 2: ours ≤ raw + bash + 0.5 ms per step, with either
provider, in a 1,000-file workspace (`--files 1000`) with checkpoints on.

`--files N` fills the workspace with N small files (100 to a folder) first, so every
checkpoint window has a real tree to look at; `--provider anthropic` runs the CLI configurations
on the Anthropic wire; `--configs` picks configurations by label (`default,--no-checkpoints`;
`--no-checkpoints` is the default configuration with checkpoints off, sessions on);
`--compare DIR` runs each configuration twice, "before" with DIR first on PYTHONPATH (a copy of
another revision: `git archive REV recursive_cli | tar -x -C DIR`) and "after" as installed
(or `--after DIR2`, another such copy), interleaved.

    python bench/step_overhead.py [--steps 500] [--repeats 3] [--files N] [--provider P]
                                  [--configs L1,L2] [--compare DIR [--after DIR2]] [--json FILE]
"""

from __future__ import annotations

import argparse
import time

from first_step import make_workspace
from harness import (
    BENCH,
    PYTHON,
    RECURSIVE,
    ChildRun,
    ServerProcess,
    agent_argv,
    agent_env,
    median,
    request_template,
    run_child,
    scratch_dir,
    table,
    write_json,
)

CONFIGS = {"default": [], "--no-session": ["--no-session"],
           "--no-session --no-checkpoints": ["--no-session", "--no-checkpoints"],
           "--no-checkpoints": ["--no-checkpoints"]}
DEFAULT_CONFIGS = ("default", "--no-session", "--no-session --no-checkpoints")
RAW = {"raw (httpx only)": [], "raw + bash -c true": ["--shell"], "raw + bash, pidfd": ["--shell", "--pidfd"]}
LIMITS_MS = {"default": 5.0, "--no-session": 5.0, "--no-session --no-checkpoints": 2.0}


def timed(argv: list[str], steps: int, env: dict[str, str] | None = None) -> tuple[ChildRun, float]:
    """Run `argv` against a fresh server answering `steps` requests; (child run, wall per step)."""
    with ServerProcess(steps) as server:
        run = run_child([a.replace("{base_url}", server.base_url).replace("{root_url}", server.root_url)
                         for a in argv], env=env)
        arrivals = server.arrivals()
    if run.returncode or len(arrivals) != steps:
        raise SystemExit(f"{argv[:3]}… exited {run.returncode} after {len(arrivals)}/{steps} requests")
    per_step = (arrivals[-1] - arrivals[0]) / (steps - 1) if steps > 1 else 0.0
    return run, per_step


def measure_once(argv: list[str], steps: int, env: dict[str, str] | None = None) -> dict[str, float]:
    """Wall and CPU ms per step, whole-run seconds and peak RSS of one N-step run (and its 1-step twin)."""
    one, _ = timed(argv, 1, env)
    run, wall = timed(argv, steps, env)
    return {"wall_ms": wall * 1000, "proc_wall_ms": (run.wall - one.wall) / (steps - 1) * 1000,
            "cpu_ms": (run.cpu - one.cpu) / (steps - 1) * 1000, "run_s": run.wall, "rss_mb": run.maxrss_mb}


def summarise(samples: list[dict[str, float]]) -> dict[str, float]:
    """Medians over the repeats; peak RSS is the max."""
    result = {key: median([s[key] for s in samples]) for key in samples[0]}
    result["rss_mb"] = max(s["rss_mb"] for s in samples)
    return result


def add_overheads(results: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Add ours − raw and ours − (raw + bash) per step, wall and CPU, to each CLI configuration."""
    raw, raw_shell = results["raw (httpx only)"], results["raw + bash -c true"]
    for label, r in results.items():
        if label in RAW:
            continue
        r["over_raw_wall_ms"] = r["wall_ms"] - raw["wall_ms"]
        r["over_shell_proc_wall_ms"] = r["proc_wall_ms"] - raw_shell["proc_wall_ms"]
        r["over_raw_cpu_ms"] = r["cpu_ms"] - raw["cpu_ms"]
        r["over_shell_wall_ms"] = r["wall_ms"] - raw_shell["wall_ms"]
        r["over_shell_cpu_ms"] = r["cpu_ms"] - raw_shell["cpu_ms"]
    return results


def report(results: dict[str, dict[str, float]]) -> None:
    """Print the table and the verdict on each target."""
    keys = ["wall_ms", "proc_wall_ms", "cpu_ms", "over_raw_wall_ms", "over_raw_cpu_ms", "over_shell_wall_ms",
            "over_shell_proc_wall_ms", "over_shell_cpu_ms", "run_s", "rss_mb"]
    print(table(["run", "wall ms/step", "process wall ms/step", "CPU ms/step", "− raw wall", "− raw CPU",
                 "− raw+sh wall", "− raw+sh process wall", "− raw+sh CPU", "run s", "peak RSS MB"],
                [[label, *(r.get(key, "") for key in keys)] for label, r in results.items()]))
    for label, r in results.items():
        config = label.removeprefix("before ").removeprefix("after ")
        if config in LIMITS_MS:
            over, limit = r["over_raw_wall_ms"], LIMITS_MS[config]
            print(f"target {label}: ours − raw ≤ {limit} ms/step: {over:.2f} ms — {'met' if over <= limit else 'MISSED'}")
        if label not in RAW:
            over = r["over_shell_wall_ms"]
            print(f"goal 2 {label}: ours − (raw + bash) ≤ 0.5 ms/step: {over:.2f} ms — "
                  f"{'met' if over <= 0.5 else 'MISSED'}")
    rss = max((r["rss_mb"] for label, r in results.items() if label not in RAW), default=0.0)
    print(f"target peak RSS ≤ 150 MB: {rss:.0f} MB — {'met' if rss <= 150 else 'MISSED'}")


def cli_argv(provider: str, max_steps: int, workspace: str, flags: list[str]) -> list[str]:
    """`recursive run` against the instant server (`{base_url}` / `{root_url}` filled in per run)."""
    if provider == "openai":
        return agent_argv("{base_url}", max_steps, workspace, flags)
    return [RECURSIVE, "run", "--provider", provider, "--api-base", "{root_url}", "--max-steps", str(max_steps),
            "-C", workspace, *flags, "run true until told to stop"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--files", type=int, default=0, help="small files in the workspace (0: empty)")
    parser.add_argument("--provider", choices=("openai", "anthropic"), default="openai")
    parser.add_argument("--configs", help="comma-separated configuration labels (default: the first three)")
    parser.add_argument("--compare", help="a second source tree, measured beside the installed one")
    parser.add_argument("--after", help="with --compare: this tree as \"after\" instead of the installed one")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    started = time.perf_counter()
    configs = [c.strip() for c in args.configs.split(",")] if args.configs else list(DEFAULT_CONFIGS)
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown configuration {unknown[0]!r}; choose from {', '.join(CONFIGS)}")
    workspace = make_workspace(args.files) if args.files else scratch_dir("workspace")
    env = agent_env(scratch_dir("home"))
    template = request_template(env, workspace)
    runs = {label: ([PYTHON, str(BENCH / "raw_loop.py"), "--base-url", "{base_url}", "--template", str(template),
                     *flags], None) for label, flags in RAW.items()}
    variants = {"": env}
    if args.compare:
        variants = {"before ": {**env, "PYTHONPATH": args.compare},
                    "after ": {**env, "PYTHONPATH": args.after} if args.after else env}
    for label in configs:
        for prefix, variant_env in variants.items():
            runs[prefix + label] = (cli_argv(args.provider, args.steps + 10, workspace, CONFIGS[label]), variant_env)
    samples: dict[str, list[dict[str, float]]] = {label: [] for label in runs}
    for _ in range(args.repeats):  # round-robin, so a burst of load elsewhere hits every run alike
        for label, (argv, run_env) in runs.items():
            samples[label].append(measure_once(argv, args.steps, run_env))
    results = {label: summarise(s) for label, s in samples.items()}
    report(add_overheads(results))
    print(f"({args.steps} steps × {args.repeats} repeats, {args.files} files, {args.provider}, "
          f"{time.perf_counter() - started:.0f} s)")
    write_json(args.json, {"steps": args.steps, "repeats": args.repeats, "files": args.files,
                           "provider": args.provider, "results": results})


if __name__ == "__main__":
    main()
