"""Checkpoint snapshot time on a 10,000-file workspace: first, unchanged, changed; and a restore.

    python bench/snapshot.py [--files 10000] [--repeats 7] [--json FILE]

A synthetic source tree (100 folders × 100 files of ~300 bytes, plus a .gitignore'd build
folder) is snapshotted through the real GitCheckpointer, as the runtime does before and
after each turn. Rows:

- first snapshot: an empty shadow index, so every file is hashed (a new workspace's first turn);
- unchanged: nothing changed since the last snapshot (a turn that only read files);
- 10 / 1,000 changed: that many files rewritten, plus one created and one deleted;
- floor: one bare `git ls-files -o -m -d` walk of the same tree, the least any snapshot costs;
- restore: plan + apply of "before the last turn" after a 10-file turn.

Times are medians (and minimum) over --repeats runs, wall clock, in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from harness import machine, scratch_dir, table, write_json

from recursive_cli.features.checkpoints.checkpointer import GitCheckpointer
from recursive_cli.features.checkpoints.restore import apply_restore, plan_restore

PER_FOLDER = 100


def make_tree(root: Path, files: int) -> list[Path]:
    """`files` small source files in folders of 100, and an ignored build folder."""
    paths = []
    for i in range(files):
        folder = root / f"pkg{i // (PER_FOLDER * 10)}" / f"mod{i // PER_FOLDER}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"file{i % PER_FOLDER}.py"
        path.write_text(f"# file {i}\n" + "def f(x):\n    return x + 1\n" * 10)
        paths.append(path)
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    for i in range(500):
        (root / "build" / f"obj{i}.o").write_bytes(b"\0" * 1000)
    return paths


def timed(action: Callable[[], object], prepare: Callable[[], object] = lambda: None,
          repeats: int = 7) -> list[float]:
    """Milliseconds of `action` per repeat, `prepare` run untimed before each."""
    samples = []
    for _ in range(repeats):
        prepare()
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", help="write the results here as JSON")
    args = parser.parse_args()
    workspace, home = Path(scratch_dir("ws")), Path(scratch_dir("home"))
    paths = make_tree(workspace, args.files)
    cp = GitCheckpointer(home, workspace, "bench")
    turn = iter(range(1, 10_000))
    snapshot = lambda: cp.snapshot(next(turn), "before")  # noqa: E731
    edits = iter(range(10_000))

    def change(count: int) -> Callable[[], None]:
        def edit() -> None:
            n = next(edits)
            for i, path in enumerate(paths[n * 7 % len(paths):][:count] or paths[:count]):
                path.write_text(f"# edit {n}.{i}\n")
            (workspace / f"new{n}.py").write_text("x = 1\n")
            (workspace / f"new{n - 1}.py").unlink(missing_ok=True)
        return edit

    rows: dict[str, list[float]] = {"first snapshot": timed(snapshot, repeats=1)}
    rows["unchanged"] = timed(snapshot, repeats=args.repeats)
    rows["10 files changed"] = timed(snapshot, change(10), args.repeats)
    rows["1,000 files changed"] = timed(snapshot, change(1000), max(3, args.repeats // 2))
    floor = ["git", "ls-files", "-z", "-t", "-o", "-m", "-d", "--exclude-standard"]
    rows["floor: one git ls-files walk"] = timed(
        lambda: subprocess.run(floor, env=cp.git.env(), cwd=workspace, capture_output=True, check=True),
        repeats=args.repeats)

    def turn_then_restore() -> None:
        number = next(turn)
        cp.snapshot(number, "before")
        change(10)()
        cp.snapshot(number, "after")
        restore_times.append(timed(lambda: apply_restore(cp, plan_restore(cp, number)), repeats=1)[0])

    restore_times: list[float] = []
    for _ in range(max(3, args.repeats // 2)):
        turn_then_restore()
    rows["restore a 10-file turn"] = restore_times

    print(f"{args.files:,} files in {args.files // PER_FOLDER} folders; git "
          f"{subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.split()[-1]}")
    print(table(["snapshot", "median ms", "min ms", "runs"],
                [(name, statistics.median(s), min(s), len(s)) for name, s in rows.items()]))
    write_json(args.json, {"files": args.files, "machine": machine(),
                           "ms": {name: {"median": statistics.median(s), "min": min(s), "runs": len(s)}
                                  for name, s in rows.items()}})


if __name__ == "__main__":
    main()
