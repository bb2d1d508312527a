"""features/safe_commands.py: which command lines run without asking (plan mode, Claude's
default and acceptEdits modes). The whole flow, against the real Agent SDK, is in
tests/sdk/test_sdk_command_permissions.py; these are the edges it does not reach."""

from __future__ import annotations

import pytest

from recursive_cli.features.safe_commands import inside_roots, read_only_command, workspace_command

INSIDE = inside_roots(("/ws", "/extra"), "/ws")


@pytest.mark.parametrize("command", ["date -s 2020-01-01", "rg --pre ./run.sh x", "hostname other", "file -C -m x",
                                     "git diff --ext-diff", "git -c core.pager=evil log", "uniq a", "env rm -rf x",
                                     "cat < a", "(ls)", "ls &", "echo `id`"])
def test_options_that_change_or_run_something_are_not_read_only(command: str) -> None:
    assert not read_only_command(command)


@pytest.mark.parametrize(("command", "passes"), [
    ("cat /extra/notes.txt", True), ("ls ~", False), ("cat sub/../a", True), ("cat sub/../../a", False),
    ("ls 2>/dev/null", True), ("ls -l 2>&1 | head", True), ('grep "a(b" a.txt', True), ("echo $HOME", True)])
def test_paths_must_lie_inside_the_roots(command: str, passes: bool) -> None:
    assert read_only_command(command, INSIDE) is passes


@pytest.mark.parametrize(("command", "passes"), [
    ("mkdir -p /extra/d", True), ("rm -rf .", False), ("mv a /tmp/b", False), ("echo x > /extra/y", True),
    ("echo x > ~/y", False), ("touch a; chmod +x a", False), ("ls $HOME", False)])
def test_accept_edits_commands_stay_inside_the_roots(command: str, passes: bool) -> None:
    assert workspace_command(command, INSIDE) is passes
