"""Never destroy a user's work, never report success that didn't happen (issue 12).

Each case drives the real CLI (in this process through `invoke`, or as a real process where a
signal is the point) and builds its row from what it saw:

- checkpoints undo only what the session did: files someone else changed during a turn are
  kept, a file the user changed after the session wrote it is a conflict, a rewound turn can
  be restored again, a folder replaced by a symlink still snapshots and restores;
- a reply cut off at the output limit runs none of its calls, a refusal is not a success, and
  steps that ran are still counted after a provider error;
- sessions that lost data are refused or shown as damaged, never resumed empty or skipped;
- `sessions gc` deletes only what it was asked to, where it was asked to;
- nothing a shell command leaves running outlives it.

"Someone else" editing files inside a turn is played by code that runs just before the
scripted model returns a reply (`meanwhile`). A disk that fills up mid-run is the
`home-full-mid-run` case of test_output_and_storage.py.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clitools import GONE, CliResult, host_pid, invoke, json_lines, wait_gone, wait_until, write_script
from fakeserver import FakeLLMServer

from recursive_cli.features.sessions.meta import read_meta
from recursive_cli.features.sessions.reader import load_session

from .doctable import Row, check_row
from .harness import AGENT, API_KEY, BASE_ENV, Scrub, inspect_session, provider_args

Action = Callable[[], None]


def call(name: str, **arguments: object) -> dict[str, Any]:
    """A scripted reply with one tool call."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def shell(command: str) -> dict[str, Any]:
    return call("run_shell", command=command)


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def error_lines(proc: CliResult) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("error:")]


def write(path: Path, text: str) -> Action:
    """Someone else writing `path`."""
    def act() -> None:
        path.write_text(text)
    return act


def files(root: Path) -> dict[str, str]:
    """Every file directly in `root` with its text."""
    return {p.name: p.read_text() for p in sorted(root.iterdir()) if p.is_file()}


class Session:
    """One session in one workspace, its turns run in this process with the scripted provider."""

    def __init__(self, tmp_path: Path, workspace: Path, home: Path, session_id: str = "s1") -> None:
        self.tmp_path, self.workspace, self.home, self.id = tmp_path, workspace, home, session_id
        self.turns = 0

    @property
    def folder(self) -> Path:
        return self.home / "sessions" / self.id

    def cli(self, *args: str) -> CliResult:
        return invoke(*args, cwd=self.workspace)

    def turn(self, prompt: str, *replies: dict[str, Any]) -> CliResult:
        """One turn (`run`, then `resume`) whose model replies are `replies`, then an answer."""
        # On resume the scripted provider skips as many replies as the conversation holds.
        held = sum(m.role == "assistant" for m in load_session(self.folder).messages) if self.turns else 0
        script = write_script(self.tmp_path / f"script-{self.id}-{self.turns}.json",
                              [{"text": "(replayed)"}] * held + [*replies, {"text": f"done: {prompt}"}])
        scripted = ("--provider", "scripted", "--script", str(script))
        if self.turns:
            proc = self.cli("resume", self.id, prompt, *scripted)
        else:
            proc = self.cli("run", prompt, "-C", str(self.workspace), "--session-id", self.id, *scripted)
        self.turns += 1
        assert proc.returncode == 0, proc.stderr
        return proc

    def checkpoints(self, command: str, *args: str) -> CliResult:
        return self.cli("checkpoints", command, self.id, *args)

    def listing(self) -> list[list[str]]:
        """`checkpoints list` as rows: turn, time, files, prompt, status."""
        proc = self.checkpoints("list")
        assert proc.returncode == 0, proc.stderr
        return [line.split("\t") for line in proc.stdout.splitlines()]


@pytest.fixture
def session(tmp_path: Path, workspace: Path, isolated_home: Path) -> Session:
    return Session(tmp_path, workspace, isolated_home)


# -- checkpoints ---------------------------------------------------------------------------------


def test_restore_keeps_what_the_user_changed_during_the_turn(
        session: Session, workspace: Path, meanwhile: dict[int, Action]) -> None:
    (workspace / "mine.txt").write_text("v0\n")
    (workspace / "theirs.txt").write_text("t0\n")
    meanwhile[1] = write(workspace / "theirs.txt", "the user's edit\n")  # between two calls
    meanwhile[2] = write(workspace / "user-new.txt", "the user's new file\n")
    # (file tools: what a shell command changes may be someone else's too, and needs --force)
    session.turn("work", call("edit_file", path="mine.txt", old_string="v0", new_string="v1"),
                 call("write_file", path="made.txt", content="made\n"))

    restore = session.checkpoints("restore", "--turn", "1")

    assert restore.returncode == 0 and restore.stderr == "", restore.stderr
    assert files(workspace) == {"mine.txt": "v0\n", "theirs.txt": "the user's edit\n",
                                "user-new.txt": "the user's new file\n"}
    assert load_session(session.folder).messages == []
    check_row(Row("restore-keeps-others", tuple(lines(restore.stdout)), str(restore.returncode),
                  "`theirs.txt` and `user-new.txt` kept as the user left them; the session's "
                  "`mine.txt` back to `v0`, its `made.txt` removed; the conversation is back to "
                  "before turn 1"))


def test_restore_refuses_to_overwrite_a_later_user_edit(
        session: Session, workspace: Path, meanwhile: dict[int, Action]) -> None:
    (workspace / "a.txt").write_text("original\n")
    meanwhile[1] = write(workspace / "a.txt", "the user's edit\n")  # after the session's write
    session.turn("edit", call("write_file", path="a.txt", content="the session's\n"))

    refused = session.checkpoints("restore", "--turn", "1")

    assert refused.returncode == 1
    assert "conflicts (changed by someone else since the session wrote them):\n  a.txt\n" in refused.stdout
    assert (workspace / "a.txt").read_text() == "the user's edit\n"
    assert len(load_session(session.folder).messages) == 4  # not rewound either
    conflicts = refused.stdout.splitlines()
    at = conflicts.index("conflicts (changed by someone else since the session wrote them):")
    forced = session.checkpoints("restore", "--turn", "1", "--force")
    assert forced.returncode == 0, forced.stderr
    assert (workspace / "a.txt").read_text() == "original\n"
    check_row(Row("restore-conflict", (" ".join(conflicts[at:at + 2]), *error_lines(refused),
                                       f"with --force: {lines(forced.stdout)[-1]}"),
                  f"{refused.returncode}; {forced.returncode} with `--force`",
                  "refused: `a.txt` keeps the user's edit and the conversation is not rewound; "
                  "`--force` puts `a.txt` back as it was before the turn"))


def test_a_rewound_turn_can_be_restored_again(session: Session, workspace: Path) -> None:
    session.turn("one", call("write_file", path="f1.txt", content="1\n"))
    session.turn("two", call("write_file", path="f2.txt", content="2\n"))
    assert session.checkpoints("restore", "--turn", "2").returncode == 0
    assert session.checkpoints("restore", "--turn", "1").returncode == 0
    session.turn("three", call("write_file", path="f3.txt", content="3\n"))
    before = [(row[0], row[4]) for row in session.listing()]
    assert before == [("1", "rewound"), ("2", "rewound"), ("3", "")]

    again = session.checkpoints("restore", "--turn", "1")

    assert again.returncode == 0, again.stderr
    assert list(workspace.iterdir()) == [] and load_session(session.folder).messages == []
    check_row(Row("restore-rewound-turn", tuple(lines(again.stdout)), str(again.returncode),
                  "before it, `checkpoints list` showed turns 1 and 2 `rewound`, turn 3 in effect; "
                  "afterwards the workspace is as before turn 1 (empty) and the conversation has "
                  "no message"))


def test_a_folder_replaced_by_a_symlink(session: Session, tmp_path: Path, workspace: Path,
                                        isolated_home: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "outside.txt").write_text("not ours\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "a.txt").write_text("a\n")
    (workspace / "target.txt").write_text("t\n")
    os.symlink("target.txt", workspace / "link")

    swap = session.turn("swap", shell(f"rm -rf sub && ln -s {elsewhere} sub && rm link"))
    other = Session(tmp_path, workspace, isolated_home, "s2")
    later = other.turn("another session", shell("echo x > x.txt"))
    restore = session.checkpoints("restore", "--turn", "1", "--force")  # (a shell command's changes)

    for proc in (swap, later, restore):
        assert "warning" not in proc.stderr and "error" not in proc.stderr, proc.stderr
    assert restore.returncode == 0
    assert (workspace / "sub").is_dir() and not (workspace / "sub").is_symlink()
    assert (workspace / "sub" / "a.txt").read_text() == "a\n"
    assert os.readlink(workspace / "link") == "target.txt"
    assert files(elsewhere) == {"outside.txt": "not ours\n"}
    assert "new file mode 120000" in session.checkpoints("diff", "1").stdout
    snapshots = [line for proc in (swap, later) for line in proc.stderr.splitlines()
                 if line.startswith("checkpoint:")]
    check_row(Row("folder-becomes-symlink", (*snapshots, lines(restore.stdout)[-1]),
                  str(restore.returncode),
                  "`sub` is a folder again with its file, `link` a symlink to `target.txt` again, "
                  "`x.txt` of the other session kept; the folder outside untouched; "
                  "`checkpoints diff 1` shows the link as a link (mode 120000)"))


# -- replies that are not whole, refusals, errors after steps -------------------------------------

FIRST = {"command": "touch HALF_EXECUTED"}
SECOND = {"command": "touch SECOND_CALL"}
REFUSAL = "I'm sorry, but I can't help with that request."


def cut_reply() -> dict[str, Any]:
    """Two calls, the output limit striking 9 characters into the second one's arguments."""
    return {"text": "Creating both files.", "cut": 9,
            "tool_calls": [{"name": "run_shell", "arguments": FIRST},
                           {"name": "run_shell", "arguments": SECOND}]}


def provider_run(server: FakeLLMServer, provider: str, workspace: Path, session_id: str
                 ) -> tuple[CliResult, dict[str, Any]]:
    """`recursive run` against the loopback server, with `-o json`: the run and its result."""
    proc = invoke("run", "create the files", "-C", str(workspace), *provider_args(server, provider),
                  "-o", "json", "--session-id", session_id, env={"RECURSIVE_API_KEY": API_KEY})
    return proc, json.loads(proc.stdout)


def progress(proc: CliResult, scrub: Scrub, kinds: tuple[str, ...] = ("warning:", "error:")
             ) -> tuple[str, ...]:
    """The stderr lines of `kinds` of a run as the table shows them, a line repeated at once
    counted (`2 × …`)."""
    seen: list[list[Any]] = []
    for line in proc.stderr.splitlines():
        if line.startswith(kinds):
            if seen and seen[-1][0] == scrub(line):
                seen[-1][1] += 1
            else:
                seen.append([scrub(line), 1])
    return tuple(line if count == 1 else f"{count} × {line}" for line, count in seen)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_cut_off_tool_call_never_runs(provider: str, workspace: Path, isolated_home: Path) -> None:
    with FakeLLMServer([cut_reply(), {"text": "Nothing ran; stopping."}]) as server:
        proc, result = provider_run(server, provider, workspace, "cut")
        told = json.dumps(server.requests[1].body["messages"])
    assert proc.returncode == 0 and result["result"] == "Nothing ran; stopping.", proc.stderr
    assert not (workspace / "HALF_EXECUTED").exists() and not (workspace / "SECOND_CALL").exists()
    assert "cut off at the output limit, so none of its tool calls" in told
    view = inspect_session(isolated_home, "cut")
    assert view.status == "completed" and not any(m.tool_calls for m in view.messages)
    check_row(Row(f"{provider}-cut-tool-call",
                  (*progress(proc, Scrub(ws=workspace)),
                   "the next request tells the model that none of its tool calls ran",
                   "then the answer on stdout"),
                  str(proc.returncode),
                  view.summary("`HALF_EXECUTED` (the whole first call) was never created",
                               "no call of the cut-off reply in it")))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_two_cut_off_replies_end_the_run(provider: str, workspace: Path, isolated_home: Path) -> None:
    with FakeLLMServer([cut_reply(), cut_reply()]) as server:
        proc, result = provider_run(server, provider, workspace, "cut-twice")
    assert proc.returncode == 1 and result["finish_reason"] == "provider_stop", proc.stderr
    assert not (workspace / "HALF_EXECUTED").exists() and not (workspace / "SECOND_CALL").exists()
    view = inspect_session(isolated_home, "cut-twice")
    meta = read_meta(isolated_home / "sessions" / "cut-twice")
    assert not any(m.tool_calls for m in view.messages)
    check_row(Row(f"{provider}-cut-twice", progress(proc, Scrub(ws=workspace)), str(proc.returncode),
                  view.summary(f"finish reason `{meta.finish_reason}`, {meta.steps} steps",
                               "no tool ran and no call is in it")))


def test_a_refusal_is_the_answer_not_a_success(workspace: Path, isolated_home: Path) -> None:
    with FakeLLMServer([{"refusal": REFUSAL}]) as server:
        proc, result = provider_run(server, "openai", workspace, "refused")
    assert proc.returncode == 1 and result["result"] == REFUSAL, proc.stderr
    assert result["subtype"] == "error_during_execution" and result["finish_reason"] == "provider_stop"
    view = inspect_session(isolated_home, "refused")
    assert view.messages[-1].role == "assistant" and view.messages[-1].content == REFUSAL
    check_row(Row("openai-refusal", (*progress(proc, Scrub(ws=workspace)),
                                     f"`-o json`: `result` is the refusal, `subtype` `{result['subtype']}`"),
                  str(proc.returncode), view.summary("the refusal is its last message")))


def test_steps_are_kept_after_a_provider_error(workspace: Path, isolated_home: Path) -> None:
    replies: list[dict[str, Any]] = [shell("echo one"), shell("echo two"),
                                     {"error": {"status": 401, "message": "key revoked"}}]
    with FakeLLMServer(replies) as server:
        proc, result = provider_run(server, "openai", workspace, "after-error")
    assert proc.returncode == 1 and result["finish_reason"] == "provider_error", proc.stderr
    meta = read_meta(isolated_home / "sessions" / "after-error")
    assert result["num_turns"] == meta.steps == 2
    view = inspect_session(isolated_home, "after-error")
    check_row(Row("openai-error-after-steps", progress(proc, Scrub(), ("✓", "error:")),
                  str(proc.returncode),
                  view.summary(f"meta.json counts {meta.steps} steps, as `num_turns` of `-o json` does")))


# -- sessions that lost data ----------------------------------------------------------------------


def test_resume_of_a_session_that_died_before_turn_1(workspace: Path, isolated_home: Path) -> None:
    folder = isolated_home / "sessions" / "early"
    with FakeLLMServer([{"text": "first answer"}, {"text": "first answer again"},
                        {"text": "second answer"}]) as server:
        flags = ["-C", str(workspace), *provider_args(server, "openai"), "--no-checkpoints"]
        env = {"RECURSIVE_API_KEY": API_KEY}
        assert invoke("run", "the original prompt", *flags, "--session-id", "early", env=env).returncode == 0
        # what a kill right after creating the session leaves: the header, and meta.json
        header = (folder / "transcript.jsonl").read_text().splitlines()[0]
        (folder / "transcript.jsonl").write_text(header + "\n")
        meta = json.loads((folder / "meta.json").read_text())
        meta.update(status="running", turns=0, messages=0, steps=0, finish_reason=None)
        (folder / "meta.json").write_text(json.dumps(meta))

        resumed = invoke("resume", "early", "and now this", *flags, env=env)
        sent = [m["content"] for m in server.requests[-1].body["messages"] if m["role"] == "user"]
    assert resumed.returncode == 0 and resumed.stdout == "second answer\n", resumed.stderr
    assert sent == ["the original prompt", "and now this"]
    view = inspect_session(isolated_home, "early")
    check_row(Row("resume-before-turn-1", ("the answer to the new prompt on stdout",),
                  str(resumed.returncode),
                  view.summary("the last request held both prompts, the lost one first")))


@pytest.mark.parametrize("damage", ["deleted", "empty"])
def test_a_transcript_that_lost_its_messages_is_refused(damage: str, tmp_path: Path, workspace: Path,
                                                        isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [shell("echo 1"), shell("echo 2"), shell("echo 3"),
                                                {"text": "done"}, {"text": "again"}])
    flags = ["-C", str(workspace), "--provider", "scripted", "--script", str(script), "--no-checkpoints"]
    assert invoke("run", "work", *flags, "--session-id", "s1").returncode == 0
    folder = isolated_home / "sessions" / "s1"
    transcript = folder / "transcript.jsonl"
    transcript.unlink() if damage == "deleted" else transcript.write_bytes(b"")
    before = (folder / "meta.json").read_bytes()

    resumed = invoke("resume", "s1", "go on", *flags)

    assert resumed.returncode == 1 and resumed.stdout == "", resumed.stderr
    assert len(error_lines(resumed)) == 1 and resumed.stderr.count("\n") == 1
    assert (folder / "meta.json").read_bytes() == before
    assert transcript.exists() == (damage == "empty")
    listed = json.loads(invoke("sessions", "list", "-C", str(workspace), "--json").stdout)
    assert [(e["id"], e["status"]) for e in listed] == [("s1", "damaged")]
    scrub = Scrub(home=isolated_home)
    check_row(Row(f"transcript-{damage}", tuple(scrub(line) for line in error_lines(resumed)),
                  str(resumed.returncode),
                  f"nothing written: meta.json as it was; `sessions list` shows it "
                  f"`{listed[0]['status']}`"))


def test_an_invalid_meta_json_is_shown_and_not_skipped(tmp_path: Path, workspace: Path,
                                                       isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "a"}, {"text": "b"}, {"text": "c"}])
    flags = ["-C", str(workspace), "--provider", "scripted", "--script", str(script), "--no-checkpoints"]
    for session_id in ("s1", "s2"):
        assert invoke("run", f"prompt of {session_id}", *flags, "--session-id", session_id).returncode == 0
    (isolated_home / "sessions" / "s2" / "meta.json").write_text("not json")
    older = (isolated_home / "sessions" / "s1" / "transcript.jsonl").read_bytes()

    listing = invoke("sessions", "list", "-C", str(workspace))
    resumed = invoke("resume", "--last", "more", *flags)

    rows = [line.split("\t") for line in listing.stdout.splitlines()]
    assert [(row[0], row[1]) for row in rows] == [("s1", "completed"), ("s2", "damaged")]
    assert resumed.returncode == 1 and len(error_lines(resumed)) == 1, resumed.stderr
    assert "s2" in resumed.stderr and "recursive resume s1" in resumed.stderr
    assert (isolated_home / "sessions" / "s1" / "transcript.jsonl").read_bytes() == older
    damaged = "`sessions list`: " + " ".join(rows[1][:2] + rows[1][5:])
    check_row(Row("meta-invalid", (damaged, *error_lines(resumed)), str(resumed.returncode),
                  "`s2` left as it was; the older `s1` was not resumed behind the user's back"))


# -- sessions gc -----------------------------------------------------------------------------------


@pytest.fixture
def old_sessions(tmp_path: Path, isolated_home: Path) -> dict[str, Path]:
    """Workspaces `one` (sessions old-1, new-1) and `two` (old-2); the old ones last updated in
    2020. Returns the workspaces by name."""
    script = write_script(tmp_path / "s.json", [{"text": "a"}])
    spaces = {"one": tmp_path / "one", "two": tmp_path / "two"}
    for folder in spaces.values():
        folder.mkdir()
    for session_id, space in (("old-1", "one"), ("new-1", "one"), ("old-2", "two")):
        proc = invoke("run", f"work {session_id}", "-C", str(spaces[space]), "--provider", "scripted",
                      "--script", str(script), "--session-id", session_id, "--no-checkpoints")
        assert proc.returncode == 0, proc.stderr
    for session_id in ("old-1", "old-2"):
        meta_path = isolated_home / "sessions" / session_id / "meta.json"
        meta = json.loads(meta_path.read_text())
        meta["updated"] = "2020-01-01T00:00:00.000+00:00"
        meta_path.write_text(json.dumps(meta))
    return spaces


def remaining(home: Path) -> list[str]:
    return sorted(path.name for path in (home / "sessions").iterdir())


@pytest.mark.parametrize(("case", "args"), [
    ("gc-no-unit", ("--older-than", "30", "--yes")),
    ("gc-no-tty", ("--older-than", "30d")),
])
def test_gc_refuses(case: str, args: tuple[str, ...], old_sessions: dict[str, Path],
                    isolated_home: Path) -> None:
    proc = invoke("sessions", "gc", *args, cwd=old_sessions["one"])
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    kept = remaining(isolated_home)
    assert kept == ["new-1", "old-1", "old-2"]
    check_row(Row(case, (Scrub(ws=old_sessions["one"])(proc.stderr.strip()),), str(proc.returncode),
                  f"all {len(kept)} sessions kept"))


def test_gc_stays_in_its_workspace(old_sessions: dict[str, Path], isolated_home: Path) -> None:
    proc = invoke("sessions", "gc", "--older-than", "30d", "--yes", cwd=old_sessions["one"])
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    kept = remaining(isolated_home)
    assert kept == ["new-1", "old-2"]
    scrub = Scrub(ws=old_sessions["one"])
    check_row(Row("gc-other-workspace", tuple(map(scrub, lines(proc.stderr))), str(proc.returncode),
                  f"kept: `{'`, `'.join(kept)}` (the new one here, the old one of the other workspace)"))


# -- what a shell command leaves running -----------------------------------------------------------


@pytest.fixture
def sleeper(workspace: Path) -> Iterator[Path]:
    """Where the command writes its child's pid; the child is SIGKILLed afterwards if a failing
    run left it behind."""
    pid_file = workspace / "pid"
    yield pid_file
    pid = host_pid(pid_file) if pid_file.exists() else GONE
    if not wait_gone(pid, timeout=0):
        os.kill(pid, signal.SIGKILL)


def test_a_shell_child_does_not_outlive_the_run(tmp_path: Path, workspace: Path, sleeper: Path) -> None:
    script = write_script(tmp_path / "s.json", [shell("sleep 300 & echo $! > pid"), {"text": "done"}])
    proc = invoke("run", "start a server", "-C", str(workspace), "-o", "stream-json",
                  "--provider", "scripted", "--script", str(script))
    assert proc.returncode == 0, proc.stderr
    assert wait_gone(host_pid(sleeper))
    [output] = [block["content"] for line in json_lines(proc.stdout) if line["type"] == "user"
                for block in line["message"]["content"] if block["type"] == "tool_result"]
    note = next(line for line in output.splitlines() if line.startswith("the shell left"))
    # The rest is advice on running a server in one command. The name in brackets is `bash` or
    # `sleep`, as the forked child had exec'd `sleep` yet or not: left out of the table.
    first_sentence = re.sub(r" \([^)]*\)", "", note.split(". ")[0])
    assert first_sentence == "the shell left 1 process running; it was stopped when it exited", note
    check_row(Row("shell-leftover", (f"the tool result: {first_sentence}",), str(proc.returncode),
                  "the `sleep 300` child is gone when the run ends"))


def test_a_shell_child_does_not_outlive_an_interrupt(tmp_path: Path, workspace: Path, sleeper: Path,
                                                     isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [shell("sleep 300 & echo $! > pid; touch ready; sleep 300"),
                                                {"text": "never"}])
    agent = subprocess.Popen([*AGENT, "run", "start a server", "-C", str(workspace), "--session-id", "int",
                              "--provider", "scripted", "--script", str(script)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env={**os.environ, **BASE_ENV})
    try:
        wait_until(lambda: (workspace / "ready").exists(), proc=agent)
        agent.send_signal(signal.SIGINT)
        _, stderr = agent.communicate(timeout=30)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.communicate()
    assert agent.returncode == 130 and "Traceback" not in stderr, stderr
    assert wait_gone(host_pid(sleeper))
    view = inspect_session(isolated_home, "int")
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    check_row(Row("shell-leftover-sigint", tuple(errors), str(agent.returncode),
                  view.summary("the `sleep 300` child is gone too")))
