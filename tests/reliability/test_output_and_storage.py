"""Where output goes and where sessions live: a reader that went away, input that is not UTF-8,
a RECURSIVE_HOME that cannot be written or fills up, and no file descriptors left.

Real processes, except where noted: a closed pipe, a byte stream on stdin, a file-descriptor
limit and a disk that fills up (whose failed writes may surface only when the process exits)
need one."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeserver import FakeLLMServer

from .doctable import Row, check_row
from .harness import AGENT, Run, Scrub, agent, call, exit_text, inspect_session, scripted_args, start_agent

EXIT_BROKEN_PIPE = 141


def shell_steps(count: int, command: str = "echo step") -> list[dict]:
    return [{"tool_calls": [call("run_shell", {"command": f"{command} {i}"})]} for i in range(count)]


def closed_pipe() -> int:
    """The write end of a pipe whose reader is already gone: every write fails with EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    return write_end


QUIET = "no error line and no traceback: stderr has only its usual progress lines"


@pytest.mark.parametrize("case", ["stdout-closed", "stdout-head-1"])
def test_stream_reader_goes_away(case: str, tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = [*shell_steps(5, "sleep 0.1; echo step"), {"text": "finished"}]
    args = ["-C", str(workspace), *scripted_args(tmp_path / "s.json", script)]
    stdout = closed_pipe() if case == "stdout-closed" else subprocess.PIPE
    proc = start_agent("run", "work", *args, "--session-id", "reader", "-o", "stream-json",
                       stdout=stdout, stderr=subprocess.PIPE)
    if proc.stdout is not None:  # `| head -1`: take the first line, then leave
        first = proc.stdout.readline()
        proc.stdout.close()
        assert '"init"' in first
    else:
        os.close(stdout)
    assert proc.stderr is not None
    run = Run(proc.wait(timeout=30), "", proc.stderr.read())
    assert run.code == EXIT_BROKEN_PIPE, run.stderr
    run.assert_clear(errors=0)
    session = inspect_session(isolated_home, "reader")
    assert session.status == "interrupted" and session.unanswered_calls() == []
    resumed = agent("resume", "reader", *args, in_process=True)  # (no pipe to lose this time)
    assert resumed.code == 0 and resumed.stdout == "finished\n", resumed.stderr
    check_row(Row(case, (QUIET,), str(run.code), session.summary("`resume` finishes the run (exit 0)")))


def test_text_answer_reader_gone(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    args = ["-C", str(workspace), *scripted_args(tmp_path / "s.json", [{"text": "the answer"}])]
    stdout = closed_pipe()
    proc = start_agent("run", "answer", *args, "--session-id", "text", stdout=stdout, stderr=subprocess.PIPE)
    os.close(stdout)
    _, stderr = proc.communicate(timeout=30)
    run = Run(proc.returncode, "", stderr)
    assert run.code == EXIT_BROKEN_PIPE, stderr
    run.assert_clear(errors=0)
    session = inspect_session(isolated_home, "text")
    assert session.status == "completed"  # the answer was complete before it was printed
    check_row(Row("stdout-closed-text", (QUIET,), str(run.code), session.summary("the answer is in it")))


def test_prompt_bytes_that_are_not_utf8(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    args = ["-C", str(workspace), *scripted_args(tmp_path / "s.json", [{"text": "read it"}])]
    proc = subprocess.run(
        [*AGENT, "run", os.fsdecode(b"what is \xff?"), *args, "--session-id", "bytes"],
        input=b"\x89PNG\r\n\x1a\n\xff\xfe binary", capture_output=True, timeout=30,
        env={**os.environ, "RECURSIVE_HOME": str(isolated_home)})
    run = Run(proc.returncode, proc.stdout.decode(), proc.stderr.decode())
    assert run.code == 0 and run.stdout == "read it\n", run.stderr
    run.assert_clear(errors=0)
    session = inspect_session(isolated_home, "bytes")
    prompt = session.messages[0].content
    assert prompt.startswith("what is \ufffd?") and "\ufffd\ufffd binary" in prompt
    check_row(Row("prompt-not-utf8", ("the answer; each undecodable byte reaches the model as U+FFFD",),
                  str(run.code), session.summary("the prompt is in it with U+FFFD")))


def test_home_is_a_file(tmp_path: Path, workspace: Path) -> None:
    home = tmp_path / "home-file"
    home.write_text("not a folder")
    args = ["-C", str(workspace), *scripted_args(tmp_path / "s.json", [{"text": "a"}])]
    run = agent("run", "x", *args, env={"RECURSIVE_HOME": str(home)}, in_process=True)
    assert run.code == 1
    run.assert_clear(errors=1)
    assert home.read_text() == "not a folder"
    check_row(Row("home-is-a-file", (Scrub(home=home)(run.error_lines()[0]),), str(run.code),
                  "none: nothing is written, the file is left as it was"))


@contextlib.contextmanager
def tmpfs(path: Path, size: str, *options: str) -> Iterator[Path]:
    """A tiny tmpfs at `path`, unmounted afterwards; skips the test where mounting is not allowed."""
    path.mkdir(parents=True, exist_ok=True)
    mount = shutil.which("mount")
    opts = ",".join([f"size={size}", *options])
    if mount is None or subprocess.run([mount, "-t", "tmpfs", "-o", opts, "tmpfs", str(path)],
                                       capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN); the doc keeps the "
                    "row observed where it could")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def remount(path: Path, *options: str) -> None:
    subprocess.run(["mount", "-o", ",".join(["remount", *options]), str(path)], check=True,
                   capture_output=True)


def fill(path: Path, leave: int = 0) -> None:
    """Fill the file system at `path` until at most `leave` bytes are free."""
    with open(path / "filler", "wb") as handle:
        free = shutil.disk_usage(path).free - leave
        with contextlib.suppress(OSError):
            handle.write(b"\0" * max(free, 0))
            handle.flush()
            while shutil.disk_usage(path).free > leave:
                handle.write(b"\0" * 4096)
                handle.flush()


def test_home_read_only(tmp_path: Path, workspace: Path) -> None:
    args = ["-C", str(workspace), *scripted_args(tmp_path / "s.json", [{"text": "a"}])]
    with tmpfs(tmp_path / "ro-home", "64k") as home:
        remount(home, "ro")  # root ignores permissions, not a read-only mount
        # (in this process: the first write fails at once, nothing waits for the exit to surface)
        run = agent("run", "x", *args, "--session-id", "ro", env={"RECURSIVE_HOME": str(home)}, in_process=True)
        assert run.code == 1, run.stderr
        run.assert_clear(errors=1)
        assert "Read-only file system" in run.error_lines()[0]
        assert not (home / "sessions").exists()
        check_row(Row("home-read-only", (Scrub(home=home)(run.error_lines()[0]),), str(run.code),
                      "none: nothing could be written"))


def test_home_full_at_start(tmp_path: Path, workspace: Path) -> None:
    args = ["-C", str(workspace), *scripted_args(tmp_path / "s.json", [{"text": "a"}])]
    with tmpfs(tmp_path / "full-home", "16k") as home:
        fill(home)
        run = agent("run", "x", *args, "--session-id", "full", env={"RECURSIVE_HOME": str(home)})
        assert run.code == 1, run.stderr
        run.assert_clear(errors=1)
        assert "No space left on device" in run.error_lines()[0]
        assert not (home / "sessions" / "full" / "transcript.jsonl").exists()
        check_row(Row("home-full-at-start", (Scrub(home=home)(run.error_lines()[0]),), str(run.code),
                      "none: the half-made session is removed"))


def test_home_fills_up_during_the_run(tmp_path: Path, workspace: Path) -> None:
    steps = shell_steps(3, "head -c 20000 /dev/zero | tr '\\0' a; echo")  # 20 kB per tool result
    args = ["-C", str(workspace), "--no-checkpoints",
            *scripted_args(tmp_path / "s.json", [*steps, {"text": "finished"}])]
    with tmpfs(tmp_path / "filling-home", "64k") as home:
        fill(home, leave=24 * 1024)
        run = agent("run", "x", *args, "--session-id", "filling", env={"RECURSIVE_HOME": str(home)})
        assert run.code == 1 and run.stdout == "", run.stderr  # no answer: the run did not finish
        run.assert_clear(errors=1)
        assert "No space left on device" in run.error_lines()[0], run.stderr
        assert "warning" not in run.stderr
        (home / "filler").unlink()  # the user frees space, then looks and resumes
        session = inspect_session(home, "filling")
        assert session.warnings == [], session.warnings  # no torn record, nothing lost
        resumed = agent("resume", "filling", *args, env={"RECURSIVE_HOME": str(home)})
        assert resumed.code == 0 and resumed.stdout == "finished\n", resumed.stderr
        check_row(Row("home-full-mid-run", (Scrub(home=home)(run.error_lines()[0]),),
                      str(run.code), f"`{session.status}`: what was written before the disk filled, "
                      "with no torn record; `sessions show` loads it; `resume` finishes the run "
                      "once there is space (exit 0)"))


def test_no_file_descriptors_left(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    args = ["-C", str(workspace), *scripted_args(tmp_path / "s.json", [*shell_steps(3), {"text": "finished"}])]

    def limit_fds() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (10, 10))

    proc = subprocess.run([*AGENT, "run", "x", *args, "--session-id", "fds"],
                          preexec_fn=limit_fds, capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL, env={**os.environ, "RECURSIVE_HOME": str(isolated_home)})
    run = Run(proc.returncode, proc.stdout, proc.stderr)
    assert run.code == 0 and run.stdout == "finished\n", run.stderr  # the model is told, and answers
    run.assert_clear(errors=0)
    failed = [line for line in run.stderr.splitlines() if line.startswith("✗ run_shell")]
    assert len(failed) == 3 and all("Too many open files" in line for line in failed), run.stderr
    warnings = [line for line in run.stderr.splitlines() if "warning" in line]
    session = inspect_session(isolated_home, "fds")
    assert session.status == "completed" and session.unanswered_calls() == []
    check_row(Row("fd-limit", (*warnings, failed[0], "then the answer on stdout"), exit_text(run.code),
                  session.summary("every failed call is answered in it")))


def test_home_fills_up_on_the_responses_wire_and_resume_sends_the_reasoning_back(
        tmp_path: Path, workspace: Path) -> None:
    """The disk fills while a Responses-wire run stores its steps; once there is space, `resume`
    sends the model's encrypted reasoning from the transcript alone (`store: false`)."""
    call_step = {"tool_calls": [{"name": "run_shell", "arguments": {
        "command": "head -c 20000 /dev/zero | tr '\\0' a; echo"}}]}
    replies = [{**call_step, "reasoning": {"summary": f"step {i}", "encrypted": f"enc-{i}"}} for i in range(3)]
    args = ["-C", str(workspace), "--no-checkpoints", "--sandbox", "off", "--wire", "responses",
            "-m", "gpt-5", "--max-steps", "10"]
    with tmpfs(tmp_path / "filling-home", "64k") as home, \
            FakeLLMServer([*replies, {"text": "finished"}]) as server:
        env = {"RECURSIVE_HOME": str(home), "RECURSIVE_API_KEY": "sk-test"}
        fill(home, leave=24 * 1024)
        run = agent("run", "x", *args, "--api-base", server.openai_base_url, "--session-id", "filling", env=env)
        assert run.code == 1 and run.stdout == "", run.stderr
        assert "No space left on device" in run.error_lines()[0], run.stderr
        sent = len(server.requests)
        (home / "filler").unlink()
        resumed = agent("resume", "filling", *args, "--api-base", server.openai_base_url, env=env)
        assert resumed.code == 0, resumed.stderr
        last = server.requests[-1].body
        kept = [item["encrypted_content"] for item in last["input"] if item.get("type") == "reasoning"]
        assert kept and kept == [f"enc-{i}" for i in range(len(kept))]  # each stored one, in order, unchanged
        assert all(request.path == "/v1/responses" for request in server.requests[sent:])
        assert inspect_session(home, "filling").warnings == []
