"""What a person sees: rich progress on a TTY stderr, plain lines when piped, stdout only the answer."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

from clitools import invoke, write_script

REPLIES = [
    {"text": "Let me write it.", "tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x\n"}}]},
    {"tool_calls": [{"name": "run_shell", "arguments": {"command": "exit 3"}}]},
    {"text": "All done."},
]


def run_with_tty_stderr(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "recursive_cli", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave, env={**os.environ, **env})
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 20)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read().decode() if proc.stdout else ""
    proc.wait(timeout=20)
    os.close(master)
    return proc.returncode, out, b"".join(chunks).decode(errors="replace")


def test_tty_progress_is_rich_and_stdout_is_the_answer(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", REPLIES)
    code, out, err = run_with_tty_stderr(
        ["run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script)],
        {"TERM": "xterm-256color", "COLUMNS": "100"})
    assert code == 0
    assert out == "All done.\n"
    assert "\x1b[" in err  # styled
    assert "✓ write_file a.txt (new file" in err
    assert "✗ run_shell exit 3 (exit 3" in err
    assert "Let me write it." in err  # streamed text
    assert "3 steps" in err


def test_no_color_on_a_tty(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", REPLIES)
    _, _, err = run_with_tty_stderr(
        ["run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script)],
        {"TERM": "xterm-256color", "NO_COLOR": "1"})
    assert "\x1b[3" not in err and "\x1b[9" not in err  # no colour codes
    assert "✓ write_file" in err


def test_piped_stderr_is_plain(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", REPLIES)
    proc = invoke("run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script))
    assert proc.returncode == 0 and proc.stdout == "All done.\n"
    assert "\x1b" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("✓ write_file a.txt") and lines[1].startswith("✗ run_shell exit 3")


def test_quiet_prints_nothing_but_the_answer(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", REPLIES)
    proc = invoke("run", "go", "-q", "-C", str(workspace), "--provider", "scripted", "--script", str(script))
    assert proc.returncode == 0 and proc.stdout == "All done.\n" and proc.stderr == ""


def test_tools_command_needs_no_key() -> None:
    proc = invoke("tools")
    assert proc.returncode == 0
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    assert names[:4] == ["read_file", "write_file", "edit_file", "apply_patch"]
    assert {"run_shell", "web_fetch", "todo_write", "remember", "recall"} <= set(names)
    as_json = invoke("tools", "--json")
    import json

    specs = json.loads(as_json.stdout)
    shell = next(s for s in specs if s["name"] == "run_shell")
    assert shell["parameters"]["required"] == ["command"]
