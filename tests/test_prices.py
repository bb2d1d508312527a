"""`[prices."MODEL"]` in config: a budget that cannot be enforced refuses to start (exit 2), a
configured price enforces `--max-cost` (the goal judge's too), and `config show` tells the
price in force and where it comes from (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clitools import CliResult, invoke, write_script
from fakeserver import FakeLLMServer

from recursive_cli.core.messages import Usage
from recursive_cli.core.pricing import ModelPrice, cost_usd, price_for

MILLION_IN = {"input_tokens": 1_000_000, "output_tokens": 0}
LOCAL = "qwen2.5-coder"


def scripted(tmp_path: Path, workspace: Path, replies: list[dict[str, Any]]) -> list[str]:
    script = write_script(tmp_path / "script.json", replies)
    return ["-C", str(workspace), "--provider", "scripted", "--script", str(script)]


def user_config(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def project_config(workspace: Path, text: str) -> Path:
    (workspace / ".recursive").mkdir(exist_ok=True)
    path = workspace / ".recursive" / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def sessions(home: Path) -> list[str]:
    folder = home / "sessions"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def refused(proc: CliResult, model: str = LOCAL) -> None:
    """Exit 2 with one `error:` line naming the model and the table that would price it."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, proc.stderr  # (resume may say first which flags override the session)
    line = errors[0]
    assert proc.stderr.endswith(line + "\n") and "cannot be enforced" in line
    assert f"{model!r} has no price" in line and f'[prices."{model}"]' in line
    assert "input and output" in line and "per million tokens" in line


# --- refusing a budget that cannot be enforced ------------------------------------------


@pytest.mark.parametrize("command", [["run"], ["loop"], ["goal", "--check", "true"]])
def test_max_cost_on_an_unpriced_model_refuses_to_start(
        command: list[str], tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    args = scripted(tmp_path, workspace, [{"text": "should never be asked"}])
    proc = invoke(*command, "hi", *args, "-m", LOCAL, "--max-cost", "0.001")
    refused(proc)
    assert "--max-cost 0.001" in proc.stderr
    assert str(isolated_home / "config.toml") in proc.stderr  # where to put the table
    assert sessions(isolated_home) == []  # nothing started


def test_the_refusal_names_a_max_cost_set_in_config(tmp_path: Path, workspace: Path,
                                                    isolated_home: Path) -> None:
    config = user_config(isolated_home, "max-cost = 2\n")
    proc = invoke("run", "hi", *scripted(tmp_path, workspace, [{"text": "x"}]), "-m", LOCAL)
    refused(proc)
    assert f"max-cost 2 (user config {config}:1)" in proc.stderr


def test_json_output_refuses_the_same_way(tmp_path: Path, workspace: Path) -> None:
    proc = invoke("run", "hi", *scripted(tmp_path, workspace, [{"text": "x"}]), "-m", LOCAL,
                  "--max-cost", "1", "-o", "json")
    refused(proc)


def test_without_max_cost_an_unpriced_model_still_runs(tmp_path: Path, workspace: Path) -> None:
    proc = invoke("run", "hi", *scripted(tmp_path, workspace, [{"text": "fine"}]), "-m", LOCAL,
                  "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["total_cost_usd"] is None


def test_resume_checks_the_sessions_model(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    args = scripted(tmp_path, workspace, [{"text": "a"}, {"text": "b"}])
    assert invoke("run", "x", *args, "-m", LOCAL, "--session-id", "local-1").returncode == 0
    proc = invoke("resume", "local-1", "more", "-C", str(workspace), "--max-cost", "0.5")
    refused(proc)
    assert proc.stderr.startswith("note: --max-cost overrides the session's none with 0.5\n")
    # Once priced, the same resume runs: the refusal left the session unlocked.
    user_config(isolated_home, f'[prices."{LOCAL}"]\ninput = 0\noutput = 0\n')
    again = invoke("resume", "local-1", "more", "-C", str(workspace), "--max-cost", "0.5", "-o", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["result"] == "b"


# --- a configured price is the price --------------------------------------------------


def test_a_configured_price_enforces_max_cost(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    user_config(isolated_home, f'[prices."{LOCAL}"]\ninput = 1.0\noutput = 2.0\n')
    replies = [{"tool_calls": [{"name": "list_dir", "arguments": {}}], "usage": MILLION_IN},
               {"text": "never asked"}]
    proc = invoke("run", "x", *scripted(tmp_path, workspace, replies), "-m", LOCAL,
                  "--max-cost", "0.5", "-o", "json")
    assert proc.returncode == 3, proc.stderr
    result = json.loads(proc.stdout)
    assert result["subtype"] == "error_max_budget_usd" and result["finish_reason"] == "max_cost"
    assert result["total_cost_usd"] == pytest.approx(1.0)
    assert result["num_turns"] == 1
    assert "--max-cost" in proc.stderr


def test_a_local_model_priced_zero_runs_and_costs_zero(tmp_path: Path, workspace: Path,
                                                       isolated_home: Path) -> None:
    user_config(isolated_home, f'[prices."{LOCAL}"]\ninput = 0\noutput = 0\n')
    proc = invoke("run", "x", *scripted(tmp_path, workspace, [{"text": "done", "usage": MILLION_IN}]),
                  "-m", LOCAL, "--max-cost", "0.001", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["total_cost_usd"] == 0.0


def test_the_workspace_price_wins_and_overrides_the_builtin_table(
        tmp_path: Path, workspace: Path, isolated_home: Path, trusted_workspaces: None) -> None:
    user_config(isolated_home, '[prices."gpt-4o"]\ninput = 4\noutput = 0\n'
                               f'[prices."{LOCAL}"]\ninput = 1\noutput = 0\n')
    project_config(workspace, '[prices."gpt-4o"]\ninput = 8\noutput = 0\n')
    costs = {}
    for model in ("gpt-4o", LOCAL):
        proc = invoke("run", "x", *scripted(tmp_path, workspace, [{"text": "a", "usage": MILLION_IN}]),
                      "-m", model, "-o", "json")
        assert proc.returncode == 0, proc.stderr
        costs[model] = json.loads(proc.stdout)["total_cost_usd"]
    assert costs == {"gpt-4o": pytest.approx(8.0), LOCAL: pytest.approx(1.0)}  # builtin gpt-4o: 2.50


def test_cache_prices_are_configurable(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    user_config(isolated_home, f'[prices."{LOCAL}"]\ninput = 1\noutput = 10\ncache-read = 0.5\n'
                               'cache_write = 2\n')
    usage = {"input_tokens": 1_000_000, "output_tokens": 100_000, "cache_read_tokens": 400_000,
             "cache_write_tokens": 100_000}
    proc = invoke("run", "x", *scripted(tmp_path, workspace, [{"text": "a", "usage": usage}]),
                  "-m", LOCAL, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["total_cost_usd"] == pytest.approx(0.5 * 1 + 0.4 * 0.5 + 0.1 * 2 + 0.1 * 10)


def test_the_goal_judge_is_priced_from_config_and_refused_without_a_price(
        workspace: Path, isolated_home: Path) -> None:
    replies = [{"text": "done", "usage": MILLION_IN},
               {"text": '{"achieved": true, "reason": "ok"}', "usage": MILLION_IN}]
    args = ["goal", "x", "--until", "done", "-C", str(workspace), "-m", "main-local",
            "--judge-model", "judge-local", "--max-cost", "100", "-o", "json"]
    env = {"RECURSIVE_API_KEY": "sk-test"}
    user_config(isolated_home, '[prices."main-local"]\ninput = 1\noutput = 0\n')
    with FakeLLMServer(replies) as server:
        proc = invoke(*args, "--api-base", server.openai_base_url, env=env)
        assert server.requests == []  # refused before asking anything
    refused(proc, "judge-local")
    assert "the judge model 'judge-local'" in proc.stderr
    user_config(isolated_home, '[prices."main-local"]\ninput = 1\noutput = 0\n'
                               '[prices."judge-local"]\ninput = 3\noutput = 0\n')
    with FakeLLMServer(replies) as server:
        proc = invoke(*args, "--api-base", server.openai_base_url, env=env)
        models = [request.body["model"] for request in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert models == ["main-local", "judge-local"]
    assert json.loads(proc.stdout)["total_cost_usd"] == pytest.approx(1.0 + 3.0)


# --- bad tables -----------------------------------------------------------------------


@pytest.mark.parametrize(("table", "problem"), [
    ('[prices."m"]\ninput = "cheap"\noutput = 1\n', "input must be a number of USD per million tokens"),
    ('[prices."m"]\ninput = -1\noutput = 1\n', "input must be a number"),
    ('[prices."m"]\ninput = 1\n', "missing output"),
    ('[prices."m"]\ninput = 1\noutput = 1\ninptu = 2\n', "unknown key 'inptu'"),
    ('prices = 3\n', "prices must be tables"),
])
def test_a_bad_price_table_names_file_and_line(table: str, problem: str, workspace: Path,
                                               isolated_home: Path) -> None:
    config = user_config(isolated_home, 'model = "m"\n\n' + table)
    proc = invoke("run", "x", "-C", str(workspace))
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"error: {config}:3: ") and problem in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


# --- config show ----------------------------------------------------------------------


def show(*args: str) -> dict[str, Any]:
    proc = invoke("config", "show", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_config_show_tells_the_price_and_its_source(workspace: Path, isolated_home: Path,
                                                    trusted_workspaces: None) -> None:
    assert show("-C", str(workspace))["price"] == {
        "value": "input $0.4, output $1.6, cache read $0.1 per million tokens",  # gpt-4.1-mini
        "source": "builtin table"}
    assert show("-C", str(workspace), "-m", LOCAL)["price"] == {"value": "(unknown)", "source": "unknown"}
    config = user_config(isolated_home, f'model = "{LOCAL}"\n\n[prices."{LOCAL}"]\ninput = 0\noutput = 0\n')
    assert show("-C", str(workspace))["price"] == {
        "value": "input $0, output $0 per million tokens", "source": f"user config {config}:3"}
    project = project_config(workspace, '[prices."gpt-4o"]\ninput = 3\noutput = 12\n')
    assert show("-C", str(workspace), "-m", "openai/gpt-4o-2024-08-06")["price"] == {
        "value": "input $3, output $12 per million tokens", "source": f"project config {project}:1"}
    assert "prices" not in show("-C", str(workspace))


def test_config_show_text_has_a_price_line(workspace: Path) -> None:
    proc = invoke("config", "show", "-C", str(workspace), "-m", LOCAL)
    assert proc.returncode == 0
    assert "price\t(unknown)\tunknown\n" in proc.stdout


# --- the lookup -----------------------------------------------------------------------


def test_configured_prices_match_like_the_builtin_table() -> None:
    mine = {"Qwen2.5-Coder": ModelPrice(1, 2), "gpt-4o": ModelPrice(0, 0)}
    assert price_for("qwen2.5-coder", mine) == ModelPrice(1, 2)
    assert price_for("ollama/qwen2.5-coder-latest", mine) == ModelPrice(1, 2)
    assert price_for("qwen2.5-coder:32b", mine) is None  # another size is another model
    assert price_for("gpt-4o-2024-08-06", mine) == ModelPrice(0, 0)  # the user's price first
    assert price_for("gpt-4o-mini", mine) is not None and price_for("gpt-4o-mini", mine) != ModelPrice(0, 0)
    assert cost_usd("gpt-4o", Usage(input_tokens=1_000_000), mine) == 0.0
