"""Bad values, wherever they are set, get one `error:` line in our words (issue 14).

A bad command-line value is a usage error (exit 2) naming the flag and what it accepts; a bad
value in a config file or an environment variable is a broken config (exit 1, SPEC §4) naming
the file and line, or the variable, the key, what it accepts and what it got — never the
validator's own wording ("Input should be…", "Value error, …"). Also: `--add-dir` names
itself, a malformed base URL is exit 2 on the command line and 1 in the environment for every
command that reads settings, and a resumed
goal whose judge has no price is refused under --max-cost as a new one is.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from clitools import CliResult, host_pid, invoke, run_cli, wait_gone, wait_until, write_script

from recursive_cli.core import errors, settings

RULE = "expected a rule: tool or tool(glob), e.g. run_shell(git *)"
MILLION_IN = {"input_tokens": 1_000_000, "output_tokens": 0}


def scripted(tmp_path: Path, workspace: Path, replies: list[dict[str, Any]] | None = None) -> list[str]:
    script = write_script(tmp_path / "script.json", replies or [{"text": "fine"}])
    return ["-C", str(workspace), "--provider", "scripted", "--script", str(script)]


def project_config(workspace: Path, text: str) -> Path:
    (workspace / ".recursive").mkdir(exist_ok=True)
    path = workspace / ".recursive" / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def user_config(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def one_error(proc: CliResult, code: int) -> str:
    """The one line on stderr, `error: …`, of a command that exited with `code` and printed nothing."""
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: "), proc.stderr
    for leak in ("Input should", "Value error", "Traceback", "Usage:"):
        assert leak not in proc.stderr
    return proc.stderr.removeprefix("error: ").rstrip("\n")


# --- permission rules --------------------------------------------------------------------


@pytest.mark.parametrize(("flag", "rules", "bad"), [
    ("--deny", ["run shell("], "run shell("),
    ("--allow", [""], ""),
    ("--allow", ["read_file", "write_file(src/**"], "write_file(src/**"),  # the bad one of two
])
def test_a_malformed_rule_on_the_command_line_is_a_usage_error(flag: str, rules: list[str], bad: str,
                                                               tmp_path: Path, workspace: Path) -> None:
    given = [word for rule in rules for word in (flag, rule)]
    proc = invoke("run", "x", *scripted(tmp_path, workspace), *given)
    assert one_error(proc, 2) == f"{flag}: {RULE} (got {bad!r})"
    assert not (workspace.parent / "recursive-home" / "sessions").exists()  # refused before anything


def test_a_malformed_rule_in_config_names_the_file_line_and_key(tmp_path: Path, workspace: Path,
                                                                isolated_home: Path) -> None:
    config = project_config(workspace, 'model = "m"\ndeny = ["run_shell(git push*)", "run shell("]\n')
    proc = invoke("run", "x", *scripted(tmp_path, workspace))
    assert one_error(proc, 1) == f"invalid value for deny (project config {config}:2): {RULE} (got 'run shell(')"
    config.unlink()
    user = user_config(isolated_home, 'allow = "run_shell"\n')  # one rule, not a list of them
    proc = invoke("run", "x", *scripted(tmp_path, workspace))
    assert one_error(proc, 1) == (f"invalid value for allow (user config {user}:1): expected a list, "
                                  "e.g. allow = [\"run_shell(git *)\"] (got 'run_shell')")


def test_a_good_rule_in_config_still_applies(tmp_path: Path, workspace: Path) -> None:
    project_config(workspace, 'deny = ["write_file"]\n')
    replies = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
               {"text": "could not"}]
    proc = invoke("run", "x", *scripted(tmp_path, workspace, replies))
    assert proc.stdout == "could not\n" and not (workspace / "a.txt").exists()


# --- values from the environment and config files -----------------------------------------


@pytest.mark.parametrize(("env", "expected"), [
    ({"RECURSIVE_MAX_STEPS": "abc"},
     "invalid value for max-steps (env RECURSIVE_MAX_STEPS): expected a whole number of at least 1 (got 'abc')"),
    ({"RECURSIVE_MAX_STEPS": "0"},
     "invalid value for max-steps (env RECURSIVE_MAX_STEPS): expected a whole number of at least 1 (got '0')"),
    ({"RECURSIVE_PROVIDER": "opneai"},
     "invalid value for provider (env RECURSIVE_PROVIDER): expected openai, anthropic or scripted (got 'opneai')"),
])
def test_a_bad_value_from_the_environment_names_the_variable(env: dict[str, str], expected: str,
                                                             workspace: Path) -> None:
    proc = invoke("run", "x", "-C", str(workspace), env=env)
    assert one_error(proc, 1) == expected


@pytest.mark.parametrize(("line", "expected"), [
    ('max-steps = "x"', "max-steps: expected a whole number of at least 1 (got 'x')"),
    ("max-steps = 2.5", "max-steps: expected a whole number of at least 1 (got 2.5)"),
    ('output-format = "jsn"', "output-format: expected text, json or stream-json (got 'jsn')"),
    ('permission-mode = "yolo"', "permission-mode: expected auto, accept-edits, read-only, ask or plan (got 'yolo')"),
    ("max-cost = -1", "max-cost: expected an amount of USD more than 0, e.g. 0.50 (got -1)"),
    ("shell-timeout = 0", "shell-timeout: expected a number more than 0 (got 0)"),
    ('quiet = "maybe"', "quiet: expected true or false (1 or 0) (got 'maybe')"),
    ('max-duration = "5x"', "max-duration: expected a duration like 90 (seconds), 90s, 20m, 2h or 1h30m (got '5x')"),
    ('max-duration = "0s"', "max-duration: expected a duration of more than 0, like 90s, 20m or 2h (got '0s')"),
    ("model = 5", "model: expected text (got 5)"),
    ('add-dir = "../lib"', "add-dir: expected a list, e.g. add-dir = [\"../lib\"] (got '../lib')"),
])
def test_a_bad_value_in_config_names_the_file_line_and_key(line: str, expected: str, tmp_path: Path,
                                                           workspace: Path, trusted_workspaces: None) -> None:
    config = project_config(workspace, f'# settings of this project\n{line}\n')
    proc = invoke("run", "x", *scripted(tmp_path, workspace))
    key, accepted = expected.split(": ", 1)
    assert one_error(proc, 1) == f"invalid value for {key} (project config {config}:2): {accepted}"


def test_config_show_and_tools_report_a_bad_config_value_alike(workspace: Path) -> None:
    config = project_config(workspace, 'output-format = "jsn"\n')
    expected = f"invalid value for output-format (project config {config}:1): expected text, json or stream-json (got 'jsn')"
    for command in (["config", "show"], ["tools"]):
        assert one_error(invoke(*command, "-C", str(workspace)), 1) == expected


# --- --add-dir and -C ------------------------------------------------------------------------


def test_a_missing_add_dir_names_the_option(tmp_path: Path, workspace: Path) -> None:
    missing = tmp_path / "missing"
    proc = invoke("run", "x", *scripted(tmp_path, workspace), "--add-dir", str(missing))
    assert one_error(proc, 2) == f"--add-dir: expected an existing directory (got '{missing}')"
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    proc = invoke("run", "x", *scripted(tmp_path, workspace), "--add-dir", str(a_file))
    assert one_error(proc, 2) == f"--add-dir: expected a directory, not a file (got '{a_file}')"


def test_a_missing_workspace_still_says_workspace(tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    script = ["--provider", "scripted", "--script", str(write_script(tmp_path / "s.json", [{"text": "x"}]))]
    proc = invoke("run", "x", "-C", str(nowhere), *script)
    assert one_error(proc, 2) == f"--workspace: expected an existing directory (got '{nowhere}')"
    by_env = invoke("run", "x", *script, env={"RECURSIVE_WORKSPACE": str(nowhere)})
    assert one_error(by_env, 1) == f"workspace does not exist: {nowhere}"


# --- a malformed base URL: exit 2 as a flag, 1 from the environment, for every command -----


@pytest.mark.parametrize("command", [["resume"], ["config", "show"], ["tools"], ["run", "hi"]])
def test_a_malformed_base_url_is_a_usage_error_for_every_command(command: list[str], workspace: Path) -> None:
    proc = invoke(*command, "-C", str(workspace), "--api-base", "127.0.0.1:1/v1")
    assert one_error(proc, 2) == ("invalid value for api-base (flag): '127.0.0.1:1/v1' has no scheme; "
                                  "add http:// (http://127.0.0.1:1/v1)")
    by_env = invoke(*command, "-C", str(workspace), env={"OPENAI_BASE_URL": "localhost:11434/v1"})
    assert one_error(by_env, 1).startswith("invalid value for api-base (env OPENAI_BASE_URL): ")


def test_bad_value_error_is_a_config_error_in_the_errors_tree() -> None:
    assert issubclass(errors.BadValueError, errors.ConfigError)
    assert settings.BadValueError is errors.BadValueError  # its old home still exports it
    assert "── BadValueError" in (errors.__doc__ or "")


# --- a resumed goal's judge must be priced under --max-cost --------------------------------


def _goal_session(tmp_path: Path, workspace: Path, isolated_home: Path) -> list[str]:
    """A goal session `g1` on the priced `main-local`, judged by the unpriced `judge-local`."""
    user_config(isolated_home, '[prices."main-local"]\ninput = 0\noutput = 0\n')
    replies = [{"text": "working"}, {"text": json.dumps({"achieved": False, "reason": "not yet"})},
               {"text": "more work"}, {"text": json.dumps({"achieved": True, "reason": "done"})}]
    args = [*scripted(tmp_path, workspace, replies), "-m", "main-local"]
    first = invoke("goal", "x", "--until", "done", "--judge-model", "judge-local", "--max-turns", "1",
                   "--session-id", "g1", *args)
    assert first.returncode == 4, first.stderr  # goal not met in its one turn; no --max-cost yet
    return args


def _refused_for_the_judge(proc: CliResult) -> None:
    """Exit 2, one `error:` line naming the judge's model (after resume's notes on overrides)."""
    said = [line for line in proc.stderr.splitlines() if not line.startswith(("note: ", "warning: "))]
    assert proc.returncode == 2 and proc.stdout == "" and len(said) == 1, proc.stderr
    assert said[0].startswith("error: --max-cost 1 cannot be enforced: the judge model 'judge-local' "
                              "has no price"), proc.stderr
    assert '[prices."judge-local"]' in said[0]


def test_resuming_a_goal_refuses_max_cost_when_its_judge_has_no_price(tmp_path: Path, workspace: Path,
                                                                     isolated_home: Path) -> None:
    args = _goal_session(tmp_path, workspace, isolated_home)
    _refused_for_the_judge(invoke("resume", "g1", "-C", str(workspace), "--max-cost", "1"))
    _refused_for_the_judge(invoke("goal", "-c", *args, "--max-cost", "1"))  # `-c` carries it on too
    # Once the judge has a price the same resume runs (the refusals let go of the session).
    user_config(isolated_home, '[prices."main-local"]\ninput = 0\noutput = 0\n'
                               '[prices."judge-local"]\ninput = 0\noutput = 0\n')
    again = invoke("resume", "g1", "-C", str(workspace), "--max-cost", "1", "-o", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["total_cost_usd"] == 0


def test_a_run_continuing_a_goal_session_needs_no_judge_price(tmp_path: Path, workspace: Path,
                                                              isolated_home: Path) -> None:
    args = _goal_session(tmp_path, workspace, isolated_home)
    proc = invoke("run", "-c", "a plain question", *args, "--max-cost", "1")
    assert proc.returncode == 0, proc.stderr  # a run does not judge: the judge's price is not needed


# --- a killed turn's steps are priced with the configured prices on resume ------------------


def test_a_killed_turn_is_priced_from_config_when_resumed(tmp_path: Path, workspace: Path,
                                                          isolated_home: Path) -> None:
    user_config(isolated_home, '[prices."local-m"]\ninput = 1.0\noutput = 0\n')
    tool = {"name": "run_shell", "arguments": {"command": "echo $$ > tool.pid; exec sleep 30"}}
    replies = [{"tool_calls": [tool], "usage": MILLION_IN}, {"text": "never asked"}]
    args = [*scripted(tmp_path, workspace, replies), "-m", "local-m"]
    env = {**os.environ, "RECURSIVE_HOME": str(isolated_home)}
    proc = subprocess.Popen([sys.executable, "-m", "recursive_cli", "run", "x", *args, "--session-id", "k1"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    pid_file = workspace / "tool.pid"
    try:
        wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", proc=proc)
    finally:
        proc.kill()  # kill -9 mid-turn: the step's cost ($1.00 at the configured price) is unrecorded
        proc.wait(timeout=10)
    tool_pid = host_pid(pid_file)
    with contextlib.suppress(ProcessLookupError):  # (in the sandbox it died with the run)
        os.kill(tool_pid, signal.SIGKILL)
    assert wait_gone(tool_pid)
    resumed = invoke("resume", "k1", "-C", str(workspace), "--max-cost", "0.5", "-o", "json")
    result = json.loads(resumed.stdout)
    assert resumed.returncode == 3, resumed.stderr  # the $1.00 already spent is over the budget
    assert result["finish_reason"] == "max_cost"
    assert result["total_cost_usd"] == pytest.approx(1.0)


@pytest.mark.parametrize("args,flag", [
    (["--allow", "run shell("], "allow"),
    (["--api-base", "127.0.0.1:9/v1"], "api-base"),
])
def test_headless_mode_exits_2_for_a_bad_value_too(workspace: Path, args: list[str], flag: str) -> None:
    proc = run_cli("-p", "hi", "--provider", "scripted", *args, cwd=workspace)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"error: invalid value for {flag} (flag): ")
    assert proc.stdout == ""
