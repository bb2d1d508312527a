"""The errors module, and how a failure of our own (not the model's) ends a run."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from clitools import invoke, write_script

from recursive_cli.core import errors
from recursive_cli.core.events import FinishReason
from recursive_cli.core.results import exit_code_for


def test_errors_module_imports_nothing_from_the_package() -> None:
    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names]
    assert not [name for name in imported if name.startswith("recursive_cli")]
    assert all(node.level == 0 for node in ast.walk(tree) if isinstance(node, ast.ImportFrom))


def test_docstring_draws_every_exception_class() -> None:
    classes = [name for name, value in vars(errors).items()
               if isinstance(value, type) and issubclass(value, BaseException)]
    assert len(classes) >= 20
    missing = [name for name in classes if name not in (errors.__doc__ or "")]
    assert not missing


@pytest.mark.parametrize(("module", "name"), [
    ("recursive_cli.core.settings", "ConfigError"),
    ("recursive_cli.providers", "ProviderError"),
    ("recursive_cli.core.provider", "ContextLengthError"),
    ("recursive_cli.providers.scripted", "ScriptError"),
    ("recursive_cli.core.interrupt", "Interrupted"),
    ("recursive_cli.features.checkpoints", "GitCommandError"),
    ("recursive_cli.features.sessions.records", "SessionSchemaError"),
    ("recursive_cli.core.tool", "ToolError"),
    ("recursive_cli.tools.patch_engine", "PatchError"),
])
def test_old_homes_still_export_the_same_classes(module: str, name: str) -> None:
    imported = __import__(module, fromlist=[name])
    assert getattr(imported, name) is getattr(errors, name)


def test_the_tree() -> None:
    assert issubclass(errors.ContextLengthError, errors.ProviderError)
    assert issubclass(errors.SessionSchemaError, errors.SessionReadError)
    assert issubclass(errors.SessionStateError, errors.SessionReadError)
    assert issubclass(errors.UnknownTurnError, errors.CheckpointError)
    assert issubclass(errors.PatchError, errors.ToolError)
    for failure in (errors.ConfigError, errors.ProviderError, errors.SessionError,
                    errors.CheckpointError, errors.ToolError, errors.ScriptError):
        assert issubclass(failure, errors.RecursiveError)
    assert not issubclass(errors.Interrupted, errors.RecursiveError)  # control flow, not a failure


def test_provider_error_keeps_its_fields() -> None:
    error = errors.ContextLengthError("too long", status=400, retryable=False, retry_after=2.0)
    assert (str(error), error.reason, error.status, error.retryable, error.retry_after) == \
        ("too long", "too long", 400, False, 2.0)


def test_internal_error_is_its_own_finish_reason() -> None:
    assert FinishReason.INTERNAL_ERROR.value == "internal_error"
    assert exit_code_for(FinishReason.INTERNAL_ERROR) == (1, "error_during_execution")


# -- a damaged session state ends `resume` with exit 1 and one clear line -----------------------


def _damage(home: Path, session_id: str, key: str, value: Any) -> None:
    path = home / "sessions" / session_id / "meta.json"
    meta = json.loads(path.read_text())
    meta["state"][key] = value
    path.write_text(json.dumps(meta))


def _assert_state_error(stdout: str, stderr: str, code: int, feature: str) -> None:
    assert code == 1, stderr
    result = json.loads(stdout)
    assert result["subtype"] == "error_during_execution"
    assert result["finish_reason"] == "internal_error"
    errors_shown = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors_shown) == 1 and f"{feature} state" in errors_shown[0], stderr
    assert "Traceback" not in stderr and "ValidationError" not in stderr


def test_resume_of_a_damaged_goal_state_exits_1(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "goal.json", [{"text": "nothing to do"}])
    first = invoke("goal", "make a", "--check", "test -f a", "--max-turns", "1", "-C", str(workspace),
                   "--provider", "scripted", "--script", str(script), "--session-id", "g-bad")
    assert first.returncode == 4, first.stderr
    _damage(isolated_home, "g-bad", "goal", {"prompt": "make a", "max_turns": "many"})
    again = write_script(tmp_path / "again.json", [{"text": "unused"}])
    proc = invoke("resume", "g-bad", "--script", str(again), "-o", "json")
    _assert_state_error(proc.stdout, proc.stderr, proc.returncode, "goal")
    assert "max_turns" in proc.stderr


def test_resume_of_a_damaged_loop_state_exits_1(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "loop.json", [{"text": "done"}])
    first = invoke("loop", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                   "--session-id", "l-bad")
    assert first.returncode == 0, first.stderr
    _damage(isolated_home, "l-bad", "loop", {"max_iterations": "lots"})
    again = write_script(tmp_path / "again.json", [{"text": "unused"}])
    proc = invoke("resume", "l-bad", "--script", str(again), "-o", "json")
    _assert_state_error(proc.stdout, proc.stderr, proc.returncode, "loop")


# -- keys are read by settings only; the builder's home follows RECURSIVE_HOME -----------------


def test_keys_come_from_the_environment_settings_were_loaded_from() -> None:
    from recursive_cli.core.settings import load_settings, missing_key_message

    loaded = load_settings({}, env={"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a"})
    assert loaded.settings.api_key == "sk-o" and loaded.sources["api_key"] == "env OPENAI_API_KEY"
    assert loaded.api_key_for("anthropic") == "sk-a"
    assert missing_key_message("anthropic") == ("no API key for the anthropic provider: set "
                                                "RECURSIVE_API_KEY (or ANTHROPIC_API_KEY)")


def test_openai_provider_does_not_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from recursive_cli.providers.openai_provider import OpenAIProvider

    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    with pytest.raises(errors.ProviderError, match="no API key"):
        OpenAIProvider("gpt-4o", None, None)


def test_builder_default_home_follows_recursive_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recursive_cli import AgentRuntime

    monkeypatch.setenv("RECURSIVE_HOME", str(tmp_path / "elsewhere"))
    assert AgentRuntime.builder()._home == tmp_path / "elsewhere"
