"""What a new user reads when a command line goes wrong, and counts in the right number (issue 32).

A missing argument says which and shows the usage line; a mistyped option or command gets the
one name it is closest to (`--modle` → `--model`, `--verison` → `--version`); `version` alone
prints the version; `recursive "PROMPT"` and `recursive -m MODEL "PROMPT"` (off a terminal) run it; a hook's block is told in the two lines every other denial takes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitools import invoke, run_cli, write_script

from recursive_cli.core.wording import counted

MISSING = [
    (["checkpoints", "list"], "missing argument SESSION", "usage: recursive checkpoints list [OPTIONS] SESSION"),
    (["sessions", "show"], "missing argument SESSION", "usage: recursive sessions show [OPTIONS] SESSION"),
    (["sessions", "export"], "missing argument SESSION", "usage: recursive sessions export [OPTIONS] SESSION"),
    (["sessions", "rm"], "missing argument SESSION", "usage: recursive sessions rm [OPTIONS] SESSION..."),
    (["sessions", "import"], "missing argument FILE", "usage: recursive sessions import [OPTIONS] FILE"),
    (["fleet", "run"], "missing argument TASKS.jsonl", "usage: recursive fleet run [OPTIONS] TASKS.jsonl"),
    (["fleet", "status"], "missing argument DIR", "usage: recursive fleet status [OPTIONS] DIR"),
    (["fleet", "resume"], "missing argument DIR", "usage: recursive fleet resume [OPTIONS] DIR"),
    (["mcp", "get"], "missing argument NAME", "usage: recursive mcp get [OPTIONS] NAME"),
    (["sessions", "gc"], "missing option --older-than", "usage: recursive sessions gc [OPTIONS]"),
]


@pytest.mark.parametrize(("argv", "said", "usage"), MISSING, ids=[" ".join(case[0]) for case in MISSING])
def test_a_missing_argument_is_named_with_the_usage_line(argv: list[str], said: str, usage: str) -> None:
    proc = invoke(*argv)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f"error: {said} (see `recursive {' '.join(argv)} --help`)", usage]


@pytest.mark.parametrize(("argv", "hint"), [
    (["run", "--modle", "gpt-4.1", "hi"], "did you mean --model?"),
    (["run", "--max-step", "3", "hi"], "did you mean --max-steps?"),
    (["run", "--no-stram", "hi"], "did you mean --no-stream?"),
    (["sessions", "list", "--jsn"], "did you mean --json?"),
])
def test_a_mistyped_option_gets_the_closest_of_the_commands_own(argv: list[str], hint: str) -> None:
    proc = invoke(*argv)
    assert proc.returncode == 2
    assert proc.stderr == f"error: no such option: {argv[1] if argv[0] == 'run' else argv[2]} ({hint}) " \
                          f"(see `recursive {argv[0]}{' list' if argv[0] == 'sessions' else ''} --help`)\n"


def test_an_option_far_from_every_name_gets_no_guess() -> None:
    proc = invoke("run", "--zzzzzz", "hi")
    assert proc.returncode == 2
    assert proc.stderr == "error: no such option: --zzzzzz (see `recursive run --help`)\n"


@pytest.mark.parametrize(("argv", "said"), [
    (["version", "of"], "error: no such command 'version' (did you mean --version?) (see `recursive --help`)"),
    (["--verison"], "error: no such option: --verison (did you mean --version?) (see `recursive --help`)"),
    (["--modle", "gpt-4.1", "hi"], "error: no such option: --modle (did you mean --model?) (see `recursive run --help`)"),
    (["-p", "--modle", "gpt-4.1", "hi"], "error: unknown option --modle (did you mean --model?) (see `recursive -p --help`)"),
    (["sesions"], "error: no such command 'sesions' (did you mean sessions?) (see `recursive --help`)"),
    (["sessions", "lst"], "error: no such command 'lst' (did you mean list?) (see `recursive sessions --help`)"),
])
def test_a_mistyped_command_says_what_was_meant(argv: list[str], said: str) -> None:
    proc = run_cli(*argv)  # through the console entry, which would take another word as a prompt
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.replace("python -m recursive_cli", "recursive").splitlines() == [said]


def test_version_alone_prints_the_version_as_git_version_does() -> None:
    from recursive_cli import __version__

    proc = run_cli("version")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"recursive {__version__}\n", "")
    assert run_cli("--version").stdout == proc.stdout
    shown = run_cli("help")
    assert shown.returncode == 0 and "Usage:" in shown.stdout and "sessions" in shown.stdout


def test_options_before_a_prompt_run_it_off_a_terminal(tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.json", [{"text": "ran it"}])
    proc = run_cli("--provider", "scripted", "--script", str(script), "-C", str(tmp_path), "-o", "json",
                   "--no-session", "fix the tests")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["result"] == "ran it"


def test_a_prompt_without_a_command_is_run(tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.json", [{"text": "ran it"}])
    for words in (["fix the tests"], ["hello"], ["add", "a", "docstring"]):
        proc = run_cli(*words, "-C", str(tmp_path), "--provider", "scripted", "--script", str(script),
                       "-o", "json", "--no-session")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["result"] == "ran it"


def test_print_is_in_the_help_the_man_page_and_the_completions() -> None:
    proc = invoke("--help")
    assert proc.returncode == 0
    assert "--print" in proc.stdout and "-p" in proc.stdout and "claude -p" in proc.stdout
    root = Path(__file__).resolve().parent.parent
    assert "\\fB\\%\\-p\\fR, \\fB\\%\\-\\-print\\fR" in (root / "man" / "recursive.1").read_text()
    assert "-s p -l print" in (root / "completions" / "recursive.fish").read_text()
    for name in ("recursive.bash", "_recursive"):
        assert "--print" in (root / "completions" / name).read_text()


@pytest.mark.parametrize(("count", "noun", "said"), [
    (1, "line", "1 line"), (2, "line", "2 lines"), (0, "turn", "0 turns"), (1, "turn", "1 turn"),
    (1, "entry", "1 entry"), (3, "entry", "3 entries"),
])
def test_counts_take_the_right_number(count: int, noun: str, said: str) -> None:
    assert counted(count, noun, "entries" if noun == "entry" else None) == said


def test_a_hook_block_is_told_in_two_lines_as_other_denials(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".recursive").mkdir(parents=True)
    hook = tmp_path / "block.sh"
    hook.write_text("#!/bin/bash\necho 'rm is not allowed here' >&2\nexit 2\n")
    hook.chmod(0o755)
    (workspace / ".recursive" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": str(hook)}]}]}}))
    script = write_script(tmp_path / "script.json", [
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": "rm -rf build"}}]}, {"text": "ok"}])
    common = ["-C", str(workspace), "--provider", "scripted", "--script", str(script), "--no-checkpoints"]
    by_hook = invoke("run", "clean", *common, "--trust-workspace")
    by_rule = invoke("run", "clean", *common, "--deny", "run_shell")
    assert by_hook.returncode == by_rule.returncode == 6
    said = [line for line in by_hook.stderr.splitlines() if "rm -rf build" in line]
    assert said == ["✗ denied run_shell rm -rf build: PreToolUse hook: rm is not allowed here",
                    "✗ run_shell rm -rf build (permission denied)"]
    assert len([line for line in by_rule.stderr.splitlines() if "rm -rf build" in line]) == 2
