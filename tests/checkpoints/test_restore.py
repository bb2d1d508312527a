"""Checkpoints through the real CLI: shell edits snapshotted around every turn, then undone.

What a shell command changed may have been written by another process while it ran, so a
restore of it is refused unless forced (test_restore_conflicts.py); these tests force it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from clitools import invoke

from recursive_cli.features.sessions.reader import load_session

from .conftest import Agent, shell, state, stream, tree_bytes

TURNS = [
    # nested folders and a modified file
    "mkdir -p src/pkg/deep && printf 'x = 1\\n' > src/pkg/deep/mod.py && echo '# changed' >> README.md",
    # a deleted folder, a rename, an executable bit
    "rm -r docs && mv src/util.py src/helpers.py && chmod +x src/app.py",
    # a symlink, a binary rewrite, a file swapped for another in a nested folder
    "ln -s app.py src/link.py && printf '\\000\\001\\377\\376' > data/blob.bin"
    " && rm src/pkg/deep/mod.py && echo nested > src/pkg/deep/other.py",
    # a whole tree replaced
    "rm -rf src && mkdir src && echo fresh > src/app.py && echo gone > README.md",
]


def seed(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('app')\n")
    (workspace / "src" / "util.py").write_text("def util():\n    return 1\n")
    (workspace / "data").mkdir()
    (workspace / "data" / "blob.bin").write_bytes(bytes(range(256)) * 8)
    (workspace / "docs" / "guide").mkdir(parents=True)
    (workspace / "docs" / "guide" / "intro.md").write_text("# Intro\n")
    (workspace / "README.md").write_text("# Project\n")


def test_shell_edits_are_restored_turn_by_turn(agent: Agent, workspace: Path) -> None:
    seed(workspace)
    before = []
    for number, command in enumerate(TURNS, 1):
        before.append(state(workspace))
        agent.turn(f"turn {number}", shell(command))
    assert not (workspace / ".git").exists()  # not a git repository, and none was made
    for number in range(len(TURNS), 0, -1):
        proc = agent.checkpoints("restore", "--turn", str(number), "--force")
        assert proc.returncode == 0, proc.stderr
        assert state(workspace) == before[number - 1], f"before turn {number}"
    assert [r["turn"] for r in agent.records("rewind")] == [4, 3, 2, 1]
    assert load_session(agent.home / "sessions" / "s1").messages == []


def test_records_events_and_refs_of_each_turn(agent: Agent, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    proc = agent.turn("edit", shell("echo b >> a.txt && echo new > b.txt"), flags=("-o", "stream-json"))
    lines = stream(proc, "checkpoint")
    assert [(line["turn"], line["phase"]) for line in lines] == [(1, "before"), (1, "after")]
    assert lines[1]["files_changed"] == 2 and "files_changed" not in lines[0]
    records = agent.records("checkpoint")
    assert [(r["turn"], r["phase"], r["commit"]) for r in records] == [
        (1, "before", lines[0]["commit"]), (1, "after", lines[1]["commit"])]
    assert agent.refs() == {"head": lines[1]["commit"], "turns/1/before": lines[0]["commit"],
                            "turns/1/after": lines[1]["commit"]}
    text = agent.turn("again", shell("rm b.txt"))
    assert "checkpoint: turn 2 changed 1 file (undo: recursive checkpoints restore s1 --turn 2)" in text.stderr


def test_list_and_diff(agent: Agent, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("one\n")
    agent.turn("first task\nwith a second line", shell("echo two >> notes.txt && echo x > x.txt"))
    agent.turn("second task")
    listing = agent.checkpoints("list")
    assert listing.returncode == 0, listing.stderr
    rows = [line.split("\t") for line in listing.stdout.splitlines()]
    assert [(r[0], r[2], r[3], r[4]) for r in rows] == [("1", "2", "first task", ""),
                                                        ("2", "0", "second task", "")]
    diff = agent.checkpoints("diff", "1")
    assert diff.returncode == 0, diff.stderr
    assert "notes.txt | 1 +" in diff.stdout and "+two" in diff.stdout and "new file mode" in diff.stdout
    assert agent.checkpoints("diff", "2").stdout == ""
    whole = agent.checkpoints("diff").stdout  # every turn of the session
    assert "notes.txt" in whole and "x.txt" in whole
    missing = agent.checkpoints("diff", "9")
    assert missing.returncode == 1 and "no checkpoint for turn 9" in missing.stderr


def test_workspace_that_is_a_git_repository_is_left_byte_identical(agent: Agent, workspace: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]

    def repo(*args: str) -> None:
        subprocess.run([*git, *args], cwd=workspace, check=True, capture_output=True)

    repo("init", "-q")
    (workspace / ".gitignore").write_text("build/\n*.log\n")
    (workspace / "main.py").write_text("print(1)\n")
    (workspace / "lib.py").write_text("X = 1\n")
    repo("add", "-A")
    repo("commit", "-qm", "start")
    (workspace / "lib.py").write_text("X = 2\n")
    repo("add", "lib.py")  # a staged change: the index differs from HEAD
    (workspace / "build").mkdir()
    (workspace / "build" / "out.o").write_text("old object\n")
    dot_git = tree_bytes(workspace / ".git")
    start = state(workspace)

    agent.turn("work", shell("echo 'print(2)' > main.py && rm lib.py && echo new > new.py"
                             " && echo rebuilt > build/out.o && echo log > run.log"))
    listed = agent.checkpoints("diff", "1").stdout
    assert "main.py" in listed and "build/out.o" not in listed and "run.log" not in listed
    agent.turn("more", shell("echo again >> main.py"))
    proc = agent.checkpoints("restore", "--turn", "1", "--force")
    assert proc.returncode == 0, proc.stderr

    after = state(workspace)
    ignored = {"build/out.o", "run.log"}  # never snapshotted, so left as the turns left them
    assert {k: v for k, v in after.items() if k not in ignored} == \
           {k: v for k, v in start.items() if k not in ignored}
    assert after["build/out.o"][1] == b"rebuilt\n" and after["run.log"][1] == b"log\n"
    assert tree_bytes(workspace / ".git") == dot_git  # index, HEAD, objects, config: untouched


def test_conflicting_outside_edit_is_refused_then_forced(agent: Agent, workspace: Path) -> None:
    (workspace / "shared.txt").write_text("v1\n")
    (workspace / "other.txt").write_text("untouched\n")
    agent.turn("edit", shell("echo v2 > shared.txt"))
    (workspace / "shared.txt").write_text("edited by hand\n")  # after the session's last snapshot
    (workspace / "other.txt").write_text("also by hand\n")  # changed too, but no turn touched it
    edited = state(workspace)

    refused = agent.checkpoints("restore", "--turn", "1")
    assert refused.returncode == 1
    assert "conflicts (changed by someone else since the session wrote them):\n  shared.txt\n" in refused.stdout
    assert "--force" in refused.stderr
    assert state(workspace) == edited and agent.records("rewind") == []
    assert agent.checkpoints("restore", "--turn", "1", "--dry-run").returncode == 1  # same verdict

    forced = agent.checkpoints("restore", "--turn", "1", "--force")
    assert forced.returncode == 0, forced.stderr
    assert (workspace / "shared.txt").read_text() == "v1\n"
    assert (workspace / "other.txt").read_text() == "also by hand\n"  # never touched by the session
    saved = agent.records("rewind")[0]
    assert saved["turn"] == 1 and saved["undone"] == [1]


def test_dry_run_prints_the_plan_and_changes_nothing(agent: Agent, workspace: Path) -> None:
    (workspace / "keep.txt").write_text("keep\n")
    agent.turn("edit", shell("rm keep.txt && echo made > made.txt && mkdir d && echo x > d/x.txt"))
    now, refs, records = state(workspace), agent.refs(), agent.records()
    proc = agent.checkpoints("restore", "--turn", "1", "--dry-run")
    assert proc.returncode == 1  # the verdict a restore would get
    assert proc.stdout.splitlines() == [
        "restore s1 to before turn 1 (undoes turn 1)",
        "  remove    d/x.txt",
        "  recreate  keep.txt",
        "  remove    made.txt",
        "conflicts (changed while a command ran that may not have been their only writer):",
        "  d/x.txt  (during run_shell in turn 1)",
        "  keep.txt  (during run_shell in turn 1)",
        "  made.txt  (during run_shell in turn 1)",
    ]
    forced = agent.checkpoints("restore", "--turn", "1", "--dry-run", "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout == proc.stdout and "dry run: nothing was changed" in forced.stderr
    assert state(workspace) == now and agent.refs() == refs and agent.records() == records


def test_restore_rewinds_the_conversation_and_resume_goes_on(agent: Agent, workspace: Path) -> None:
    for number in (1, 2, 3):
        agent.turn(f"task {number}", shell(f"echo {number} > f{number}.txt"))
    assert agent.checkpoints("restore", "--turn", "2", "--force").returncode == 0
    session = load_session(agent.home / "sessions" / "s1")
    assert [m.content for m in session.messages if m.role == "user"] == ["task 1"]
    assert sorted(p.name for p in workspace.iterdir()) == ["f1.txt"]

    agent.turn("task 4", shell("echo 4 > f4.txt"))
    assert [r["turn"] for r in agent.records("turn_start")] == [1, 2, 3, 4]
    session = load_session(agent.home / "sessions" / "s1")
    assert [m.content for m in session.messages if m.role == "user"] == ["task 1", "task 4"]
    listing = [line.split("\t") for line in agent.checkpoints("list").stdout.splitlines()]
    assert [(r[0], r[4]) for r in listing] == [("1", ""), ("2", "rewound"), ("3", "rewound"), ("4", "")]
    assert agent.checkpoints("restore", "--turn", "4", "--force").returncode == 0
    assert sorted(p.name for p in workspace.iterdir()) == ["f1.txt"]
    again = agent.checkpoints("restore", "--turn", "3")  # undone already: nothing left to undo
    assert again.returncode == 0, again.stderr
    assert "no turn since is still in effect; turn 3 itself was undone" in again.stdout
    assert sorted(p.name for p in workspace.iterdir()) == ["f1.txt"]
    gone = agent.checkpoints("restore", "--turn", "9")
    assert gone.returncode == 1 and "no checkpoint before turn 9 (turns with one: 1, 2, 3, 4)" in gone.stderr


def test_no_checkpoints_flag(agent: Agent, workspace: Path) -> None:
    proc = agent.turn("edit", shell("echo x > x.txt"), flags=("--no-checkpoints", "-o", "stream-json"))
    init = stream(proc, "init")[0]
    assert "checkpoint_list" not in init["tools"] and stream(proc, "checkpoint") == []
    assert agent.records("checkpoint") == [] and not (agent.home / "checkpoints").exists()
    listing = agent.checkpoints("list")
    assert listing.returncode == 0 and "has no checkpoints" in listing.stderr
    assert agent.checkpoints("restore", "--turn", "1").returncode == 1
    assert not (agent.home / "checkpoints").exists()  # reading made no repository either


def test_binary_files_round_trip(agent: Agent, workspace: Path) -> None:
    original = bytes(range(256)) * 64
    (workspace / "image.bin").write_bytes(original)
    agent.turn("binary", shell("head -c 5000 /dev/urandom > image.bin && printf '\\000\\377' > new.bin"))
    assert "Binary files" in agent.checkpoints("diff", "1").stdout
    assert agent.checkpoints("restore", "--turn", "1", "--force").returncode == 0
    assert (workspace / "image.bin").read_bytes() == original and not (workspace / "new.bin").exists()


def test_file_over_the_size_cap_is_skipped_listed_and_left_alone(agent: Agent, workspace: Path) -> None:
    (workspace / "small.txt").write_text("small\n")
    proc = agent.turn("big", shell("truncate -s 11M big.bin && echo changed > small.txt"),
                      flags=("-o", "stream-json"))
    after = stream(proc, "checkpoint")[-1]
    assert after["skipped"] == [{"path": "big.bin", "reason": "11 MiB, over the 10 MiB size cap"}]
    assert "checkpoint: not snapshotted: big.bin (11 MiB, over the 10 MiB size cap)" in proc.stderr
    assert "big.bin" not in agent.checkpoints("diff", "1").stdout
    restore = agent.checkpoints("restore", "--turn", "1", "--force")
    assert restore.returncode == 0, restore.stderr
    assert "left alone (never snapshotted):\n  big.bin (11 MiB, over the 10 MiB size cap)" in restore.stdout
    assert (workspace / "small.txt").read_text() == "small\n"
    assert (workspace / "big.bin").stat().st_size == 11 * 1024 * 1024


def test_restore_refused_while_the_session_is_in_use(agent: Agent, workspace: Path) -> None:
    from recursive_cli.features.sessions.lock import acquire_lock

    agent.turn("edit", shell("echo x > x.txt"))
    with acquire_lock(agent.home / "sessions" / "s1", "s1"):
        proc = agent.checkpoints("restore", "--turn", "1")
    assert proc.returncode == 1 and "in use" in proc.stderr
    assert (workspace / "x.txt").exists()


def test_unknown_session() -> None:
    proc = invoke("checkpoints", "list", "nope")
    assert proc.returncode == 1 and "no session matches 'nope'" in proc.stderr
