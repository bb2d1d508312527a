"""Sessions that could not be written or were damaged, through the real CLI (issue 12).

- a full disk mid-run fails the run (exit 1) before the next tool runs, and what was saved
  resumes once there is room;
- a run that died before turn 1 keeps its first prompt when resumed with a new one;
- a transcript that lost every message meta.json counts is refused, not resumed empty;
- a damaged session is listed as `damaged`, and `resume --last` never skips it silently;
- `running` is shown only while the lock's owner lives.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from clitools import invoke, write_script

from recursive_cli.core.messages import Message
from recursive_cli.core.values import dumps
from recursive_cli.features.sessions.lock import LOCK_FILE, LockInfo
from recursive_cli.features.sessions.meta import read_meta
from recursive_cli.features.sessions.reader import load_session, pair_tool_results
from recursive_cli.features.sessions.records import now_iso

STEPS = 30
OUTPUT_BYTES = 20_000  # per tool result: 30 of them overflow the room left below
ROOM = 200 * 1024


def shell_steps(count: int) -> list[dict]:
    """Steps whose command logs its number in the workspace and prints OUTPUT_BYTES."""
    command = "echo {i} >> ran.log; head -c %d /dev/zero | tr '\\0' a; echo" % OUTPUT_BYTES
    return [{"tool_calls": [{"name": "run_shell", "arguments": {"command": command.format(i=i)}}]}
            for i in range(count)]


def session_folder(home: Path, session_id: str) -> Path:
    return home / "sessions" / session_id


def ran(workspace: Path) -> list[int]:
    log = workspace / "ran.log"
    return [int(line) for line in log.read_text().split()] if log.exists() else []


# -- a disk that fills up mid-run -----------------------------------------------------------------


@contextlib.contextmanager
def full_tmpfs(path: Path) -> Iterator[Callable[[], None]]:
    """RECURSIVE_HOME on a 1 MiB tmpfs with only ROOM bytes free; yields "free the space"."""
    path.mkdir(parents=True)
    mount = shutil.which("mount")
    if mount is None or subprocess.run([mount, "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(path)],
                                       capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN); the `fsize` case "
                    "covers the same code with RLIMIT_FSIZE")
    filler = path / "filler"
    try:
        with open(filler, "wb") as handle:
            with contextlib.suppress(OSError):
                handle.write(b"\0" * max(shutil.disk_usage(path).free - ROOM, 0))
        yield filler.unlink
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def limited_file_size() -> None:
    """In the child: files may not grow past ROOM bytes; writes past it fail with EFBIG."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (ROOM, ROOM))


def agent(args: list[str], home: Path, preexec: Callable[[], None] | None = None
          ) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess (RLIMIT_FSIZE must not hit the test process)."""
    return subprocess.run([sys.executable, "-m", "recursive_cli", *args], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL, preexec_fn=preexec,
                          env={**os.environ, "RECURSIVE_HOME": str(home)})


@pytest.mark.parametrize("mechanism", ["tmpfs", "fsize"])
def test_a_full_disk_fails_the_run_before_the_next_tool_and_resumes_later(
        mechanism: str, tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [*shell_steps(STEPS), {"text": "finished"}])
    args = ["-C", str(workspace), "--no-checkpoints", "--provider", "scripted", "--script", str(script)]
    with contextlib.ExitStack() as stack:
        if mechanism == "tmpfs":
            home = tmp_path / "tiny-home"
            free_space = stack.enter_context(full_tmpfs(home))
            preexec, os_error = None, "No space left on device"
        else:
            home, free_space = isolated_home, lambda: None
            preexec, os_error = limited_file_size, "File too large"
        run = agent(["run", "work", *args, "--session-id", "full", "-o", "json"], home, preexec)

        assert run.returncode == 1, run.stderr
        result = json.loads(run.stdout)
        assert (result["subtype"], result["is_error"], result["finish_reason"]) == (
            "error_during_execution", True, "io_error")
        assert os_error in result["result"] and "cannot write session full" in result["result"]
        errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and os_error in errors[0] and "Traceback" not in run.stderr

        folder = session_folder(home, "full")
        lines = (folder / "transcript.jsonl").read_bytes().split(b"\n")
        assert lines[-1] == b"" and all(json.loads(line) for line in lines[:-1])  # no torn record
        records = [json.loads(line) for line in lines[:-1]]
        on_disk = [r["message"] for r in records if r["type"] == "message"]
        results = [m for m in on_disk if m["role"] == "tool"]
        assert 0 < len(results) < STEPS
        # No tool ran after the one whose result could not be saved.
        assert ran(workspace) == list(range(len(ran(workspace)))) and len(ran(workspace)) <= len(results) + 1
        meta = read_meta(folder)  # still valid JSON, never counting what the transcript lacks
        assert meta.messages <= len(on_disk)

        free_space()
        resumed = agent(["resume", "full", *args], home)
        assert resumed.returncode == 0 and resumed.stdout == "finished\n", resumed.stderr
        loaded = load_session(folder)
        assert pair_tool_results(loaded.messages, lambda call: Message.tool_result(call, "?"))[1] == []
        assert ran(workspace) == list(range(STEPS))  # every step ran exactly once


# -- a run that died before its first turn ---------------------------------------------------------


def kill_before_turn_1(home: Path, session_id: str) -> None:
    """Leave the session as a run killed right after creating it: meta.json (with the prompt in
    `first_prompt`) and a transcript holding only its header."""
    folder = session_folder(home, session_id)
    header = (folder / "transcript.jsonl").read_text().splitlines()[0]
    (folder / "transcript.jsonl").write_text(header + "\n")
    meta = json.loads((folder / "meta.json").read_text())
    meta.update(status="running", turns=0, messages=0, steps=0, finish_reason=None)
    (folder / "meta.json").write_text(json.dumps(meta))


def test_resume_with_a_prompt_sends_the_lost_first_prompt_first(tmp_path: Path, workspace: Path,
                                                                isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "first answer"}, {"text": "second answer"}])
    args = ["-C", str(workspace), "--provider", "scripted", "--script", str(script), "--no-checkpoints"]
    assert invoke("run", "the original prompt", *args, "--session-id", "early").returncode == 0
    kill_before_turn_1(isolated_home, "early")

    resumed = invoke("resume", "early", "and now this", *args)

    assert resumed.returncode == 0 and resumed.stdout == "second answer\n", resumed.stderr
    exported = json.loads(invoke("sessions", "export", "early", "--format", "json").stdout)
    said = [(m["role"], m["content"]) for m in exported["messages"]]
    assert said == [("user", "the original prompt"), ("assistant", "first answer"),
                    ("user", "and now this"), ("assistant", "second answer")]
    assert load_session(session_folder(isolated_home, "early")).turns == 2


# -- a transcript that lost its messages -----------------------------------------------------------


def _delete(path: Path) -> None:
    path.unlink()


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _header_only(path: Path) -> None:
    path.write_text(path.read_text().splitlines()[0] + "\n")


@pytest.mark.parametrize("damage", [_delete, _empty, _header_only], ids=["deleted", "empty", "header-only"])
def test_a_transcript_that_lost_its_messages_is_refused(damage: Callable[[Path], None], tmp_path: Path,
                                                        workspace: Path, isolated_home: Path) -> None:
    steps = [{"tool_calls": [{"name": "run_shell", "arguments": {"command": f"echo {i}"}}]} for i in range(3)]
    script = write_script(tmp_path / "s.json", [*steps, {"text": "done"}, {"text": "again"}])
    args = ["-C", str(workspace), "--provider", "scripted", "--script", str(script), "--no-checkpoints"]
    assert invoke("run", "work", *args, "--session-id", "lost").returncode == 0
    folder = session_folder(isolated_home, "lost")
    assert read_meta(folder).messages == 8
    damage(folder / "transcript.jsonl")
    before = (folder / "meta.json").read_bytes()

    for resume in (["resume", "lost", "go on"], ["resume", "--last", "go on"]):
        proc = invoke(*resume, *args)
        assert proc.returncode == 1 and proc.stdout == "", proc.stderr
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")
        assert "lost" in proc.stderr and "counts 8 messages" in proc.stderr
    assert (folder / "meta.json").read_bytes() == before  # nothing was written
    assert damage is not _delete or not (folder / "transcript.jsonl").exists()
    listed = json.loads(invoke("sessions", "list", "-C", str(workspace), "--json").stdout)
    assert [(e["id"], e["status"]) for e in listed] == [("lost", "damaged")]
    assert "counts 8 messages" in listed[0]["reason"]


# -- damaged meta.json, and `running` -------------------------------------------------------------


def three_sessions(tmp_path: Path, workspace: Path) -> list[str]:
    script = write_script(tmp_path / "s.json", [{"text": "a"}, {"text": "b"}, {"text": "c"}])
    args = ["-C", str(workspace), "--provider", "scripted", "--script", str(script), "--no-checkpoints"]
    for session_id in ("s1", "s2", "s3"):
        assert invoke("run", f"prompt of {session_id}", *args, "--session-id", session_id).returncode == 0
    return args


def test_an_invalid_meta_json_is_listed_as_damaged(tmp_path: Path, workspace: Path,
                                                   isolated_home: Path) -> None:
    three_sessions(tmp_path, workspace)
    (session_folder(isolated_home, "s2") / "meta.json").write_text("{not json")

    table = invoke("sessions", "list", "-C", str(workspace))
    rows = [line.split("\t") for line in table.stdout.splitlines()]
    assert [(row[0], row[1]) for row in rows] == [("s1", "completed"), ("s2", "damaged"), ("s3", "completed")]
    assert "meta.json is not valid session metadata" in rows[1][5]
    listed = json.loads(invoke("sessions", "list", "-C", str(workspace), "--json").stdout)
    damaged = next(entry for entry in listed if entry["id"] == "s2")
    assert damaged["status"] == "damaged" and "not valid session metadata" in damaged["reason"]
    assert damaged["workspace"] == str(workspace.resolve())  # from the transcript's header
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert json.loads(invoke("sessions", "list", "-C", str(elsewhere), "--json").stdout) == []


def test_resume_last_refuses_to_skip_a_newer_damaged_session(tmp_path: Path, workspace: Path,
                                                             isolated_home: Path) -> None:
    args = three_sessions(tmp_path, workspace)
    (session_folder(isolated_home, "s3") / "meta.json").write_text('{"id": "s3"}')
    s2 = session_folder(isolated_home, "s2") / "transcript.jsonl"
    before = s2.read_bytes()

    proc = invoke("resume", "--last", "more", *args)

    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert "s3" in proc.stderr and "damaged" in proc.stderr and "recursive resume s2" in proc.stderr
    assert s2.read_bytes() == before  # no older session was picked behind the user's back


def test_resume_last_takes_a_newer_session_over_an_older_damaged_one(tmp_path: Path, workspace: Path,
                                                                     isolated_home: Path) -> None:
    args = three_sessions(tmp_path, workspace)
    old = session_folder(isolated_home, "s1")
    (old / "meta.json").write_text("[]")
    os.utime(old / "meta.json", (1_000_000_000, 1_000_000_000))  # damaged long ago
    os.utime(old / "transcript.jsonl", (1_000_000_000, 1_000_000_000))

    proc = invoke("resume", "--last", "more", *args)

    assert proc.returncode == 0 and proc.stdout == "b\n", proc.stderr  # s3 had used reply "a"
    assert load_session(session_folder(isolated_home, "s3")).turns == 2


def lock_as(folder: Path, pid: int) -> None:
    info = LockInfo(pid=pid, host=socket.gethostname(), started=now_iso())
    (folder / LOCK_FILE).write_text(dumps(info))


def test_running_is_shown_only_while_the_lock_owner_lives(tmp_path: Path, workspace: Path,
                                                          isolated_home: Path) -> None:
    three_sessions(tmp_path, workspace)
    for session_id in ("s1", "s2", "s3"):
        folder = session_folder(isolated_home, session_id)
        meta = json.loads((folder / "meta.json").read_text())
        meta["status"] = "running"
        (folder / "meta.json").write_text(json.dumps(meta))
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock_as(session_folder(isolated_home, "s1"), dead.pid)  # killed: its lock stayed behind
    lock_as(session_folder(isolated_home, "s2"), os.getpid())  # alive
    # s3: no lock at all

    listed = json.loads(invoke("sessions", "list", "-C", str(workspace), "--json").stdout)

    assert [(e["id"], e["status"]) for e in listed] == [
        ("s1", "interrupted"), ("s2", "running"), ("s3", "interrupted")]
    rows = invoke("sessions", "list", "-C", str(workspace)).stdout.splitlines()
    assert [row.split("\t")[1] for row in rows] == ["interrupted", "running", "interrupted"]
