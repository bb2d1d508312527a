"""stdin and the prompt: piped text composes with PROMPT, `--no-stdin` (`RECURSIVE_NO_STDIN=1`)
never reads it, and a pipe that stays silent after a PROMPT gets a note on stderr.

Where a real pipe or a shell loop matters the CLI runs in a subprocess; the rest in process.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from clitools import invoke, wait_until, write_script


def scripted(tmp_path: Path, replies: list[dict]) -> list[str]:
    return ["--provider", "scripted", "--script", str(write_script(tmp_path / "script.json", replies))]


def user_prompts(home: Path) -> list[str]:
    """The user messages of every session under `home`, in the order the sessions were made."""
    prompts: list[str] = []
    folders = (home / "sessions").iterdir()  # (ids made in one second do not sort by time)
    for folder in sorted(folders, key=lambda f: json.loads((f / "meta.json").read_text())["created"]):
        for line in (folder / "transcript.jsonl").read_text().splitlines():
            record = json.loads(line)
            if record.get("type") == "message" and record["message"]["role"] == "user":
                prompts.append(record["message"]["content"])
    return prompts


def shell_loop(tmp_path: Path, workspace: Path, flag: str, env: dict[str, str] | None = None,
               ) -> subprocess.CompletedProcess[str]:
    """`while read f; do recursive run [flag] "fix $f"; done < files.txt` in a real shell."""
    (tmp_path / "files.txt").write_text("a.py\nb.py\nc.py\n")
    script = write_script(tmp_path / "script.json", [{"text": "fixed"}])
    cli = " ".join(shlex.quote(word) for word in [sys.executable, "-m", "recursive_cli"])
    loop = (f'while read f; do {cli} run {flag} "fix $f" -q -C {shlex.quote(str(workspace))} '
            f'--provider scripted --script {shlex.quote(str(script))}; done < files.txt')
    return subprocess.run(["bash", "-c", loop], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


def test_no_stdin_keeps_a_while_read_loop_going(tmp_path: Path, workspace: Path,
                                                isolated_home: Path) -> None:
    proc = shell_loop(tmp_path, workspace, "--no-stdin")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "fixed\n" * 3
    assert user_prompts(isolated_home) == ["fix a.py", "fix b.py", "fix c.py"]


def test_recursive_no_stdin_env_does_the_same(tmp_path: Path, workspace: Path,
                                              isolated_home: Path) -> None:
    proc = shell_loop(tmp_path, workspace, "", env={"RECURSIVE_NO_STDIN": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "fixed\n" * 3
    assert user_prompts(isolated_home) == ["fix a.py", "fix b.py", "fix c.py"]


def test_without_no_stdin_the_file_still_composes_with_the_prompt(tmp_path: Path, workspace: Path,
                                                                  isolated_home: Path) -> None:
    proc = shell_loop(tmp_path, workspace, "")  # as `llm` and `claude -p` do: stdin is input
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "fixed\n"
    assert user_prompts(isolated_home) == ["fix a.py\n\n```\nb.py\nc.py\n```"]


def test_a_silent_pipe_gets_a_note_then_its_text_is_used(tmp_path: Path, workspace: Path,
                                                         isolated_home: Path) -> None:
    args = scripted(tmp_path, [{"text": "reviewed"}])
    err_path = tmp_path / "stderr.txt"
    with err_path.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "recursive_cli", "run", "review this",
                                 "-C", str(workspace), *args], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            wait_until(lambda: "waiting for stdin" in err_path.read_text(), timeout=30, proc=proc)
            assert proc.poll() is None  # still waiting: the pipe is open
            out, _ = proc.communicate("late diff\n", timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    note = err_path.read_text()
    assert proc.returncode == 0, note
    assert out == "reviewed\n"
    assert "--no-stdin" in note and "/dev/null" in note
    assert user_prompts(isolated_home) == ["review this\n\n```\nlate diff\n```"]


def test_no_note_when_stdin_comes_at_once_or_is_not_read(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"text": "ok"}])
    quick = subprocess.run([sys.executable, "-m", "recursive_cli", "run", "hi", "-C", str(workspace),
                            "--no-session", *args], input="data\n", capture_output=True, text=True,
                           timeout=60)
    assert quick.returncode == 0 and "waiting for stdin" not in quick.stderr
    with subprocess.Popen([sys.executable, "-m", "recursive_cli", "run", "hi", "--no-stdin",
                           "-C", str(workspace), "--no-session", *args], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as silent:
        assert silent.stdout is not None and silent.stderr is not None
        silent.wait(timeout=60)  # stdin open and silent all along (communicate would close it first)
        out, err = silent.stdout.read(), silent.stderr.read()
    assert silent.returncode == 0 and out == "ok\n"
    assert "waiting for stdin" not in err


def test_no_stdin_without_a_prompt_is_a_usage_error(workspace: Path) -> None:
    for words in ([], ["-"]):
        proc = invoke("run", *words, "--no-stdin", "-C", str(workspace), "--provider", "scripted",
                      input="this is not read")
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith("error: empty prompt") and "--no-stdin" in proc.stderr
        assert proc.stderr.count("\n") == 1


def test_loop_and_goal_take_no_stdin(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    args = scripted(tmp_path, [{"text": "done"}])
    loop = invoke("loop", "tidy up", "--no-stdin", "-C", str(workspace), *args, input="not read")
    assert loop.returncode == 0, loop.stderr
    goal = invoke("goal", "tidy up", "--check", "true", "--no-stdin", "-C", str(workspace), *args,
                  input="not read")
    assert goal.returncode == 0, goal.stderr
    assert user_prompts(isolated_home) == ["tidy up", "tidy up"]


def test_resume_reads_stdin_unless_no_stdin(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    args = scripted(tmp_path, [{"text": "one"}, {"text": "two"}, {"text": "three"}])
    assert invoke("run", "start", "-C", str(workspace), *args).returncode == 0
    piped = invoke("resume", "--last", "-C", str(workspace), input="from stdin")
    assert piped.returncode == 0 and piped.stdout == "two\n", piped.stderr
    ignored = invoke("resume", "--last", "--no-stdin", "-C", str(workspace), input="not read")
    assert ignored.returncode == 0 and ignored.stdout == "three\n", ignored.stderr
    assert user_prompts(isolated_home) == ["start", "from stdin", "Continue."]
