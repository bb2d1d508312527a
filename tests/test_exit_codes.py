"""One exit-code rule for bad input (SPEC §13, docs/exit-codes.md), walked case by case.

2 for every bad flag, value or file named on the command line (the workspace of `-C`, the
files of `--script`, `--output-schema` and `--mcp-config`, a missing argument, a mistyped
option); 1 for a bad config file found on disk (`config.toml`, `.mcp.json`, `settings.json`)
or a bad environment variable. Each case is the command line, the exit code and the first
line on stderr.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clitools import invoke, write_script

# {ws}: an empty workspace; {tmp}: the test's folder, which holds the files below.
CASES: list[tuple[str, list[str], dict[str, str], int, str]] = [
    ("a value out of range", ["run", "hi", "--max-steps", "0"], {}, 2,
     "error: --max-steps: expected a whole number of at least 1 (got '0')"),
    ("a mistyped option", ["run", "--modle", "x", "hi"], {}, 2,
     "error: no such option: --modle (did you mean --model?) (see `recursive run --help`)"),
    ("a missing argument", ["checkpoints", "list"], {}, 2,
     "error: missing argument SESSION (see `recursive checkpoints list --help`)"),
    ("a workspace that does not exist", ["run", "hi", "-C", "{tmp}/nope"], {}, 2,
     "error: --workspace: expected an existing directory (got '{tmp}/nope')"),
    ("a workspace that is a file", ["run", "hi", "-C", "{tmp}/utils.py"], {}, 2,
     "error: --workspace: expected a directory, not a file (got '{tmp}/utils.py')"),
    ("tools in a workspace that does not exist", ["tools", "-C", "{tmp}/nope"], {}, 2,
     "error: --workspace: expected an existing directory (got '{tmp}/nope')"),
    ("config show of a workspace that does not exist", ["config", "show", "-C", "{tmp}/nope"], {}, 2,
     "error: --workspace: expected an existing directory (got '{tmp}/nope')"),
    ("a fleet's workspace that does not exist", ["fleet", "run", "{tmp}/tasks.jsonl", "-C", "{tmp}/nope"], {}, 2,
     "error: --workspace: expected an existing directory (got '{tmp}/nope')"),
    ("an --add-dir that does not exist", ["run", "hi", "--add-dir", "{tmp}/nope"], {}, 2,
     "error: --add-dir: expected an existing directory (got '{tmp}/nope')"),
    ("a --script file that does not exist", ["run", "hi", "--script", "{tmp}/nope.json"], {}, 2,
     "error: --script: expected an existing file (got '{tmp}/nope.json')"),
    ("a --script file that is no script", ["run", "hi", "--script", "{tmp}/broken.json"], {}, 2,
     "error: --script: expected a JSON list of reply objects, or {\"replies\": [...]} (got '{tmp}/broken.json')"),
    ("an --output-schema file that does not exist", ["run", "hi", "--output-schema", "{tmp}/nope.json"], {}, 2,
     "error: --output-schema: cannot read {tmp}/nope.json: No such file or directory"),
    ("a malformed --mcp-config file", ["run", "hi", "--mcp-config", "{tmp}/broken.json"], {}, 2,
     "error: --mcp-config {tmp}/broken.json: not valid JSON: Expecting property name enclosed in double quotes: "
     "line 1 column 2 (char 1)"),
    ("a malformed .mcp.json in the workspace", ["run", "hi", "-C", "{tmp}/mcp-ws", "--trust-workspace"], {}, 1,
     "error: {tmp}/mcp-ws/.mcp.json: not valid JSON: Expecting property name enclosed in double quotes: "
     "line 1 column 2 (char 1)"),
    ("a malformed --settings file", ["run", "hi", "--settings", "{tmp}/broken.json"], {}, 2,
     "error: --settings {tmp}/broken.json: not valid JSON: Expecting property name enclosed in double quotes: "
     "line 1 column 2 (char 1)"),
    ("a malformed settings.json in the workspace", ["run", "hi", "-C", "{tmp}/hooks-ws", "--trust-workspace"], {}, 1,
     "error: {tmp}/hooks-ws/.recursive/settings.json: not valid JSON: Expecting property name enclosed in double "
     "quotes: line 1 column 2 (char 1)"),
    ("a malformed project config.toml", ["run", "hi", "-C", "{tmp}/toml-ws", "--trust-workspace"], {}, 1,
     "error: invalid value for max-steps (project config {tmp}/toml-ws/.recursive/config.toml:1): "
     "expected a whole number of at least 1 (got 0)"),
    ("a bad environment variable", ["run", "hi"], {"RECURSIVE_MAX_STEPS": "0"}, 1,
     "error: invalid value for max-steps (env RECURSIVE_MAX_STEPS): expected a whole number of at least 1 (got '0')"),
    ("a workspace from the environment that does not exist", ["run", "hi"], {"RECURSIVE_WORKSPACE": "{tmp}/nope"}, 1,
     "error: workspace does not exist: {tmp}/nope"),
    ("a workspace from the environment that is a file", ["run", "hi"], {"RECURSIVE_WORKSPACE": "{tmp}/utils.py"}, 1,
     "error: workspace is not a directory: {tmp}/utils.py"),
    # raised by the launch layer (launch/), reported once at the top
    ("a --session-id that is no id", ["run", "hi", "--session-id", "a b"], {}, 2,
     "error: invalid session id 'a b': use letters, digits, '.', '_' and '-'"),
    ("--continue with --session-id", ["run", "-c", "--session-id", "abc", "hi"], {}, 2,
     "error: --continue goes on with the latest session; it cannot take --session-id "
     "(to continue a given session: recursive resume SESSION)"),
    ("--continue with no session to continue", ["run", "-c", "hi"], {}, 1,
     "error: no session to continue in {tmp}/ws: start one with `recursive run PROMPT`, "
     "or see `recursive sessions list --all-workspaces`"),
    ("resume of a session that does not exist", ["resume", "nope-123", "hi"], {}, 1,
     "error: no session matches 'nope-123' (see `recursive sessions list`)"),
    ("the interactive session away from a terminal", ["chat"], {}, 2,
     "error: the interactive session needs a terminal (stdin and stdout); in scripts use `recursive run PROMPT`"),
]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """The files the cases name: a script, a broken JSON file, a workspace of each kind."""
    write_script(tmp_path / "script.json", [{"text": "fine"}])
    (tmp_path / "broken.json").write_text("{bad")
    (tmp_path / "tasks.jsonl").write_text('{"id": "a", "prompt": "x"}\n')
    (tmp_path / "utils.py").write_text("")
    (tmp_path / "ws").mkdir()
    (tmp_path / "mcp-ws").mkdir()
    (tmp_path / "mcp-ws" / ".mcp.json").write_text("{bad")
    (tmp_path / "hooks-ws" / ".recursive").mkdir(parents=True)
    (tmp_path / "hooks-ws" / ".recursive" / "settings.json").write_text("{bad")
    (tmp_path / "toml-ws" / ".recursive").mkdir(parents=True)
    (tmp_path / "toml-ws" / ".recursive" / "config.toml").write_text("max-steps = 0\n")
    return tmp_path


def test_every_bad_input_follows_the_one_rule(files: Path) -> None:
    seen = []
    for name, argv, env, _code, _first in CASES:
        words = [word.format(tmp=files) for word in argv]
        if words[0] == "run":  # offline, and in an empty workspace unless the case names one
            words += [] if "--script" in words else ["--provider", "scripted", "--script", str(files / "script.json")]
            words += [] if "-C" in words or "RECURSIVE_WORKSPACE" in env else ["-C", str(files / "ws")]
        proc = invoke(*words, env={key: value.format(tmp=files) for key, value in env.items()})
        first = (proc.stderr.splitlines() or [""])[0]
        seen.append((name, proc.returncode, first.replace(str(files), "{tmp}")))
    assert seen == [(name, code, first) for name, _argv, _env, code, first in CASES]
