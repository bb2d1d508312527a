"""Run every bench script in sequence with modest defaults and print one summary.

    python bench/run_all.py [--out DIR] [--quick] [--peers DIR]

Each script's JSON goes to DIR (default: a fresh temp folder); takes 6–8 minutes
(`--quick`: about two, with fewer runs, a 1,000-step growth session and fewer rounds side by
side). `--peers`: the virtualenv holding mini-swe-agent and llm (see side_by_side.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

from harness import BENCH, PYTHON, machine


def run(script: str, out: Path, *args: str) -> dict:
    """Run one bench script (its table goes to our stdout) and load the JSON it wrote."""
    path = out / f"{Path(script).stem}.json"
    print(f"\n== {script} {' '.join(args)}", flush=True)
    subprocess.run([PYTHON, str(BENCH / script), "--json", str(path), *args], check=True)
    return dict(json.loads(path.read_text(encoding="utf-8")))


def summary(startup: dict, steps: dict, growth: dict, first: dict, peers: dict) -> list[str]:
    """One line per headline figure."""
    lines = [f"{label}: {t['ratio']:.2f}× {t['baseline']} (target ≤ {t['limit']}×)"
             for label, t in startup["targets"].items()]
    for label, r in first["results"].items():
        lines.append(f"one-step run, {label}: first request {r['first_request_s']:.3f} s, exit {r['exit_s']:.3f} s, "
                     f"peak RSS {r['rss_mb']:.0f} MB")
    for label, r in peers["results"].items():
        lines.append(f"side by side, {label}: start-up {r['startup_s']:.3f} s, {r['step_ms']:.1f} ms/step")
    raw = steps["results"]["raw (httpx only)"]
    for label in ("default", "--no-session", "--no-session --no-checkpoints"):
        r = steps["results"][label]
        lines.append(f"{label}: {r['wall_ms']:.2f} ms/step wall, {r['cpu_ms']:.2f} ms CPU; "
                     f"− raw {r['over_raw_wall_ms']:.2f} ms (raw {raw['wall_ms']:.2f}); peak RSS {r['rss_mb']:.0f} MB")
    ours, base = growth["runs"]["recursive run"], growth["runs"]["raw"]
    lines.append("growth, ours − raw ms/step: " + ", ".join(
        f"step {m}: {ours[str(m)]['ms_per_step'] - base[str(m)]['ms_per_step']:.1f}" for m in growth["marks"]))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="folder for the JSON results")
    parser.add_argument("--quick", action="store_true", help="fewer runs, shorter sessions")
    parser.add_argument("--peers", default="/tmp/peers", help="virtualenv with mini-swe-agent and llm")
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="recursive-bench-results-"))
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    startup = run("startup.py", out, "--runs", "10" if args.quick else "15")
    steps = run("step_overhead.py", out, "--repeats", "1" if args.quick else "3")
    growth = run("growth.py", out, "--marks", "10,100,500,1000" if args.quick else "10,100,500,1000,2500,5000")
    first = run("first_step.py", out, "--runs", "5" if args.quick else "10")
    peers = run("side_by_side.py", out, "--rounds", "2" if args.quick else "5", "--peers", args.peers)
    info = machine()
    (out / "machine.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    print(f"\n== summary ({info['nproc']} × {info['cpu']}, Python {info['python']}, {info['date']}, "
          f"commit {info['commit']}; {time.perf_counter() - started:.0f} s; JSON in {out})")
    print("\n".join(summary(startup, steps, growth, first, peers)))


if __name__ == "__main__":
    main()
