"""A session's state: one typed part per feature, validated the same way for every feature."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from clitools import invoke, write_script

from recursive_cli.core.errors import SessionStateError
from recursive_cli.core.state import SessionState, StatePart


@dataclass(slots=True, kw_only=True)
class Counter(StatePart):
    key: ClassVar[str] = "counter"
    count: int = 0


def test_a_part_is_saved_whole_with_the_others_and_read_back_typed() -> None:
    saved: list[dict] = []
    state = SessionState({"other": {"kept": True}}, saved.append)
    assert state.get(Counter) is None and Counter not in state
    state.put(Counter, Counter(count=3))
    assert saved[-1] == {"other": {"kept": True}, "counter": {"count": 3}}
    assert SessionState(saved[-1]).get(Counter) == Counter(count=3)
    state.put(Counter, None)
    assert saved[-1] == {"other": {"kept": True}} and "counter" not in state


def test_a_damaged_part_names_its_feature_and_field() -> None:
    state = SessionState({"counter": {"count": "many"}})
    with pytest.raises(SessionStateError, match=r"counter state in meta.json is damaged \(count: "):
        state.get(Counter)


def test_a_model_without_a_key_is_not_a_part() -> None:
    @dataclass
    class Loose:
        x: int = 0

    with pytest.raises(TypeError, match="no `key`"):
        SessionState().get(Loose)


def _damage(home: Path, session_id: str, key: str, value: object) -> None:
    path = home / "sessions" / session_id / "meta.json"
    meta = json.loads(path.read_text())
    meta["state"][key] = value
    path.write_text(json.dumps(meta))


@pytest.mark.parametrize("mode,args,key", [
    ("loop", [], "loop"),
    ("goal", ["--check", "true"], "goal"),
])
def test_resume_of_a_damaged_state_says_so_for_loop_and_goal_alike(
        tmp_path: Path, workspace: Path, isolated_home: Path, mode: str, args: list[str], key: str) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "done"}, {"text": "again"}])
    first = invoke(mode, "task", *args, "-C", str(workspace), "--provider", "scripted",
                   "--script", str(script), "--session-id", f"{mode}-1")
    assert first.returncode == 0, first.stderr
    _damage(isolated_home, f"{mode}-1", key, {"max_turns": "x", "max_iterations": "x", "prompt": 1})
    resumed = invoke("resume", f"{mode}-1", "-C", str(workspace), "-o", "json")
    result = json.loads(resumed.stdout)
    assert resumed.returncode == 1
    assert result["subtype"] == "error_during_execution"
    assert f"the session's {key} state in meta.json is damaged" in result["errors"][0]
    assert f"the session's {key} state in meta.json is damaged" in resumed.stderr
