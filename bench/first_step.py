"""Start-up of a one-step `recursive run`, both providers: time to the first request and to exit.

The setting of issue 16's first goal: sessions and checkpoints on (the defaults), a workspace
of `--files` small files (default 1,000, in folders of 100), one step answered at once with
the final text by the instant server. Per provider, over `--runs` runs after a warm-up (the
shadow checkpoint repository already exists then, as for every run after a workspace's first):

    first request   server's arrival stamp − the moment the child was spawned (same clock)
    exit            wall time of the whole process
    after answer    exit − first request: the turn's end, the result, the session and checkpoint
                    close, interpreter teardown
    CPU             user + sys of the process and its children (git)
    peak RSS        of the process (its largest child's if larger)

`--pythonpath DIR` puts DIR first on PYTHONPATH for every run, so a copy of another revision
(`git archive REV recursive_cli | tar -x -C DIR`) is measured with the same interpreter and
server: `--compare DIR` runs both, interleaved, and prints them side by side.

    python bench/first_step.py [--runs 10] [--files 1000] [--compare DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from harness import (
    RECURSIVE,
    ChildRun,
    ServerProcess,
    agent_env,
    median,
    model_flag,
    run_child,
    scratch_dir,
    table,
    write_json,
)

PROVIDERS = ("openai", "anthropic")


def make_workspace(files: int) -> str:
    """A fresh folder of `files` small text files, 100 to a folder."""
    root = Path(scratch_dir("workspace"))
    for i in range(files):
        folder = root / f"d{i // 100:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i % 100:03d}.txt").write_text(f"file {i}\n", encoding="utf-8")
    return str(root)


def one_step_argv(provider: str, server: ServerProcess, workspace: str) -> list[str]:
    base = server.base_url if provider == "openai" else server.root_url
    return [RECURSIVE, "run", "--provider", provider, "--api-base", base, *model_flag(provider), "-C", workspace,
            "say done"]


def timed_run(provider: str, workspace: str, env: dict[str, str]) -> dict[str, float]:
    """One one-step run: seconds to the first request and to exit, CPU seconds, peak RSS MB."""
    with ServerProcess(1) as server:
        run: ChildRun = run_child(one_step_argv(provider, server, workspace), env=env)
        arrivals = server.arrivals()
    if run.returncode or len(arrivals) != 1:
        raise SystemExit(f"recursive run --provider {provider} exited {run.returncode} after {len(arrivals)} requests")
    first = arrivals[0] - run.started
    return {"first_request_s": first, "exit_s": run.wall, "after_answer_s": run.wall - first, "cpu_s": run.cpu,
            "rss_mb": run.maxrss_mb}


def summarise(samples: list[dict[str, float]]) -> dict[str, float]:
    """Medians, plus the minimum of the exit time."""
    result = {key: median([s[key] for s in samples]) for key in samples[0]}
    result["exit_min_s"] = min(s["exit_s"] for s in samples)
    return result


def measure(variants: dict[str, dict[str, str]], workspace: str, runs: int) -> dict[str, dict[str, float]]:
    """Per variant and provider, the summary over `runs` runs; runs take turns so load lands alike."""
    labels = [(variant, provider) for variant in variants for provider in PROVIDERS]
    for variant, provider in labels:
        timed_run(provider, workspace, variants[variant])  # warm-up: bytecode, shadow repository
    samples: dict[tuple[str, str], list[dict[str, float]]] = {label: [] for label in labels}
    for _ in range(runs):
        for variant, provider in labels:
            samples[(variant, provider)].append(timed_run(provider, workspace, variants[variant]))
    return {f"{variant} {provider}".strip(): summarise(s) for (variant, provider), s in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--pythonpath", help="a source tree to run instead of the installed one")
    parser.add_argument("--compare", help="a second source tree, measured beside the installed one")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    started = time.perf_counter()
    workspace = make_workspace(args.files)
    env = agent_env(scratch_dir("home"))
    variants: dict[str, dict[str, str]] = {"": {**env, "PYTHONPATH": args.pythonpath} if args.pythonpath else env}
    if args.compare:
        variants = {"before": {**env, "PYTHONPATH": args.compare}, "after": variants[""]}
    results = measure(variants, workspace, args.runs)
    keys = ["first_request_s", "exit_s", "exit_min_s", "after_answer_s", "cpu_s", "rss_mb"]
    print(table(["run (sessions + checkpoints on)", "first request s", "exit s", "exit min s", "after answer s",
                 "CPU s", "peak RSS MB"], [[label, *(r[k] for k in keys)] for label, r in results.items()]))
    print(f"({args.runs} runs each, {args.files}-file workspace, {time.perf_counter() - started:.0f} s)")
    output: dict[str, Any] = {"runs": args.runs, "files": args.files, "results": results}
    write_json(args.json, output)


if __name__ == "__main__":
    main()
