"""Claude's permission modes and rules, and its tool names, as the headless surface reads them."""

from __future__ import annotations

from pathlib import Path

from recursive_cli.core.messages import ToolCall
from recursive_cli.surfaces.headless.flags import parse_flags, split_list
from recursive_cli.surfaces.headless.guard import ClaudeRules
from recursive_cli.surfaces.headless.tool_names import ClaudeView


def test_rules_in_claude_spelling() -> None:
    rules = ClaudeRules.of("default", ["Bash(git diff:*)", "Edit(src/**)", "WebFetch(domain:example.com)"],
                           ["Bash(git push:*)"])

    def verdict(tool: str, kind: str, subject: str, **arguments: str) -> str:
        return rules.verdict(tool, kind, subject, arguments)[0]

    assert verdict("run_shell", "shell", "git diff --stat") == "allow"
    assert verdict("run_shell", "shell", "git diff") == "allow"
    assert verdict("run_shell", "shell", "git diffx") == "ask"
    assert verdict("run_shell", "shell", "git push origin") == "deny"
    assert verdict("edit_file", "edit", "src/a/b.py") == "allow"
    assert verdict("edit_file", "edit", "docs/a.md") == "ask"
    assert verdict("read_file", "read", "anything") == "allow"
    assert verdict("web_fetch", "read", "https://docs.example.com/x", url="https://docs.example.com/x") == "allow"
    assert verdict("web_fetch", "read", "https://evil.test/", url="https://evil.test/") == "ask"


def test_modes() -> None:
    def verdicts(mode: str) -> list[str]:
        rules = ClaudeRules.of(mode, [], [])
        return [rules.verdict(tool, kind, "x", {})[0]
                for tool, kind in (("read_file", "read"), ("write_file", "edit"), ("run_shell", "shell"))]

    assert verdicts("default") == ["allow", "ask", "ask"]
    assert verdicts("acceptEdits") == ["allow", "allow", "ask"]
    assert verdicts("plan") == ["allow", "deny", "deny"]
    assert verdicts("bypassPermissions") == ["allow", "allow", "allow"]
    assert verdicts("dontAsk") == ["allow", "deny", "deny"]


def test_tool_calls_are_shown_in_claude_shape_and_taken_back(tmp_path: Path) -> None:
    view = ClaudeView(tmp_path)
    shell = ToolCall(id="c1", name="run_shell", arguments='{"command": "ls", "timeout_seconds": 5}')
    read = ToolCall(id="c2", name="read_file", arguments='{"path": "a.txt", "limit": 3}')

    assert view.present(shell) == ("Bash", {"command": "ls", "timeout": 5000})
    assert view.present(read) == ("Read", {"file_path": str(tmp_path / "a.txt"), "limit": 3})
    assert view.present(ToolCall(id="c3", name="apply_patch", arguments='{"patch": "p"}')) == (
        "apply_patch", {"patch": "p"})
    assert view.take_input("run_shell", {"command": "ls -l", "timeout": 2000, "description": "list"},
                           {"command": "ls", "timeout_seconds": 5}) == {"command": "ls -l", "timeout_seconds": 2.0}
    # an updated input is the whole input, as in Claude Code: what it leaves out is not given
    assert view.take_input("read_file", {"file_path": "/w/b.txt"}, {"path": "a.txt", "limit": 3}) == {
        "path": "/w/b.txt"}


def test_flag_forms() -> None:
    options = parse_flags(["--output-format", "stream-json", "--verbose", "--system-prompt", "-terse-",
                           "--allowedTools=Bash(git log:*),Read", "--allowedTools", "Edit Write",
                           "--max-turns=3", "--resume=abc", "--permission-prompt-tool=stdio",
                           "--setting-sources=user", "--input-format", "stream-json"])

    assert options.system_prompt == "-terse-" and options.max_turns == 3 and options.resume == "abc"
    assert options.allowed_tools == ["Bash(git log:*)", "Read", "Edit", "Write"]
    assert options.prompt_permission and options.streaming_input
    assert options.ignored == [] and options.setting_sources == ["user"] and not options.trusts_workspace
    assert parse_flags(["--setting-sources=user,project"]).trusts_workspace
    assert parse_flags(["--setting-sources", "local"]).trusts_workspace
    assert split_list("Bash(npm run test:*), Grep") == ["Bash(npm run test:*)", "Grep"]
    assert parse_flags(["-p", "--tools", "", "hi"]).tools == [] and parse_flags(["-p", "hi"]).tools is None
    assert parse_flags(["--print", "--", "-not a flag"]).prompt_words == ["-not a flag"]
