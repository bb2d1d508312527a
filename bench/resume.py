"""End-to-end `recursive resume` time and peak RSS for sessions of 1k, 10k and 100k messages.

Run: python bench/resume.py [--sizes 1000,10000,100000] [--runs 3] [--compare DIR] [--json FILE]
Each session is written with the real session writer (see session_load.py), then resumed by
the real CLI with the scripted provider answering at once, so what is timed is process start,
loading, orphan repair, rebuilding the runtime and one instant turn. The transcript is synced
to disk before the runs, so that no run pays for writing back the one just written; each size
is resumed `--runs` times and the median (and the best) is shown. `--compare DIR` resumes each
session as well with DIR first on PYTHONPATH (another revision's copy: `git archive REV
recursive_cli | tar -x -C DIR`), the runs of both taking turns.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from harness import RECURSIVE, child_env, run_child
from session_load import messages, write

TARGET_10K_S = 0.5


def prepare(home: Path, workspace: Path, count: int, resumes: int = 10) -> tuple[str, Path]:
    """A session of `count` messages and a script with enough replies for `resumes` resumes."""
    session_id = f"bench-{count}"
    conversation = messages(count)
    write(home / "sessions" / session_id, conversation)
    meta_path = home / "sessions" / session_id / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta.update(provider="scripted", model="scripted", workspace=str(workspace), status="completed")
    meta_path.write_text(json.dumps(meta))
    replies = sum(1 for m in conversation if m.role == "assistant") + resumes  # one per resume
    script = home / f"{session_id}.json"
    script.write_text(json.dumps([{"text": "ok"}] * replies))
    return session_id, script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=3, help="resumes of each session (per variant)")
    parser.add_argument("--compare", help="a second source tree, resumed beside the installed one")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        home, workspace = Path(tmp) / "home", Path(tmp) / "ws"
        workspace.mkdir()
        env = child_env(RECURSIVE_HOME=str(home))
        variants = {"": env}
        if args.compare:
            variants = {"before": {**env, "PYTHONPATH": args.compare}, "after": env}
        print(f"{'messages':>9}  {'':>6}  {'resume s (median, best)':>23}  {'CPU s':>6}  {'peak RSS MB':>11}")
        for count in map(int, args.sizes.split(",")):
            session_id, script = prepare(home, workspace, count, args.runs * len(variants))
            os.sync()
            argv = [RECURSIVE, "resume", session_id, "go on", "--script", str(script), "--no-checkpoints"]
            runs: dict[str, list] = {label: [] for label in variants}
            for _ in range(args.runs):  # taking turns, so load from elsewhere hits both alike
                for label, variant_env in variants.items():
                    runs[label].append(run_child(argv, env=variant_env))
            for label, done in runs.items():
                # 3: sessions over the transcript limit (50,000 messages) load, then stop at once.
                assert all(run.returncode in (0, 3) for run in done), [run.returncode for run in done]
                wall = statistics.median(run.wall for run in done)
                best = min(run.wall for run in done)
                cpu = statistics.median(run.cpu for run in done)
                rss = max(run.maxrss_mb for run in done)
                rows.append({"messages": count, "variant": label or "installed", "wall_s": wall,
                             "best_s": best, "cpu_s": cpu, "maxrss_mb": rss})
                print(f"{count:>9}  {label:>6}  {wall:>14.3f} {best:>8.3f}  {cpu:>6.3f}  {rss:>11.0f}")
    ten_k = next((r for r in rows if r["messages"] == 10_000 and r["variant"] in ("installed", "after")), None)
    if ten_k:
        verdict = "met" if ten_k["wall_s"] <= TARGET_10K_S else "missed"
        print(f"target: resume of 10k messages ≤ {TARGET_10K_S} s: {ten_k['wall_s']:.3f} s — {verdict}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
