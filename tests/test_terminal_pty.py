"""The terminal as a person sees it: the real CLI in a pseudo-terminal, its output replayed on
a small screen model (what is left after the spinner and the live regions are wiped).

stdin, stdout and stderr are the pty unless a test pipes one of them, as `recursive run … |
cat` does with stdout.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clitools import require, wait_until, write_script

_ESCAPE = re.compile(r"\x1b\[([?0-9;]*)([A-Za-z])")


def screen(raw: str, columns: int) -> list[str]:
    """What a terminal shows after `raw`: text, CR, LF, cursor up/down, erase line; colours
    and cursor visibility ignored; lines wrap at `columns`."""
    lines: list[list[str]] = [[]]
    row = col = 0
    pos = 0
    while pos < len(raw):
        match = _ESCAPE.match(raw, pos)
        if match:
            args, command = match.groups()
            count = int(args) if args.isdigit() else 1
            if command == "A":
                row = max(0, row - count)
            elif command == "B":
                row += count
            elif command == "K":
                line = lines[row] if row < len(lines) else []
                if args in ("", "0"):
                    del line[col:]
                elif args == "2":
                    line.clear()
            elif command == "G":
                col = count - 1
            pos = match.end()
            continue
        char = raw[pos]
        pos += 1
        if char == "\r":
            col = 0
        elif char == "\n":
            row += 1
        elif char == "\b":
            col = max(0, col - 1)
        elif char >= " ":
            if col >= columns:
                row, col = row + 1, 0
            while len(lines) <= row:
                lines.append([])
            line = lines[row]
            line.extend(" " * (col + 1 - len(line)))
            line[col] = char
            col += 1
        while len(lines) <= row:
            lines.append([])
    return ["".join(line).rstrip() for line in lines]


@dataclass
class Seen:
    """One command run on a terminal: exit code, the screen at the end, the raw bytes, piped stdout."""

    returncode: int
    lines: list[str]
    raw: str
    stdout: str

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def on_terminal(args: list[str], *, cwd: Path, stdout_piped: bool = False, stdin_tty: bool = True,
                answers: list[tuple[str, str]] | None = None, columns: int = 100,
                env: dict[str, str] | None = None, then: Any = None, timeout: float = 30) -> Seen:
    """Run `recursive ARGS` with the pty as its terminal. `answers`: (marker, keys) pairs, each
    typed once the marker has appeared on the screen (a question drops what was typed before it
    showed, not after); `then(proc, raw_so_far)` is called each time output arrives (a test's
    own action, e.g. a signal)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "recursive_cli", *args], cwd=cwd,
        stdin=slave if stdin_tty else subprocess.DEVNULL,
        stdout=subprocess.PIPE if stdout_piped else slave, stderr=slave,
        env={**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns), **(env or {})})
    os.close(slave)
    pending = list(answers or [])
    received = b""
    answered = 0  # how much of the output the typed answers have used up
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the child closed its side: all output is in
                    break
                if not data:
                    break
                received += data
                text = received.decode(errors="replace")
                while pending and pending[0][0] in text[answered:]:
                    marker, keys = pending.pop(0)
                    answered = text.index(marker, answered) + len(marker)
                    os.write(master, keys.encode())
                if then is not None:
                    then(proc, text)
            elif proc.poll() is not None:
                break
        stdout = proc.stdout.read().decode() if proc.stdout else ""
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    raw = received.decode(errors="replace")
    return Seen(proc.returncode, screen(raw, columns), raw, stdout)


def waiting_for_input(pid: int) -> bool:
    """Whether process `pid` is asleep in its event loop's wait (epoll: nothing to do but wait
    for input)."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text().strip() in ("do_epoll_wait", "ep_poll")
    except OSError:
        return False


def run_args(workspace: Path, script: Path, *extra: str) -> list[str]:
    return ["run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script), *extra]


def shown(seen: Seen, text: str) -> int:
    """How many times `text` is on the final screen."""
    return seen.text.count(text)


# ── markup ─────────────────────────────────────────────────────────────────────────────

SED = "echo a/b | sed 's/[/]/_/g'"
GREP = "grep -c '[a-z]' /dev/null; sh wait.sh"  # wait.sh: till its spinner has been seen
# (bounded: should the test fail and its `recursive` be killed, the loop must not run on for ever)
WAIT = "i=0; until [ -e shown ] || [ $i -ge 1000 ]; do sleep 0.01; i=$((i+1)); done\n"
MARKUP_REPLIES = [
    {"text": "Fixing [a-z] and [bold]this[/bold] :thumbs_up:",
     "tool_calls": [{"name": "run_shell", "arguments": {"command": SED}}]},
    {"tool_calls": [{"name": "run_shell", "arguments": {"command": GREP}}]},
    {"tool_calls": [{"name": "todo_write", "arguments": {"todos": [
        {"content": "parse [/] and [red]", "status": "in_progress"}]}}]},
    {"text": "Done [/] for [a-z]."},
]


def test_markup_in_tool_arguments_and_model_text_is_shown_as_it_is(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", MARKUP_REPLIES)
    (workspace / "wait.sh").write_text(WAIT)

    def spinner_seen(proc: subprocess.Popen[bytes], text: str) -> None:
        if f"run_shell {GREP} · " in text:
            (workspace / "shown").touch()

    seen = on_terminal(run_args(workspace, script), cwd=workspace, then=spinner_seen)
    assert seen.returncode == 0, seen.raw
    assert "MarkupError" not in seen.raw
    assert "Fixing [a-z] and [bold]this[/bold] :thumbs_up:" in seen.text
    assert f"✓ run_shell {SED} (exit 0" in seen.text
    assert "[~] parse [/] and [red]" in seen.text  # the todo panel
    assert "Done [/] for [a-z]." in seen.text
    assert f"run_shell {GREP} · " in seen.raw  # the spinner's label


def test_markup_in_the_subject_of_an_ask_question(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [MARKUP_REPLIES[0], {"text": "ok"}])
    seen = on_terminal(run_args(workspace, script, "--permission-mode", "ask"), cwd=workspace,
                       answers=[("for this tool: ", "y\n")])
    assert seen.returncode == 0, seen.raw
    assert f"Allow run_shell {SED}? [y]es / [n]o / [a]lways for this tool: y" in seen.lines
    assert "Traceback" not in seen.raw


# ── the answer, once ───────────────────────────────────────────────────────────────────

ANSWER_REPLIES = [
    {"text": "Let me look.", "tool_calls": [{"name": "run_shell", "arguments": {"command": "true"}}]},
    {"text": "The answer is **42**, said twice nowhere."},
]


def test_the_answer_is_shown_once_when_stdout_and_stderr_are_one_terminal(tmp_path: Path,
                                                                          workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", ANSWER_REPLIES)
    seen = on_terminal(run_args(workspace, script), cwd=workspace)
    assert seen.returncode == 0
    assert shown(seen, "said twice nowhere") == 1, seen.text
    assert "The answer is 42, said twice nowhere." in seen.lines  # rendered Markdown, on stdout
    assert shown(seen, "Let me look.") == 1  # text before a tool call stays, once
    assert "2 steps" in seen.text


def test_a_piped_stdout_gets_the_answer_and_the_terminal_shows_it_once(tmp_path: Path,
                                                                       workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", ANSWER_REPLIES)
    seen = on_terminal(run_args(workspace, script), cwd=workspace, stdout_piped=True)
    assert seen.returncode == 0
    assert seen.stdout == "The answer is **42**, said twice nowhere.\n"
    assert shown(seen, "The answer is **42**, said twice nowhere.") == 1  # streamed on stderr
    assert shown(seen, "Let me look.") == 1


def test_a_run_that_fails_after_streaming_keeps_the_text_on_screen(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "Half an answer", "stop": "length"}])
    seen = on_terminal(run_args(workspace, script), cwd=workspace)
    assert seen.returncode == 1
    assert shown(seen, "Half an answer") >= 1  # not wiped: nothing else shows it
    assert "error:" in seen.text


# ── the ask prompt ─────────────────────────────────────────────────────────────────────

WRITE = {"tool_calls": [{"name": "write_file", "arguments": {"path": "utils.py", "content": "x = 1\n"}}]}
QUESTION = "Allow write_file utils.py? [y]es / [n]o / [a]lways for this tool: "


def test_ask_shows_a_clean_question_and_the_typed_answer(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [WRITE, {"text": "Wrote it."}])
    seen = on_terminal(run_args(workspace, script, "--permission-mode", "ask"), cwd=workspace,
                       answers=[("for this tool: ", "y\n")])
    assert seen.returncode == 0, seen.raw
    assert QUESTION + "y" in seen.lines  # the question whole, the key echoed, nothing over it
    assert (workspace / "utils.py").read_text() == "x = 1\n"
    question_at = seen.raw.index("for this tool: ")
    answered_at = seen.raw.index("y", question_at)
    assert not re.search("[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]", seen.raw[question_at:answered_at])  # no spinner meanwhile


def test_ask_no_denies_and_always_asks_once_per_tool(tmp_path: Path, workspace: Path) -> None:
    second = {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.py", "content": "b\n"}}]}
    third = {"tool_calls": [{"name": "run_shell", "arguments": {"command": "touch c.txt"}}]}
    script = write_script(tmp_path / "s.json", [WRITE, second, third, {"text": "done"}])
    seen = on_terminal(run_args(workspace, script, "--permission-mode", "ask"), cwd=workspace,
                       answers=[("for this tool: ", "a\n"), ("for this tool: ", "n\n")])
    assert seen.returncode == 6, seen.raw  # a needed action was denied
    assert shown(seen, "done") == 1  # the answer, all the same
    assert QUESTION + "a" in seen.lines
    assert "Allow run_shell touch c.txt? [y]es / [n]o / [a]lways for this tool: n" in seen.lines
    assert shown(seen, "Allow write_file") == 1  # "always": b.py was not asked about
    assert (workspace / "b.py").exists() and not (workspace / "c.txt").exists()
    assert "✗ denied run_shell touch c.txt: the user said no" in seen.text


def test_ctrl_c_while_asking_ends_the_run_at_once(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [WRITE, {"text": "never"}])
    sent: list[bool] = []

    def interrupt(proc: subprocess.Popen[bytes], text: str) -> None:
        if "for this tool: " in text and not sent:
            with contextlib.suppress(AssertionError):  # (a kernel that does not say where: at once)
                wait_until(lambda: waiting_for_input(proc.pid), timeout=5, proc=proc)  # for the answer
            proc.send_signal(signal.SIGINT)
            sent.append(True)

    started = time.monotonic()
    seen = on_terminal(run_args(workspace, script, "--permission-mode", "ask"), cwd=workspace,
                       then=interrupt, timeout=20)
    assert sent and seen.returncode == 130, seen.raw
    assert time.monotonic() - started < 15  # not waiting for an Enter that never comes
    assert not (workspace / "utils.py").exists()


def test_ctrl_c_typed_while_the_spinner_turns_leaves_no_spinner_line(tmp_path: Path, workspace: Path) -> None:
    """The terminal echoes `^C` where the cursor is, at the end of the spinner's line; on a
    full-width line that wrapped, and the erase missed the spinner, which stayed for good.
    (pexpect: the pty must be the controlling terminal for the key to send SIGINT.)"""
    pexpect = require("pexpect")
    script = write_script(tmp_path / "s.json", [{"text": "never", "delay": 30}])
    child = pexpect.spawn(sys.executable, ["-m", "recursive_cli", *run_args(workspace, script)], cwd=str(workspace),
                          encoding="utf-8", timeout=20, dimensions=(40, 100), env={**os.environ, "TERM": "xterm-256color"})
    try:
        child.expect_exact("thinking (step 1) · 1 s")
        raw = str(child.before) + str(child.after)
        child.sendintr()  # Ctrl-C typed on the terminal
        child.expect(pexpect.EOF)
        raw += str(child.before)
        child.close()
    finally:
        if child.isalive():
            child.kill(9)
    assert child.exitstatus == 130, raw
    assert "^C" in raw  # the terminal echoed it
    lines = screen(raw, 100)
    assert not any("thinking" in line for line in lines), lines
    assert "error: interrupted" in lines


# ── tools, summary ─────────────────────────────────────────────────────────────────────

def test_tools_wraps_descriptions_at_word_boundaries(workspace: Path) -> None:
    seen = on_terminal(["tools"], cwd=workspace, columns=60)
    assert seen.returncode == 0
    lines = [line for line in seen.raw.replace("\r", "").split("\n") if line]
    assert all(len(line) < 60 for line in lines), max(lines, key=len)
    first = lines[0]
    assert first.startswith("read_file ")
    column = len(first) - len(first[len("read_file"):].lstrip())
    following = lines[1]
    assert following[:column].strip() == "" and following[column] != " "  # under the description
    joined = " ".join(" ".join(lines[:2]).split())
    assert joined.startswith("read_file Read a text file and return its lines numbered")


def test_summary_line_on_a_terminal_says_one_step(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    seen = on_terminal(run_args(workspace, script), cwd=workspace)
    assert re.search(r"^1 step · 10 in / 5 out tokens · cost unknown · \d+\.\d s$", seen.text, re.M), seen.text
