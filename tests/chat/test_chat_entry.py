"""The ways into the interactive session when no person is at a terminal: help as before,
a clear refusal, and nothing of the session's weight on the light commands."""

from __future__ import annotations

from pathlib import Path

from clitools import invoke, run_cli


def test_bare_recursive_not_on_a_terminal_prints_help_and_exits_2(workspace: Path) -> None:
    proc = run_cli(cwd=workspace)  # stdin is /dev/null, stdout a pipe
    assert proc.returncode == 2
    assert "Usage" in proc.stdout + proc.stderr
    assert "chat" in proc.stdout + proc.stderr  # the command is listed


def test_chat_not_on_a_terminal_is_refused_with_exit_2(workspace: Path) -> None:
    proc = invoke("chat", "hello", "--provider", "scripted", cwd=workspace)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: the interactive session needs a terminal")
    assert len(proc.stderr.splitlines()) == 1
    assert not (workspace.parent / "recursive-home" / "sessions").exists()


def test_resume_without_a_prompt_off_a_terminal_carries_on_as_before(tmp_path: Path, workspace: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text('[{"text": "first"}, {"text": "carried on"}]')
    first = invoke("run", "hello", "--provider", "scripted", "--script", str(script), cwd=workspace)
    assert first.returncode == 0, first.stderr
    again = invoke("resume", "--last", "--provider", "scripted", "--script", str(script), cwd=workspace)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "carried on"
