"""Startup time: `recursive --version`, `--help` and `tools` against typer baselines.

Each command runs `--runs` times (after one warm-up run, so the file cache is hot) and the
median and minimum wall time are reported. Baselines: `python -c "import typer"`, a bare typer
app with four subcommands of four options each, and the same app importing openai and
anthropic eagerly (what startup costs when the SDKs are not lazy). Targets from issue 9:
`--version` ≤ 1.5× import typer, `--help` ≤ 1.5× the bare app.

    python bench/startup.py [--runs 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness import PYTHON, RECURSIVE, agent_env, median, run_child, scratch_dir, table, write_json

BARE_APP = '''
import typer
{imports}
app = typer.Typer()

def make(name: str) -> None:
    def command(alpha: str = "a", beta: int = 1, gamma: bool = False, delta: float = 0.5) -> None:
        """A subcommand with four options."""
    command.__name__ = name
    app.command(name)(command)

for name in ("one", "two", "three", "four"):
    make(name)

if __name__ == "__main__":
    app()
'''
TARGETS = {"recursive --version": ("import typer", 1.5), "recursive --help": ("bare typer app --help", 1.5)}


def commands(workdir: Path) -> dict[str, list[str]]:
    """Label → argv for every command timed."""
    bare, eager = workdir / "bare_app.py", workdir / "eager_app.py"
    bare.write_text(BARE_APP.format(imports=""), encoding="utf-8")
    eager.write_text(BARE_APP.format(imports="import openai, anthropic"), encoding="utf-8")
    return {
        "import typer": [PYTHON, "-c", "import typer"],
        "bare typer app --help": [PYTHON, str(bare), "--help"],
        "eager-SDK typer app --help": [PYTHON, str(eager), "--help"],
        "recursive --version": [RECURSIVE, "--version"],
        "recursive --help": [RECURSIVE, "--help"],
        "recursive tools": [RECURSIVE, "tools"],
    }


def time_command(argv: list[str], runs: int, env: dict[str, str]) -> dict[str, float]:
    """Median and min wall seconds over `runs` runs, plus the median peak RSS in MB."""
    run_child(argv, env=env)  # warm-up
    results = [run_child(argv, env=env) for _ in range(runs)]
    if any(r.returncode for r in results):
        sys.exit(f"failed: {' '.join(argv)}")
    return {"median_s": median([r.wall for r in results]), "min_s": min(r.wall for r in results),
            "rss_mb": median([r.maxrss_mb for r in results])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    workdir = Path(scratch_dir("startup"))
    env = agent_env(scratch_dir("home"))
    started = time.perf_counter()
    results = {label: time_command(argv, args.runs, env) for label, argv in commands(workdir).items()}
    typer_s = results["import typer"]["median_s"]
    bare_s = results["bare typer app --help"]["median_s"]
    rows = [[label, r["median_s"], r["min_s"], r["median_s"] / typer_s, r["median_s"] / bare_s, r["rss_mb"]]
            for label, r in results.items()]
    print(table(["command", "median s", "min s", "× import typer", "× bare app", "RSS MB"], rows))
    verdicts = {}
    for label, (base, limit) in TARGETS.items():
        ratio = results[label]["median_s"] / results[base]["median_s"]
        verdicts[label] = {"ratio": ratio, "limit": limit, "baseline": base, "met": ratio <= limit}
        print(f"target {label} ≤ {limit}× {base}: {ratio:.2f}× — {'met' if ratio <= limit else 'MISSED'}")
    print(f"({args.runs} runs each, {time.perf_counter() - started:.0f} s)")
    write_json(args.json, {"runs": args.runs, "commands": results, "targets": verdicts})


if __name__ == "__main__":
    main()
