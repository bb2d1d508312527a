"""What checkpoints cost a turn in a big working folder (250,000 files: a `/tmp`, a home).

    python bench/big_folder.py [--files 250000] [--runs 3] [--dir DIR] [--before DIR] [--json FILE]

A folder of --files one-line files (100 per folder) is made once (kept in --dir to be used
again). Each run is one `recursive run` turn with the scripted provider that writes one
file (so the turn's snapshots and a tool call's window are all taken), as an SDK `query()`
runs one turn per process. Rows, wall seconds: the first turn in the folder (a fresh
RECURSIVE_HOME: no shadow repository yet), the median of --runs later turns (same home),
and the same turn with --no-checkpoints; "per-turn cost" is a turn minus the latter.
`--before DIR` runs a checked-out revision's `recursive_cli` (`git archive main
recursive_cli | tar -x -C DIR`) in the same rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from harness import PYTHON, child_env, machine, run_child, scratch_dir, table, write_json

SCRIPT = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "note.txt", "content": "hi\n"}}]},
          {"text": "done"}]


def make_folder(root: Path, files: int) -> None:
    marker = root / ".bench-files"
    if marker.is_file() and marker.read_text() == str(files):
        return
    for i in range(files):
        folder = root / f"d{i // 10_000}" / f"s{i // 100}"
        if i % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i % 100}.txt").write_text(f"file {i}\n")
    marker.write_text(str(files))


def turn(folder: Path, home: str, script: Path, pythonpath: str | None, *flags: str) -> float:
    env = child_env(RECURSIVE_HOME=home, RECURSIVE_API_KEY="x")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    argv = [PYTHON, "-m", "recursive_cli", "run", "--provider", "scripted", "--script", str(script),
            "-C", str(folder), "--permission-mode", "accept-edits", *flags, "go"]
    run = run_child(argv, env=env, cwd=str(folder))  # (not ours: `-m` imports from the cwd first)
    assert run.returncode == 0, argv
    return run.wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=250_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", help="the big folder (made there once, kept)")
    parser.add_argument("--before", help="another revision's checkout (holding recursive_cli/)")
    parser.add_argument("--json", help="write the results here as JSON")
    args = parser.parse_args()
    folder = Path(args.dir or Path(tempfile.gettempdir()) / f"recursive-big-{args.files}")
    folder.mkdir(parents=True, exist_ok=True)
    make_folder(folder, args.files)
    script = Path(scratch_dir("script")) / "s.json"
    script.write_text(json.dumps(SCRIPT))
    ours = str(Path(__file__).resolve().parent.parent)
    revisions = {"this tree": ours, **({"before": args.before} if args.before else {})}
    rows, figures = [], {}
    for name, path in revisions.items():
        home = scratch_dir("home")
        first = turn(folder, home, script, path)
        later = statistics.median(turn(folder, home, script, path) for _ in range(args.runs))
        bare = statistics.median(turn(folder, home, script, path, "--no-checkpoints") for _ in range(args.runs))
        figures[name] = {"first turn": first, "later turn": later, "no checkpoints": bare,
                         "per-turn cost, first": first - bare, "per-turn cost, later": later - bare}
        rows += [(name, row, value) for row, value in figures[name].items()]
    print(f"{args.files:,} files in {folder}")
    print(table(["revision", "turn", "wall s"], rows))
    write_json(args.json, {"files": args.files, "machine": machine(), "s": figures})


if __name__ == "__main__":
    main()
