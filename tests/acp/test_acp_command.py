"""`recursive acp` on the command line: what it refuses before it speaks the protocol."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from clitools import invoke


@pytest.mark.parametrize(("args", "said"), [
    (["-o", "json"], "-o json does not apply"),
    (["--session-id", "20260101-000000-abcd"], "--session-id does not apply"),
])
def test_options_that_do_not_apply_are_usage_errors(args: list[str], said: str, workspace: Path) -> None:
    result = invoke("acp", *args, cwd=workspace)
    assert result.returncode == 2
    assert said in result.stderr and result.stdout == ""


def test_without_the_package_it_says_how_to_get_it(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "acp", None)  # (import acp now raises ImportError)
    result = invoke("acp", cwd=workspace, input="")
    assert result.returncode == 1
    assert "pip install 'recursive-cli[acp]'" in result.stderr and result.stdout == ""
