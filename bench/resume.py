"""End-to-end `recursive resume` time and peak RSS for sessions of 1k, 10k and 100k messages.

Run: python bench/resume.py [--sizes 1000,10000,100000] [--json FILE]
Each session is written with the real session writer (see session_load.py), then resumed by
the real CLI with the scripted provider answering at once, so what is timed is process start,
loading, orphan repair, rebuilding the runtime and one instant turn.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from harness import RECURSIVE, child_env, run_child
from session_load import messages, write

TARGET_10K_S = 0.5


def prepare(home: Path, workspace: Path, count: int) -> tuple[str, Path]:
    """A session of `count` messages and a script with enough replies to answer after it."""
    session_id = f"bench-{count}"
    conversation = messages(count)
    write(home / "sessions" / session_id, conversation)
    meta_path = home / "sessions" / session_id / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta.update(provider="scripted", model="scripted", workspace=str(workspace), status="completed")
    meta_path.write_text(json.dumps(meta))
    replies = sum(1 for m in conversation if m.role == "assistant") + 10  # a few resumes
    script = home / f"{session_id}.json"
    script.write_text(json.dumps([{"text": "ok"}] * replies))
    return session_id, script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        home, workspace = Path(tmp) / "home", Path(tmp) / "ws"
        workspace.mkdir()
        env = child_env(RECURSIVE_HOME=str(home))
        print(f"{'messages':>9}  {'resume s':>9}  {'CPU s':>6}  {'peak RSS MB':>11}")
        for count in map(int, args.sizes.split(",")):
            session_id, script = prepare(home, workspace, count)
            runs = [run_child([RECURSIVE, "resume", session_id, "go on", "--script", str(script),
                               "--no-checkpoints"], env=env) for _ in range(3)]
            best = min(runs, key=lambda run: run.wall)
            # 3: sessions over the transcript limit (50,000 messages) load, then stop at once.
            assert all(run.returncode in (0, 3) for run in runs), [run.returncode for run in runs]
            rows.append({"messages": count, "wall_s": best.wall, "cpu_s": best.cpu, "maxrss_mb": best.maxrss_mb})
            print(f"{count:>9}  {best.wall:>9.3f}  {best.cpu:>6.3f}  {best.maxrss_mb:>11.0f}")
    ten_k = next((r for r in rows if r["messages"] == 10_000), None)
    if ten_k:
        verdict = "met" if ten_k["wall_s"] <= TARGET_10K_S else "missed"
        print(f"target: resume of 10k messages ≤ {TARGET_10K_S} s: {ten_k['wall_s']:.3f} s — {verdict}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
