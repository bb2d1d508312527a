"""Permission modes and rules, decided without running anything."""

from __future__ import annotations

import asyncio

import pytest

from recursive_cli.core.settings import ConfigError
from recursive_cli.features.permissions import PermissionPolicy, Rule


@pytest.mark.parametrize(("mode", "tool", "kind", "allowed"), [
    ("auto", "run_shell", "shell", True),
    ("accept-edits", "write_file", "edit", True),
    ("accept-edits", "run_shell", "shell", False),
    ("read-only", "read_file", "read", True),
    ("read-only", "todo_write", "other", True),
    ("read-only", "edit_file", "edit", False),
    ("read-only", "remember", "other", False),
    ("ask", "read_file", "read", True),
    ("ask", "run_shell", "shell", False),  # headless: no hook, denied at once
])
def test_modes(mode: str, tool: str, kind: str, allowed: bool) -> None:
    decision = asyncio.run(PermissionPolicy(mode).decide(tool, kind, "x"))
    assert decision.allowed is allowed


def test_rules_refine_and_deny_wins() -> None:
    policy = PermissionPolicy("read-only", allow=["run_shell(git *)", "write_file(src/**)"],
                              deny=["run_shell(git push*)"])
    assert policy.verdict("run_shell", "shell", "git status")[0] == "allow"
    assert policy.verdict("run_shell", "shell", "git push origin")[0] == "deny"
    assert policy.verdict("write_file", "edit", "src/a/b.py")[0] == "allow"
    assert policy.verdict("write_file", "edit", "docs/a.md")[0] == "deny"


def test_patch_paths_must_all_be_allowed() -> None:
    policy = PermissionPolicy("read-only", allow=["apply_patch(src/*)"], deny=["apply_patch(*.lock)"])
    assert policy.verdict("apply_patch", "edit", "src/a.py, src/b.py")[0] == "allow"
    assert policy.verdict("apply_patch", "edit", "src/a.py, docs/b.md")[0] == "deny"
    assert policy.verdict("apply_patch", "edit", "src/a.py, poetry.lock")[0] == "deny"


def test_ask_hook_and_always() -> None:
    answers = iter([False, True])

    async def hook(tool: str, subject: str) -> bool:
        return next(answers)

    policy = PermissionPolicy("ask", ask=hook)
    assert not asyncio.run(policy.decide("run_shell", "shell", "ls")).allowed
    assert asyncio.run(policy.decide("run_shell", "shell", "ls")).allowed
    policy.remember("run_shell")
    assert policy.verdict("run_shell", "shell", "anything")[0] == "allow"


def test_rule_syntax() -> None:
    assert Rule.parse("run_shell(npm run *)") == Rule("run_shell", "npm run *")
    assert Rule.parse("web_fetch") == Rule("web_fetch", None)
    with pytest.raises(ConfigError):
        Rule.parse("not a rule(")
