"""`recursive loop --permission-mode plan` (issue 33): the agent may only read; its plan
(`exit_plan_mode`) ends the loop as its answer, so no wakeup or job it set up runs a turn
that would go on to change things; `resume --permission-mode auto` carries the plan out."""

from __future__ import annotations

import json
from pathlib import Path

from clitools import invoke, json_lines

from .conftest import call, prompts, scripted, session_records, tools

PLAN = "1. Write notes.txt.\n2. Check it with cat."


def test_a_loop_in_plan_mode_reads_ends_with_the_plan_and_schedules_nothing(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    (workspace / "x").write_text("keep me\n")
    args = scripted(tmp_path, [
        tools(call("read_file", path="x")),
        tools(call("write_file", path="notes.txt", content="hi\n")),
        tools(call("run_background", command="touch made.txt")),
        tools(call("schedule_wakeup", delay_seconds=1, prompt="now write notes.txt", reason="carry on")),
        tools(call("exit_plan_mode", plan=PLAN)),
        # what a second turn would do: must never be asked for
        tools(call("write_file", path="notes.txt", content="from the wakeup\n")),
        {"text": "wrote it"},
    ])
    result = invoke("loop", "make notes.txt", "-C", str(workspace), "--session-id", "p1",
                    "--permission-mode", "plan", "-o", "stream-json", *args)
    assert result.returncode == 0, result.stderr
    lines = json_lines(result.stdout)
    assert lines[0]["permissionMode"] == "plan" and "exit_plan_mode" in lines[0]["tools"]
    final = lines[-1]
    assert final["type"] == "result" and final["subtype"] == "success" and final["result"] == PLAN
    assert final["num_turns"] == 5  # model calls: the plan was the last
    denied = [d["tool_name"] for d in final["permission_denials"]]
    assert "write_file" in denied and "run_background" in denied
    assert [line["delay_seconds"] for line in lines if line.get("subtype") == "wakeup_scheduled"] == [1]
    iterations = [line for line in lines if line.get("subtype") == "loop_iteration"]
    assert [i["trigger"] for i in iterations] == ["start"]
    assert sorted(p.name for p in workspace.iterdir()) == ["x"]
    assert prompts(session_records(isolated_home, "p1")) == ["make notes.txt"]
    assert json.loads((isolated_home / "sessions" / "p1" / "meta.json").read_text())["state"]["loop"]["wakeup"] is None

    go = invoke("resume", "p1", "-C", str(workspace), "--permission-mode", "auto", "-o", "json",
                "go ahead")
    assert go.returncode == 0, go.stderr
    assert json.loads(go.stdout)["result"] == "wrote it"
    assert (workspace / "notes.txt").read_text() == "from the wakeup\n"
