"""Flags of the agent commands, through the real CLI: `-c/--continue`, `--output-last-message`,
`--output-schema`; the answer on stdout whatever the outcome; exit 2 and one `error:` line for
every bad value; value names in `--help`; a stdout that cannot take UTF-8."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer.main
from clitools import invoke, json_lines, run_cli, write_script

from recursive_cli.surfaces.cli.app import app


def call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


def scripted(tmp_path: Path, replies: list[dict]) -> list[str]:
    return ["--provider", "scripted", "--script", str(write_script(tmp_path / "script.json", replies))]


def sessions(home: Path) -> list[dict]:
    """meta.json of every session, oldest first."""
    metas = [json.loads((f / "meta.json").read_text()) for f in (home / "sessions").iterdir()]
    return sorted(metas, key=lambda meta: meta["created"])


def user_prompts(home: Path, session_id: str) -> list[str]:
    lines = (home / "sessions" / session_id / "transcript.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    return [r["message"]["content"] for r in records
            if r.get("type") == "message" and r["message"]["role"] == "user"]


def result_of(stdout: str) -> dict:
    return json.loads(stdout)


SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "count": {"type": "integer"}},
          "required": ["name", "count"], "additionalProperties": False}


@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    return path


# ------------------------------------------------------------------------------ -c/--continue

def test_continue_goes_on_with_the_latest_session(tmp_path: Path, workspace: Path,
                                                  isolated_home: Path) -> None:
    args = scripted(tmp_path, [{"text": "first"}, {"text": "second"}, {"text": "third"}])
    assert invoke("run", "write the parser", "-C", str(workspace), *args).stdout == "first\n"
    again = invoke("run", "-c", "now the tests", "-C", str(workspace), "-o", "json", *args)
    assert again.returncode == 0, again.stderr
    (meta,) = sessions(isolated_home)
    assert result_of(again.stdout)["session_id"] == meta["id"]
    assert result_of(again.stdout)["result"] == "second"
    carry = invoke("run", "--continue", "-C", str(workspace), *args)  # no PROMPT: as resume --last
    assert carry.returncode == 0 and carry.stdout == "third\n", carry.stderr
    assert user_prompts(isolated_home, meta["id"]) == ["write the parser", "now the tests", "Continue."]


def test_loop_and_goal_continue_the_session_in_their_mode(tmp_path: Path, workspace: Path,
                                                          isolated_home: Path) -> None:
    args = scripted(tmp_path, [{"text": "ran"}, {"text": "looped"}, {"text": "goal done"}])
    assert invoke("run", "start", "-C", str(workspace), *args).returncode == 0
    loop = invoke("loop", "-c", "keep going", "-C", str(workspace), *args)
    assert loop.returncode == 0 and loop.stdout == "looped\n", loop.stderr
    assert sessions(isolated_home)[0]["mode"] == "loop"
    goal = invoke("goal", "-c", "finish", "--check", "true", "-C", str(workspace), *args)
    assert goal.returncode == 0 and goal.stdout == "goal done\n", goal.stderr
    (meta,) = sessions(isolated_home)
    assert meta["mode"] == "goal"
    assert user_prompts(isolated_home, meta["id"])[:3] == ["start", "keep going", "finish"]


def test_continue_without_a_session_says_so(workspace: Path, tmp_path: Path) -> None:
    for command in (["run", "-c", "hi"], ["loop", "-c", "hi"], ["goal", "-c", "hi", "--check", "true"]):
        proc = invoke(*command, "-C", str(workspace), *scripted(tmp_path, [{"text": "never"}]))
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.startswith("error: no session to continue in ")
        assert "recursive run PROMPT" in proc.stderr and proc.stderr.count("\n") == 1


def test_continue_refuses_session_id_and_no_session(workspace: Path, tmp_path: Path) -> None:
    args = scripted(tmp_path, [{"text": "x"}])
    for extra, word in ((["--session-id", "mine"], "--session-id"), (["--no-session"], "--no-session")):
        proc = invoke("run", "-c", "hi", *extra, "-C", str(workspace), *args)
        assert proc.returncode == 2 and word in proc.stderr and proc.stderr.count("\n") == 1


# ------------------------------------------------------------------- the answer on stdout

def test_an_answer_after_a_denial_is_printed(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"tool_calls": [call("run_shell", command="git log")]},
                               {"text": "I could not read the log; the last change is in parser.py."}])
    proc = invoke("run", "what changed?", "--permission-mode", "read-only", "-C", str(workspace), *args)
    assert proc.returncode == 6, proc.stderr
    assert proc.stdout == "I could not read the log; the last change is in parser.py.\n"
    assert "denied" in proc.stderr


def test_a_refusal_is_printed_and_exits_1(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"text": "I can't help with that.", "stop": "refusal"}])
    proc = invoke("run", "do something bad", "-C", str(workspace), *args)
    assert proc.returncode == 1
    assert proc.stdout == "I can't help with that.\n"


def test_a_goal_not_met_still_prints_its_last_answer(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"text": "tried once"}])
    proc = invoke("goal", "make it pass", "--check", "false", "--max-turns", "1", "-C", str(workspace), *args)
    assert proc.returncode == 4, proc.stderr
    assert proc.stdout == "tried once\n"


# ---------------------------------------------------------------- --output-last-message

def test_output_last_message_writes_the_answer(tmp_path: Path, workspace: Path) -> None:
    target = tmp_path / "answer.md"
    target.write_text("an older answer\n")
    proc = invoke("run", "x", "--output-last-message", str(target), "-o", "json", "-C", str(workspace),
                  *scripted(tmp_path, [{"text": "# Done\n\nAll good."}]))
    assert proc.returncode == 0, proc.stderr
    assert target.read_text() == "# Done\n\nAll good.\n"


def test_output_last_message_on_a_failed_run_with_an_answer(tmp_path: Path, workspace: Path) -> None:
    target = tmp_path / "answer.txt"
    args = scripted(tmp_path, [{"tool_calls": [call("run_shell", command="git log")]}, {"text": "partial view"}])
    proc = invoke("run", "x", "--permission-mode", "read-only", "--output-last-message", str(target),
                  "-C", str(workspace), *args)
    assert proc.returncode == 6
    assert target.read_text() == "partial view\n"


def test_output_last_message_is_emptied_when_there_is_no_answer(tmp_path: Path, workspace: Path) -> None:
    target = tmp_path / "answer.txt"
    target.write_text("stale\n")
    args = scripted(tmp_path, [{"tool_calls": [call("run_shell", command=f"echo {i}")]} for i in range(3)])
    proc = invoke("run", "x", "--max-steps", "1", "--output-last-message", str(target), "-C", str(workspace), *args)
    assert proc.returncode == 3
    assert target.read_text() == ""
    assert "no final answer" in proc.stderr


def test_output_last_message_needs_a_folder_that_exists(tmp_path: Path, workspace: Path) -> None:
    for bad in (tmp_path / "missing" / "a.txt", tmp_path):
        proc = invoke("run", "x", "--output-last-message", str(bad), "-C", str(workspace),
                      *scripted(tmp_path, [{"text": "never"}]))
        assert proc.returncode == 2 and proc.stderr.startswith("error: --output-last-message: ")
        assert proc.stderr.count("\n") == 1


# ---------------------------------------------------------------------- --output-schema

def test_output_schema_tells_the_model_and_carries_structured_output(
        tmp_path: Path, workspace: Path, schema_file: Path, isolated_home: Path) -> None:
    answer = 'Here it is:\n```json\n{"name": "parser", "count": 3}\n```'
    proc = invoke("run", "count the parsers", "--output-schema", str(schema_file), "-o", "stream-json",
                  "-C", str(workspace), *scripted(tmp_path, [{"text": answer}]))
    assert proc.returncode == 0, proc.stderr
    result = json_lines(proc.stdout)[-1]
    assert result["type"] == "result" and result["subtype"] == "success"
    assert result["structured_output"] == {"name": "parser", "count": 3}
    (prompt,) = user_prompts(isolated_home, result["session_id"])
    assert prompt.startswith("count the parsers\n\n") and '"additionalProperties": false' in prompt


def test_output_schema_text_mode_prints_the_json(tmp_path: Path, workspace: Path, schema_file: Path) -> None:
    target = tmp_path / "out.json"
    proc = invoke("run", "count", "--output-schema", str(schema_file), "--output-last-message", str(target),
                  "-C", str(workspace), *scripted(tmp_path, [{"text": '{"name": "a", "count": 1}'}]))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"name": "a", "count": 1}
    assert json.loads(target.read_text()) == {"name": "a", "count": 1}


def test_output_schema_asks_once_more_with_the_error(tmp_path: Path, workspace: Path, schema_file: Path,
                                                     isolated_home: Path) -> None:
    args = scripted(tmp_path, [{"text": '{"name": "a", "count": "three"}'}, {"text": '{"name": "a", "count": 3}'}])
    proc = invoke("run", "count", "--output-schema", str(schema_file), "-o", "json", "-C", str(workspace), *args)
    assert proc.returncode == 0, proc.stderr
    result = result_of(proc.stdout)
    assert result["structured_output"] == {"name": "a", "count": 3} and result["num_turns"] == 2
    retry = user_prompts(isolated_home, result["session_id"])[1]
    assert "$.count" in retry and "'three' is not of type 'integer'" in retry
    assert "asking once more" in proc.stderr


def test_output_schema_fails_after_the_second_miss(tmp_path: Path, workspace: Path, schema_file: Path) -> None:
    args = scripted(tmp_path, [{"text": "about three"}, {"text": '{"name": "a"}'}])
    proc = invoke("run", "count", "--output-schema", str(schema_file), "-o", "json", "-C", str(workspace), *args)
    assert proc.returncode == 1
    result = result_of(proc.stdout)
    assert result["subtype"] == "error_max_structured_output_retries" and result["is_error"] is True
    assert "structured_output" not in result
    (error,) = result["errors"]
    assert "does not match the JSON Schema" in error and "'count' is a required property" in error
    text = invoke("run", "count", "--output-schema", str(schema_file), "-C", str(workspace), *args)
    assert text.returncode == 1 and text.stdout == '{"name": "a"}\n'  # the answer still shows
    assert "error: the final answer does not match the JSON Schema" in text.stderr


@pytest.mark.parametrize(("content", "says"), [
    ("{not json", "is not JSON"),
    ('{"type": 5}', "is not a valid JSON Schema"),
    ("[1, 2]", "must hold a JSON Schema"),
    (None, "cannot read"),
])
def test_a_bad_schema_file_is_exit_2(tmp_path: Path, workspace: Path, content: str | None, says: str) -> None:
    path = tmp_path / "schema.json"
    if content is not None:
        path.write_text(content)
    proc = invoke("run", "x", "--output-schema", str(path), "-C", str(workspace),
                  *scripted(tmp_path, [{"text": "never"}]))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: --output-schema: ") and says in proc.stderr
    assert proc.stderr.count("\n") == 1


# ---------------------------------------------------------------- exit 2 for bad values

BAD_VALUES = [
    (["run", "x", "--max-duration", "5x"], "--max-duration", "90s"),
    (["run", "x", "--max-duration", "0"], "--max-duration", "more than 0"),
    (["run", "x", "--max-steps", "0"], "--max-steps", "at least 1"),
    (["run", "x", "--max-steps", "many"], "--max-steps", "whole number"),
    (["run", "x", "--max-cost", "-1"], "--max-cost", "more than 0"),
    (["run", "x", "--max-cost", "cheap"], "--max-cost", "number"),
    (["run", "x", "-o", "jsn"], "--output-format", "text, json or stream-json"),
    (["run", "x", "--provider", "nope"], "--provider", "openai, anthropic or scripted"),
    (["run", "x", "--permission-mode", "yolo"], "--permission-mode", "read-only"),
    (["run", "x", "--bogus"], "--bogus", "no such option"),
    (["run", "x", "--max-cost"], "--max-cost", "requires an argument"),
    (["loop", "x", "--max-iterations", "0"], "--max-iterations", "at least 1"),
    (["loop", "x", "--max-context-tokens", "10"], "--max-context-tokens", "at least 1000"),
    (["loop", "x", "--max-duration", "soon"], "--max-duration", "duration"),
    (["goal", "x", "--check", "true", "--max-turns", "none"], "--max-turns", "whole number"),
    (["goal", "x", "--check", "true", "--check-timeout", "soon"], "--check-timeout", "duration"),
    (["resume", "--last", "--max-steps", "-3"], "--max-steps", "at least 1"),
    (["resume", "--last", "-o", "yaml"], "--output-format", "stream-json"),
    (["sessions", "export", "s1", "--format", "pdf"], "--format", "jsonl, json, md or atif"),
    (["sessions", "gc", "--older-than", "soon"], "--older-than", ""),
    (["checkpoints", "restore", "s1", "--turn", "0"], "--turn", "at least 1"),
    (["checkpoints", "restore", "s1", "--turn", "last"], "--turn", "whole number"),
    (["checkpoints", "diff", "s1", "0"], "TURN", "at least 1"),
    (["config", "show", "--max-steps", "x"], "--max-steps", "whole number"),
    (["tools", "--permission-mode", "sometimes"], "--permission-mode", "accept-edits"),
]


@pytest.mark.parametrize(("words", "flag", "accepted"), BAD_VALUES, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_every_bad_value_is_one_line_and_exit_2(words: list[str], flag: str, accepted: str,
                                                 workspace: Path) -> None:
    proc = invoke(*words, cwd=workspace, env={"RECURSIVE_PROVIDER": "scripted"})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert flag in proc.stderr and accepted in proc.stderr
    for leak in ("Value error", "Input should", "Traceback", "╭", "Usage:"):
        assert leak not in proc.stderr


def test_a_bad_env_flag_names_the_variable(workspace: Path) -> None:
    proc = invoke("run", "x", cwd=workspace, env={"RECURSIVE_NO_STDIN": "maybe"})
    assert proc.returncode == 2
    assert proc.stderr == "error: --no-stdin (env RECURSIVE_NO_STDIN): expected true or false (1 or 0) (got 'maybe')\n"


# ------------------------------------------------------------------------- --help names

def command_paths() -> list[list[str]]:
    paths: list[list[str]] = []

    def walk(command, prefix: list[str]) -> None:  # type: ignore[no-untyped-def]
        subcommands = getattr(command, "commands", None)
        paths.append(prefix)
        for name, sub in (subcommands or {}).items():
            walk(sub, [*prefix, name])

    walk(typer.main.get_command(app), [])
    return paths


def test_help_shows_value_names_not_type_names() -> None:
    raw = re.compile(r"<(bool|str|int|float|path|file|list\[[^\]]*\]|int range|float range)>|\[x[<>]=?")
    for words in command_paths():
        proc = invoke(*words, "--help", env={"COLUMNS": "160", "NO_COLOR": "1"})
        assert proc.returncode == 0, words
        assert not raw.search(proc.stdout), (words, raw.findall(proc.stdout))
    run = invoke("run", "--help", env={"COLUMNS": "160", "NO_COLOR": "1"}).stdout
    for option, name in (("--max-steps", "N"), ("--max-cost", "USD"), ("--max-duration", "DURATION"),
                         ("--output-last-message", "FILE"), ("--output-schema", "FILE"),
                         ("--permission-mode", "MODE"), ("--workspace", "DIR"), ("--allow", "RULE")):
        assert re.search(rf"{re.escape(option)}\s.*\b{name}\b", run), option
    assert "RECURSIVE_NO_STDIN" in run


# ----------------------------------------------------------------- a non-UTF-8 stdout

def test_a_stdout_that_cannot_take_utf8_gets_replacements(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"text": "café ✓ naïve"}])
    env = {"PYTHONIOENCODING": "ascii"}
    text = run_cli("run", "x", "-C", str(workspace), "--no-session", *args, env=env)
    assert text.returncode == 0, text.stderr
    assert text.stdout == "caf? ? na?ve\n"
    assert "Traceback" not in text.stderr
    stream = run_cli("run", "x", "-C", str(workspace), "--no-session", "-o", "stream-json", *args, env=env)
    assert stream.returncode == 0, stream.stderr
    assert json_lines(stream.stdout)[-1]["result"] == "café ✓ naïve"  # escaped, nothing lost
