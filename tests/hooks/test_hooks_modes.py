"""The same hooks in every mode: loop, goal, resume and the headless stream-json mode
(`recursive -p`); and a `.claude/settings.json` written the way Claude's documentation shows
(a bash command validator, a formatter after edits) working unchanged."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from clitools import invoke, json_lines, run_cli
from hookkit import call, command, inputs, script, scripted, settings

VALIDATOR = '''#!/usr/bin/env python3
"""Claude-style Bash validator: refuse `grep`, suggest `rg`."""
import json, re, sys
data = json.load(sys.stdin)
if data.get("tool_name") != "Bash":
    sys.exit(0)
cmd = data.get("tool_input", {}).get("command", "")
if re.search(r"\\bgrep\\b(?!.*\\|)", cmd):
    print("Use 'rg' (ripgrep) instead of 'grep' for better performance", file=sys.stderr)
    sys.exit(2)
'''

FORMATTER = '''#!/bin/bash
# Claude-style formatter after edits: read file_path from the hook input, "format" it.
file=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"]["file_path"])')
case "$file" in *.py) sed -i 's/x=/x = /' "$file"; echo "formatted $file" >> "$CLAUDE_PROJECT_DIR/format.log";; esac
exit 0
'''


def deny_rm(tmp_path: Path, workspace: Path) -> Path:
    log = tmp_path / "pre.jsonl"
    hook = script(tmp_path / "no_rm.sh",
                  f"#!/bin/bash\ninput=$(cat)\necho \"$input\" >> {log}\n"
                  "case \"$input\" in *'rm -rf'*) echo 'rm -rf is blocked' >&2; exit 2;; esac\nexit 0\n")
    settings(workspace / ".recursive" / "settings.json", {"PreToolUse": [command(str(hook), "Bash")]})
    (workspace / "keep").mkdir()
    return log


RM = [{"tool_calls": [call("run_shell", command="rm -rf keep")]}, {"text": "done"}]


def test_loop_mode(tmp_path: Path, workspace: Path) -> None:
    log = deny_rm(tmp_path, workspace)
    proc = invoke("loop", "clean", "-C", str(workspace), "--no-session", "-o", "json", *scripted(tmp_path, RM))
    assert (workspace / "keep").is_dir()
    assert inputs(log)[0]["tool_input"] == {"command": "rm -rf keep"}
    (result,) = json_lines(proc.stdout)
    assert [d["tool_name"] for d in result["permission_denials"]] == ["run_shell"]


def test_goal_mode(tmp_path: Path, workspace: Path) -> None:
    log = deny_rm(tmp_path, workspace)
    proc = invoke("goal", "clean", "--check", "true", "-C", str(workspace), "--no-session",
                  *scripted(tmp_path, RM))
    assert (workspace / "keep").is_dir()
    assert len(inputs(log)) == 1
    assert "rm -rf is blocked" in proc.stderr


def test_resume_mode(tmp_path: Path, workspace: Path) -> None:
    log = deny_rm(tmp_path, workspace)
    args = scripted(tmp_path, [{"text": "hello"}, *RM])
    first = invoke("run", "hi", "-C", str(workspace), "--session-id", "r1", *args)
    assert first.returncode == 0, first.stderr
    proc = invoke("resume", "r1", "clean", "-C", str(workspace))
    assert (workspace / "keep").is_dir()
    assert len(inputs(log)) == 1, proc.stderr


def test_headless_stream_json_mode(tmp_path: Path, workspace: Path) -> None:
    log = deny_rm(tmp_path, workspace)
    proc = run_cli("-p", "clean", "-C", str(workspace), "--output-format", "stream-json", "--verbose",
                   "--include-hook-events", "--no-session-persistence", *scripted(tmp_path, RM), input="")
    assert (workspace / "keep").is_dir()
    lines = json_lines(proc.stdout)
    result = lines[-1]
    assert [d["tool_name"] for d in result["permission_denials"]] == ["Bash"]
    assert [line["subtype"] for line in lines if line.get("subtype", "").startswith("hook_")] == [
        "hook_started", "hook_finished"]
    assert inputs(log)[0]["tool_name"] == "Bash"


def test_headless_settings_flag_and_bad_settings(tmp_path: Path, workspace: Path) -> None:
    hook = script(tmp_path / "b.sh", "#!/bin/bash\necho nope >&2\nexit 2\n")
    given = tmp_path / "extra.json"
    settings(given, {"PreToolUse": [command(str(hook), "Write")]})
    replies = [{"tool_calls": [call("write_file", path="w.txt", content="x")]}, {"text": "done"}]
    proc = run_cli("-p", "write", "-C", str(workspace), "--settings", str(given), "--no-session-persistence",
                   *scripted(tmp_path, replies), input="")
    assert proc.returncode == 0, proc.stderr
    assert not (workspace / "w.txt").exists()
    bad = run_cli("-p", "write", "-C", str(workspace), "--settings", '{"hooks": {"Stop": {}}}',
                  *scripted(tmp_path, replies), input="")
    assert bad.returncode == 2 and "--settings: hooks.Stop: expected a list of matchers" in bad.stderr


def test_claude_documented_examples_work_unchanged(tmp_path: Path, workspace: Path) -> None:
    claude = workspace / ".claude"
    script(claude / "hooks" / "bash_validator.py", VALIDATOR)
    script(claude / "hooks" / "format.sh", FORMATTER)
    (claude / "settings.json").write_text(json.dumps({"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": f"{sys.executable} \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/bash_validator.py"}]}],
        "PostToolUse": [{"matcher": "Edit|MultiEdit|Write", "hooks": [
            {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/format.sh"}]}],
        "Notification": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send hi"}]}],
    }}))
    replies = [{"tool_calls": [call("run_shell", command="grep -r TODO .")]},
               {"tool_calls": [call("write_file", path="m.py", content="x=1\n")]},
               {"tool_calls": [call("apply_patch", patch="*** Begin Patch\n*** Add File: n.py\n+x=2\n*** End Patch\n")]},
               {"text": "done"}]
    proc = invoke("run", "tidy", "-C", str(workspace), "--no-session", *scripted(tmp_path, replies))
    assert proc.returncode == 0, proc.stderr
    assert "Use 'rg' (ripgrep) instead of 'grep'" in proc.stderr
    assert (workspace / "m.py").read_text() == "x = 1\n"
    assert (workspace / "n.py").read_text() == "x = 2\n"
    assert len((workspace / "format.log").read_text().splitlines()) == 2
