"""What a person sees: rich progress on a TTY stderr, plain lines when piped, stdout only the answer."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

from clitools import CliResult, invoke, write_script

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


# ── issue 14: the summary line, `sessions show`, `resume --help` ───────────────────────────

def _run(tmp_path: Path, workspace: Path, replies: list[dict[str, object]], *extra: str) -> CliResult:
    script = write_script(tmp_path / "s.json", replies)
    return invoke("run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                  "--no-checkpoints", *extra)


def test_summary_says_one_step_and_cost_unknown_for_a_model_without_price(tmp_path: Path,
                                                                           workspace: Path) -> None:
    proc = _run(tmp_path, workspace, [{"text": "hi"}])
    assert proc.stderr.splitlines()[-1].startswith("1 step · 10 in / 5 out tokens · cost unknown · ")


def test_summary_of_a_run_with_no_step_on_an_unpriced_model_is_not_zero_dollars(tmp_path: Path,
                                                                                workspace: Path) -> None:
    proc = _run(tmp_path, workspace, [{"error": {"status": 400, "message": "bad request"}}])
    assert proc.returncode == 1
    assert "0 steps · 0 in / 0 out tokens · cost unknown · " in proc.stderr
    assert "$0.0000" not in proc.stderr


def test_summary_shows_zero_dollars_only_when_nothing_was_spent(tmp_path: Path, workspace: Path) -> None:
    failed = _run(tmp_path, workspace, [{"error": {"status": 400, "message": "bad"}}], "--model", "gpt-4o")
    assert "0 steps · 0 in / 0 out tokens · $0.0000 · " in failed.stderr  # priced, and nothing spent
    tiny = _run(tmp_path, workspace, [{"text": "hi", "usage": {"input_tokens": 1, "output_tokens": 1}}],
                "--model", "gpt-4o-mini")
    assert "1 step · 1 in / 1 out tokens · <$0.0001 · " in tiny.stderr


def test_summary_of_a_resumed_session_labels_the_session_total(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "first"}, {"text": "second"}])
    args = ["-C", str(workspace), "--provider", "scripted", "--script", str(script), "--no-checkpoints"]
    assert invoke("run", "one", *args, "--session-id", "sum-1").returncode == 0
    proc = invoke("resume", "sum-1", "two", *args)
    assert proc.returncode == 0 and proc.stdout == "second\n", proc.stderr
    assert ("1 step · 10 in / 5 out tokens · session total 20 in / 10 out tokens, cost unknown · "
            in proc.stderr.splitlines()[-1])


def test_sessions_show_keeps_indentation_and_non_ascii(tmp_path: Path, workspace: Path) -> None:
    code = "def café():\n    return 'ünï'\n"
    replies = [{"text": "Voilà:\n    indented", "tool_calls": [
                   {"name": "write_file", "arguments": {"path": "é.py", "content": code}}]},
               {"text": "Fini."}]
    assert _run(tmp_path, workspace, replies, "--session-id", "show-1").returncode == 0
    shown = invoke("sessions", "show", "show-1").stdout
    assert "assistant: Voilà:\n    indented\n" in shown
    assert '→ write_file {"path": "é.py", "content": "def café():\\n    return \'ünï\'\\n"}' in shown
    assert "\\u" not in shown


def test_resume_usage_line() -> None:
    proc = invoke("resume", "--help", env={"COLUMNS": "120"})
    assert "resume [OPTIONS] [SESSION] [PROMPT]..." in proc.stdout
    assert "[[SESSION]" not in proc.stdout


def test_summary_of_a_model_priced_zero_in_config_is_zero_dollars(tmp_path: Path, workspace: Path,
                                                                  isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text('[prices."my-local"]\ninput = 0\noutput = 0\n')
    failed = _run(tmp_path, workspace, [{"error": {"status": 400, "message": "bad"}}], "--model", "my-local")
    assert "0 steps · 0 in / 0 out tokens · $0.0000 · " in failed.stderr
    ran = _run(tmp_path, workspace, [{"text": "hi"}], "--model", "my-local")
    assert "1 step · 10 in / 5 out tokens · $0.0000 · " in ran.stderr
