"""`recursive fleet` without a Ray cluster (issue 19): bad tasks files and flags are refused
before anything starts, a missing Ray says how to install it, `--help` never imports Ray,
`fleet status` reads a results folder, and one attempt of a task (the Ray task's body, run
here as plain Python) resumes a session that only its bundle brought to a fresh home."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from clitools import CliResult, invoke

from recursive_cli.features.bundles.bundle import export_bundle
from recursive_cli.features.sessions.lock import LOCK_FILE
from recursive_cli.surfaces.fleet.bundles import export_bytes
from recursive_cli.surfaces.fleet.worker import AttemptDone, AttemptJob, AttemptLine, AttemptStarted, run_attempt

from .fleettools import say, script, shell, tasks_file, tool_calls, transcript

TASK = {"id": "a", "prompt": "hello"}


def refused(proc: CliResult, text: str) -> None:
    """Exit 2, stdout empty, and exactly one `error:` line on stderr."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr == f"error: {text}\n", proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize(("lines", "message"), [
    (['{"id": "a", "prompt": "x"}', "not json"], "TASKS.jsonl:2: not JSON: Expecting value: line 1 column 1 (char 0)"),
    (['{"id": "a", "prompt": "x", "promt": "y"}'], "TASKS.jsonl:1: unknown field 'promt'"),
    (['{"id": "a", "prompt": "x"}', "", '{"id": "a", "prompt": "y"}'], "TASKS.jsonl:3: duplicate id 'a' (first on line 1)"),
    (['{"id": "a"}'], "TASKS.jsonl:1: missing field 'prompt'"),
    (['["a", "x"]'], "TASKS.jsonl:1: expected a JSON object with id and prompt"),
    (['{"id": "a/b", "prompt": "x"}'], "TASKS.jsonl:1: id: expected letters, digits, '.', '_' and '-' (64 at most, not starting with '.', '_' or '-') (got 'a/b')"),
    (['{"id": "a", "prompt": "x", "mode": "loop"}'], "TASKS.jsonl:1: mode: expected 'run' or 'goal' (got 'loop')"),
    (['{"id": "a", "prompt": "x", "max_turns": 0}'], "TASKS.jsonl:1: max_turns: expected greater than or equal to 1 (got 0)"),
    (['{"id": "a", "prompt": "x", "mode": "goal"}'], "TASKS.jsonl:1: a goal task needs until, checks, or both"),
    (['{"id": "a", "prompt": "x", "mode": "run", "checks": ["true"]}'], "TASKS.jsonl:1: until and checks need mode goal"),
    (['{"id": "a", "prompt": "x", "workspace": "ws", "ref": "main"}'], "TASKS.jsonl:1: ref needs a workspace that is a git URL"),
    (['{"id": "a", "prompt": "x", "memory": "lots"}'], "TASKS.jsonl:1: memory: expected a size like 2G, 512Mi or a number of bytes (got 'lots')"),
    (['{"id": "a", "prompt": "x", "max_duration": "soon"}'], "TASKS.jsonl:1: max_duration: expected a duration of more than 0, like 90s, 20m or 2h"),
    ([""], "TASKS.jsonl: no tasks (one JSON object per line, with id and prompt)"),
])
def test_a_bad_tasks_file_is_refused_with_its_line(tmp_path: Path, lines: list[str], message: str) -> None:
    (tmp_path / "TASKS.jsonl").write_text("\n".join(lines) + "\n")
    proc = invoke("fleet", "run", "TASKS.jsonl", "--results", "out", cwd=tmp_path)
    refused(proc, message)
    assert not (tmp_path / "out").exists()


def test_a_missing_tasks_file_and_bad_defaults_are_refused(tmp_path: Path) -> None:
    proc = invoke("fleet", "run", "nope.jsonl", cwd=tmp_path)
    refused(proc, "cannot read tasks file nope.jsonl: No such file or directory")
    tasks_file(tmp_path / "t.jsonl", [TASK])
    refused(invoke("fleet", "run", "t.jsonl", "--memory", "0", cwd=tmp_path),
            "--memory: expected a size of more than 0 (got '0')")
    proc = invoke("fleet", "run", "t.jsonl", "--concurrency", "0", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("error: --concurrency"), proc.stderr
    proc = invoke("fleet", "run", "t.jsonl", "--max-cost", "-1", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("error: --max-cost"), proc.stderr


def test_without_ray_fleet_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    tasks_file(tmp_path / "t.jsonl", [TASK])
    refused(invoke("fleet", "run", "t.jsonl", "--results", "out", cwd=tmp_path),
            "recursive fleet needs Ray: pip install 'recursive-cli[fleet]'")
    assert not (tmp_path / "out").exists()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "fleet.json").write_text(json.dumps({
        "fleet_id": "f1", "tasks_file": str(tmp_path / "t.jsonl"), "workspace": str(tmp_path),
        "defaults": {}, "options": {}}))
    refused(invoke("fleet", "resume", "out", cwd=tmp_path),
            "recursive fleet needs Ray: pip install 'recursive-cli[fleet]'")


def test_status_summarises_a_results_folder(tmp_path: Path) -> None:
    tasks_file(tmp_path / "t.jsonl", [{"id": "a", "prompt": "x"}, {"id": "b", "prompt": "y"},
                                      {"id": "c", "prompt": "z"}])
    out = tmp_path / "out"
    out.mkdir()
    (out / "fleet.json").write_text(json.dumps({
        "fleet_id": "f1", "tasks_file": str(tmp_path / "t.jsonl"), "workspace": str(tmp_path),
        "defaults": {}, "options": {"max_cost": 1.0}}))
    lines = [{"id": "a", "subtype": "error_goal_not_met", "is_error": True, "exit_code": 4, "total_cost_usd": 0.5,
              "steps": 3, "attempts": 1},
             {"id": "a", "subtype": "success", "is_error": False, "exit_code": 0, "total_cost_usd": 0.75,
              "steps": 4, "attempts": 1},
             {"id": "b", "subtype": "error_during_execution", "is_error": True, "exit_code": 1,
              "total_cost_usd": 0.25, "errors": ["the same failing call to run_shell was repeated 3 times"]}]
    (out / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"torn')
    proc = invoke("fleet", "status", "out", "--json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # the worst outcome's code, as `fleet run` ends
    data = json.loads(proc.stdout)
    assert (data["tasks"], data["succeeded"], data["failed"], data["pending"]) == (3, 1, 1, 1)
    assert data["total_cost_usd"] == 1.0 and data["exit_code"] == 1
    assert [r["subtype"] for r in data["results"]] == ["success", "error_during_execution", None]
    table = invoke("fleet", "status", "out", cwd=tmp_path, env={"COLUMNS": "120"})
    assert table.returncode == 1
    assert "1/3 succeeded · 1 failed · 1 not run · $1.0000" in table.stdout
    assert "error_during_execution" in table.stdout and "no outcome yet" in table.stdout
    assert "b: the same failing call to run_shell was repeated 3 times\n" in table.stdout  # below: no room
    wide = invoke("fleet", "status", "out", cwd=tmp_path, env={"COLUMNS": "200"})
    (row,) = [line for line in wide.stdout.splitlines() if "error_during_execution" in line]
    assert row.rstrip().endswith("│ the same failing call to run_shell was repeated 3 times")  # its column


def fleet_folder(tmp_path: Path, ids: list[str]) -> Path:
    """tmp_path/out, a results folder of a fleet of these tasks (t.jsonl) with no results yet."""
    tasks_file(tmp_path / "t.jsonl", [{"id": task_id, "prompt": "x"} for task_id in ids])
    out = tmp_path / "out"
    out.mkdir()
    (out / "fleet.json").write_text(json.dumps({
        "fleet_id": "f1", "tasks_file": str(tmp_path / "t.jsonl"), "workspace": str(tmp_path),
        "defaults": {}, "options": {}}))
    return out


@pytest.mark.parametrize("columns", [40, 60, 80, 100, 140])
def test_status_never_cuts_an_outcome_or_a_reason(tmp_path: Path, columns: int) -> None:
    out = fleet_folder(tmp_path, ["parser-tests", "b"])
    reason = "connection to http://localhost:8080/v1 refused: is the server running at http://localhost:8080?"
    lines = [{"id": "parser-tests", "subtype": "error_during_execution", "is_error": True, "exit_code": 1,
              "total_cost_usd": 0.25, "steps": 12, "attempts": 3, "duration_ms": 123400,
              "session_id": "20261202-040236-7f3a9c1e", "errors": [reason + "\nTraceback (most recent call last):"]},
             {"id": "b", "subtype": "success", "is_error": False, "exit_code": 0, "total_cost_usd": 0.25,
              "steps": 3, "attempts": 1, "duration_ms": 3400, "session_id": "20261202-040237-aaaaaaaa"}]
    (out / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    proc = invoke("fleet", "status", "out", cwd=tmp_path, env={"COLUMNS": str(columns)})
    assert proc.returncode == 1
    shown = proc.stdout.splitlines()
    assert all(len(line.rstrip()) <= columns for line in shown), proc.stdout
    assert "…" not in proc.stdout and "Traceback" not in proc.stdout
    (row,) = [line for line in shown if line.startswith("parser-tests │")]
    assert "│ error_during_execution" in row  # the outcome whole, at any width
    assert reason in " ".join(" ".join(shown).split())  # the reason whole: in its column or below
    headers = [cell.strip() for cell in shown[1].split("┃")]
    if "session" in headers:  # a column is shown whole or not at all
        assert "20261202-040236-7f3a9c1e" in row
    if columns >= 80:
        assert headers[:2] == ["task", "outcome"] and "session" in headers and "cost" in headers


def test_a_failed_tasks_line_gives_its_outcome_and_reason() -> None:
    from recursive_cli.surfaces.fleet.progress import PlainView, Tally
    from recursive_cli.surfaces.fleet.results import ResultLine

    out = io.StringIO()
    view = PlainView(Tally(total=1), out)
    failed = ResultLine.model_validate({
        "id": "parser-tests", "subtype": "error_during_execution", "is_error": True, "exit_code": 1,
        "total_cost_usd": 0.25, "steps": 12, "attempts": 3, "duration_ms": 123400,
        "errors": ["connection to http://localhost:8080/v1 refused\nTraceback (most recent call last):"]})
    view.finished(failed)
    assert out.getvalue().startswith("fleet: parser-tests error_during_execution (connection to "
                                     "http://localhost:8080/v1 refused) · 12 steps · $0.2500 · 123.4s   [")
    view.finished(failed.model_copy(update={"total_cost_usd": None}))  # a model with no price
    assert out.getvalue().splitlines()[-1].startswith("fleet: parser-tests error_during_execution (connection to "
                                                      "http://localhost:8080/v1 refused) · 12 steps · cost unknown · ")


def test_status_refuses_a_folder_with_no_fleet(tmp_path: Path) -> None:
    refused(invoke("fleet", "status", "nowhere", cwd=tmp_path),
            f"{tmp_path / 'nowhere'} holds no fleet (no fleet.json): start one with "
            "`recursive fleet run TASKS.jsonl --results DIR`")


def test_status_never_shows_a_made_up_cost_for_unpriced_tasks(tmp_path: Path) -> None:
    out = fleet_folder(tmp_path, ["a", "b"])
    unpriced = {"id": "a", "subtype": "success", "is_error": False, "exit_code": 0, "total_cost_usd": None,
                "steps": 3, "attempts": 1}
    (out / "results.jsonl").write_text(json.dumps(unpriced) + "\n")
    table = invoke("fleet", "status", "out", cwd=tmp_path, env={"COLUMNS": "120"})
    assert "1/2 succeeded · 0 failed · 1 not run · cost unknown" in table.stdout, table.stdout
    (row,) = [line for line in table.stdout.splitlines() if line.startswith("a ")]
    assert "│ unknown │" in row and "$0.0000" not in table.stdout  # the task's cost, said as the headline says it
    priced = {**unpriced, "id": "b", "total_cost_usd": 0.25}
    with (out / "results.jsonl").open("a") as handle:
        handle.write(json.dumps(priced) + "\n")
    table = invoke("fleet", "status", "out", cwd=tmp_path, env={"COLUMNS": "120"})
    assert "2/2 succeeded · 0 failed · 0 not run · $0.2500 + 1 unpriced" in " ".join(table.stdout.split())


def test_run_refuses_a_folder_that_holds_a_fleet(tmp_path: Path) -> None:
    tasks_file(tmp_path / "t.jsonl", [TASK])
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.jsonl").write_text("")
    proc = invoke("fleet", "run", "t.jsonl", "--results", "out", cwd=tmp_path)
    refused(proc, f"{tmp_path / 'out'} already holds a fleet: continue it with `recursive fleet resume "
                  f"{tmp_path / 'out'}`, or choose another --results DIR")


# -- one attempt, as a worker runs it ------------------------------------------------------------


def job(home: Path, workspace: Path, session_id: str, **fields: object) -> AttemptJob:
    values: dict[str, object] = {
        "fleet_id": "f1", "task_id": "a", "session_id": session_id, "attempt": 1, "mode": "run",
        "prompt": "two files", "workspace": str(workspace), "flags": [], "home": str(home),
        "driver_host": socket.gethostname(), "bundle_every": 0.2}
    return AttemptJob.model_validate(values | fields)


def test_a_retry_on_another_home_imports_the_bundle_and_resumes(tmp_path: Path, isolated_home: Path) -> None:
    """A worker whose home lacks the session (another node) imports the last bundle and runs
    `resume`: the conversation and checkpoints go on instead of starting over."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    replies = script(tmp_path, "s", [shell("echo 1 > one.txt")])  # then: no more replies, exit 1
    first = list(run_attempt(job(isolated_home, workspace, "s-a", flags=["--provider", "scripted", "--script", replies])))
    done = first[-1]
    assert isinstance(done, AttemptDone) and done.returncode == 1, done
    assert done.result is not None and done.result["subtype"] == "error_during_execution"
    assert done.totals is not None and done.totals.steps == 1
    bundle = export_bytes(isolated_home, "s-a")
    assert bundle is not None
    script(tmp_path, "s", [shell("echo 1 > one.txt"), shell("echo 2 > two.txt"), say("both written")])

    elsewhere = tmp_path / "other-home"
    items = list(run_attempt(job(elsewhere, workspace, "s-a", attempt=2, resume=True, bundle=bundle)))
    started = next(item for item in items if isinstance(item, AttemptStarted))
    assert started.resumed and started.imported
    done = items[-1]
    assert isinstance(done, AttemptDone) and done.returncode == 0, done.stderr
    assert done.result is not None and done.result["result"] == "both written"
    assert any(isinstance(item, AttemptLine) and item.event.get("type") == "result" for item in items)
    records = transcript(elsewhere, "s-a")
    assert tool_calls(records) == ["run_shell", "run_shell"]  # the first step was not run again
    assert (workspace / "one.txt").read_text() == "1\n" and (workspace / "two.txt").read_text() == "2\n"
    assert done.totals is not None and done.totals.steps == 3
    proc = invoke("checkpoints", "list", "s-a", "--json", env={"RECURSIVE_HOME": str(elsewhere)})
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)) == 2  # the first attempt's turn came with the bundle


def test_a_live_session_is_bundled_from_a_snapshot(tmp_path: Path, isolated_home: Path) -> None:
    """The export of a session holds its lock; a worker bundles a session its CLI is still
    writing from a copy, without waiting for (or breaking) that lock."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    replies = script(tmp_path, "s", [shell("echo 1 > one.txt"), say("done")])
    items = list(run_attempt(job(isolated_home, workspace, "s-b", flags=["--provider", "scripted", "--script", replies])))
    assert isinstance(items[-1], AttemptDone) and items[-1].returncode == 0
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        lock = isolated_home / "sessions" / "s-b" / LOCK_FILE
        lock.write_text(json.dumps({"pid": sleeper.pid, "host": socket.gethostname(), "started": "now"}))
        with pytest.raises(Exception, match="in use"):
            export_bundle(isolated_home, "s-b", tmp_path / "x.bundle")
        data = export_bytes(isolated_home, "s-b", live=True)
        assert data is not None and lock.is_file()
        (tmp_path / "live.bundle").write_bytes(data)
        other = tmp_path / "other"
        proc = invoke("sessions", "import", str(tmp_path / "live.bundle"), "-C", str(workspace),
                      env={"RECURSIVE_HOME": str(other)})
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "s-b"
        assert tool_calls(transcript(other, "s-b")) == ["run_shell"]
    finally:
        sleeper.kill()
        sleeper.wait()
