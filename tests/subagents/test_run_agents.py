"""`recursive run` with subagents: `.claude/agents/*.md` (trusted or not), `$RECURSIVE_HOME/agents`,
`--agents`, `--agent`; the records in the session; budgets spent inside a subagent; parallel
task calls. The model is the loopback fake server behind the openai provider."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from clitools import invoke, json_lines, run_cli
from fakeserver import FakeLLMServer

REVIEWER_MD = """---
name: reviewer
description: Reviews code for bugs; use after a change
tools: Read, Grep
model: inherit
---

You are REVIEWER. Read the files named and list each bug you find.
"""


def call(name: str, id: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "id": id, "arguments": arguments}


def task(id: str, agent: str = "reviewer", prompt: str = "Review app.py.") -> dict[str, Any]:
    return call("task", id, description="review app", prompt=prompt, subagent_type=agent)


def run(server: FakeLLMServer, workspace: Path, *flags: str, env: dict[str, str] | None = None) -> Any:
    return invoke("run", "review app.py", "-C", str(workspace), "--provider", "openai", "--api-base",
                  server.openai_base_url, "-m", "fake-model", "--no-checkpoints", *flags, env=env)


def tools_of(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


def records(home: Path, session: str) -> list[dict[str, Any]]:
    path = home / "sessions" / session / "transcript.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_workspace_agent_file_gives_the_subagent_its_prompt_and_tools(workspace: Path,
                                                                        isolated_home: Path) -> None:
    (workspace / ".claude" / "agents").mkdir(parents=True)
    (workspace / ".claude" / "agents" / "reviewer.md").write_text(REVIEWER_MD, encoding="utf-8")
    (workspace / "app.py").write_text("print(1/0)\n", encoding="utf-8")
    replies = [{"tool_calls": [task("call_t")]},
               {"tool_calls": [call("read_file", "call_r", path="app.py")]},
               {"text": "app.py divides by zero."},
               {"text": "The reviewer found a division by zero."}]
    with FakeLLMServer(replies) as server:
        result = run(server, workspace, "--trust-workspace", "--session-id", "s-review", "-o", "stream-json")
        bodies = [r.body for r in server.requests]

    assert result.returncode == 0, result.stderr
    assert json_lines(result.stdout)[-1]["result"] == "The reviewer found a division by zero."
    assert "▶ subagent reviewer: review app\n  ✓ read_file app.py" in result.stderr  # its calls, under it
    assert "task" in tools_of(bodies[0])
    system = bodies[1]["messages"][0]["content"]
    assert system.startswith("You are REVIEWER. Read the files named and list each bug you find.")
    assert "description: Reviews" not in system  # the front matter is not the prompt
    assert tools_of(bodies[1]) == ["read_file", "search_files"]
    assert bodies[1]["messages"][1] == {"role": "user", "content": "Review app.py."}
    assert [m["content"] for m in bodies[3]["messages"] if m["role"] == "tool"] == ["app.py divides by zero."]

    lines = json_lines(result.stdout)
    subs = [line for line in lines if line.get("parent_tool_use_id") == "call_t"]
    assert [line["type"] for line in subs] == ["user", "assistant", "user"]  # its prompt, its call, the result
    assert json_lines(result.stdout)[-1]["num_turns"] == 4  # the subagent's model calls are the run's

    kept = records(isolated_home, "s-review")
    sub = [r for r in kept if r["type"] == "subagent_message"]
    assert {r["parent_tool_use_id"] for r in sub} == {"call_t"}
    assert [r["message"]["role"] for r in sub] == ["user", "assistant", "tool", "assistant"]
    assert sub[-1]["message"]["content"] == "app.py divides by zero."
    main = [r["message"]["role"] for r in kept if r["type"] == "message"]
    assert main == ["user", "assistant", "tool", "assistant"]  # the sub-conversation is not the parent's
    assert [r["status"] for r in kept if r["type"] == "task_notification"] == ["completed"]
    shown = invoke("sessions", "show", "s-review").stdout
    assert ('  → task {"description": "review app", "prompt": "Review app.py.", "subagent_type": "reviewer"}\n'
            "    │\n    │ user: Review app.py.\n    │   → read_file {\"path\": \"app.py\"}\n") in shown
    assert "    │ assistant: app.py divides by zero.\n  ← task:\n" in shown


def test_an_untrusted_workspace_agent_file_is_left_out_with_a_note(workspace: Path) -> None:
    (workspace / ".claude" / "agents").mkdir(parents=True)
    (workspace / ".claude" / "agents" / "reviewer.md").write_text(REVIEWER_MD, encoding="utf-8")
    with FakeLLMServer([{"text": "done"}]) as server:
        result = run(server, workspace, "--no-session")
        body = server.requests[0].body

    assert result.returncode == 0, result.stderr
    assert "task" not in tools_of(body)
    assert "note: skipped the workspace's subagent reviewer (.claude/agents/reviewer.md)" in result.stderr


def test_user_agents_and_the_agents_flag_first_of_a_name_wins(workspace: Path, isolated_home: Path) -> None:
    (isolated_home / "agents").mkdir(parents=True)
    (isolated_home / "agents" / "reviewer.md").write_text(REVIEWER_MD, encoding="utf-8")
    (isolated_home / "agents" / "broken.md").write_text("no front matter here\n", encoding="utf-8")
    flag = json.dumps({"reviewer": {"description": "The flag's reviewer", "prompt": "FLAG REVIEWER",
                                    "tools": ["Bash"], "model": "other-model"}})
    replies = [{"tool_calls": [task("call_t")]}, {"text": "ok"}, {"text": "done"}]
    with FakeLLMServer(replies) as server:
        result = run(server, workspace, "--no-session", "--agents", flag)
        bodies = [r.body for r in server.requests]

    assert result.returncode == 0, result.stderr
    assert "warning: agent " in result.stderr and "broken.md: no front matter" in result.stderr
    description = next(t for t in bodies[0]["tools"] if t["function"]["name"] == "task")["function"]["description"]
    assert "- reviewer: The flag's reviewer" in description and "- general-purpose:" in description
    assert bodies[1]["messages"][0]["content"].startswith("FLAG REVIEWER")
    assert tools_of(bodies[1]) == ["run_shell"]
    assert bodies[1]["model"] == "other-model" and bodies[0]["model"] == "fake-model"


def test_bad_agents_json_is_a_usage_error(workspace: Path) -> None:
    result = invoke("run", "hi", "-C", str(workspace), "--provider", "scripted", "--agents", "{not json")
    assert result.returncode == 2
    assert "error: --agents is not JSON" in result.stderr


def test_an_unknown_subagent_type_is_an_error_result_for_the_model(workspace: Path) -> None:
    flag = json.dumps({"reviewer": {"description": "Reviews", "prompt": "You review."}})
    replies = [{"tool_calls": [task("call_t", agent="nobody")]}, {"text": "sorry"}]
    with FakeLLMServer(replies) as server:
        result = run(server, workspace, "--no-session", "--agents", flag)
        answer = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"][0]["content"]
    assert result.returncode == 0, result.stderr
    assert answer == "unknown subagent_type 'nobody'; available: reviewer, general-purpose"


def test_max_steps_counts_the_subagents_calls(workspace: Path) -> None:
    """--max-steps 3: the task call, then two of the subagent's; it stops there, and so does the turn."""
    flag = json.dumps({"reader": {"description": "Reads", "prompt": "You read."}})
    (workspace / "a.txt").write_text("a\n", encoding="utf-8")
    reads = [{"tool_calls": [call("read_file", f"call_r{i}", path="a.txt")]} for i in range(5)]
    with FakeLLMServer([{"tool_calls": [task("call_t", agent="reader")]}, *reads]) as server:
        result = run(server, workspace, "--no-session", "--agents", flag, "--max-steps", "3", "-o", "json")
        requests = len(server.requests)

    assert result.returncode == 3, result.stderr
    record = json.loads(result.stdout)
    assert (record["subtype"], record["num_turns"]) == ("error_max_turns", 3)
    assert requests == 3


def test_max_cost_spent_inside_a_subagent_ends_the_run(workspace: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text('[prices."fake-model"]\ninput = 1000\noutput = 1000\n',
                                               encoding="utf-8")
    flag = json.dumps({"reader": {"description": "Reads", "prompt": "You read."}})
    (workspace / "a.txt").write_text("a\n", encoding="utf-8")
    usage = {"input_tokens": 100, "output_tokens": 100}  # $0.20 a call at these prices
    replies = [{"tool_calls": [task("call_t", agent="reader")], "usage": usage},
               *({"tool_calls": [call("read_file", f"call_r{i}", path="a.txt")], "usage": usage}
                 for i in range(5))]
    with FakeLLMServer(replies) as server:
        result = run(server, workspace, "--no-session", "--agents", flag, "--max-cost", "0.5", "-o", "json")
        sub_calls = sum(1 for r in server.requests if r.body["messages"][0]["content"].startswith("You read."))

    assert result.returncode == 3, result.stderr
    record = json.loads(result.stdout)
    assert record["subtype"] == "error_max_budget_usd"
    assert sub_calls == 2  # $0.20 + $0.40: the third call of the run would pass $0.50
    assert round(record["total_cost_usd"], 2) == 0.6


def test_task_calls_of_one_reply_run_at_once(workspace: Path) -> None:
    flag = json.dumps({"a": {"description": "Agent A", "prompt": "AGENT A"},
                       "b": {"description": "Agent B", "prompt": "AGENT B"}})
    release = threading.Event()
    replies = [{"tool_calls": [task("call_a", agent="a", prompt="one"), task("call_b", agent="b", prompt="two")]},
               {"text": "first report", "hold": release},  # answered only once both have asked
               {"text": "second report"},
               {"text": "both done"}]
    seen_both: list[bool] = []
    with FakeLLMServer(replies) as server:
        def watch() -> None:
            deadline = time.monotonic() + 30
            while len(server.requests) < 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            seen_both.append(len(server.requests) >= 3)
            release.set()

        watcher = threading.Thread(target=watch)
        watcher.start()
        result = run(server, workspace, "--no-session", "--agents", flag, "-o", "stream-json")
        watcher.join()
        last = server.requests[3].body["messages"]

    assert result.returncode == 0, result.stderr
    assert seen_both == [True]  # the second subagent asked while the first waited for its answer
    answers = {m["tool_call_id"]: m["content"] for m in last if m["role"] == "tool"}
    assert set(answers) == {"call_a", "call_b"} and set(answers.values()) == {"first report", "second report"}
    assert [m["tool_call_id"] for m in last if m["role"] == "tool"] == ["call_a", "call_b"]  # in the reply's order
    notes = [line for line in json_lines(result.stdout) if line.get("subtype") == "task_notification"]
    assert sorted(line["tool_use_id"] for line in notes) == ["call_a", "call_b"]


def test_agent_flag_runs_the_main_conversation_as_that_agent(workspace: Path) -> None:
    flag = json.dumps({"reader": {"description": "Reads", "prompt": "MAIN AS READER", "tools": ["Read", "Glob"]}})
    with FakeLLMServer([{"text": "hello"}]) as server:
        result = run(server, workspace, "--no-session", "--agents", flag, "--agent", "reader")
        body = server.requests[0].body
    assert result.returncode == 0, result.stderr
    assert body["messages"][0]["content"].startswith("MAIN AS READER")
    assert tools_of(body) == ["read_file", "glob", "task"]


def test_agent_flag_naming_no_agent_is_a_usage_error(workspace: Path) -> None:
    result = invoke("run", "hi", "-C", str(workspace), "--provider", "scripted", "--agent", "ghost")
    assert result.returncode == 2
    assert "error: --agent: no agent named 'ghost' (defined: none)" in result.stderr


def test_an_agent_file_may_list_its_tools_and_quote_its_model(workspace: Path, isolated_home: Path) -> None:
    (isolated_home / "agents").mkdir(parents=True)
    (isolated_home / "agents" / "finder.md").write_text(
        "---\ndescription: 'Finds files: by name'\ntools:\n  - Read\n  - glob\nmodel: \"other-model\"\n"
        "maxTurns: 1\n---\nFIND THEM.\n", encoding="utf-8")
    replies = [{"tool_calls": [task("call_t", agent="finder")]},
               {"tool_calls": [call("glob", "call_g", pattern="*.py")]},  # its one step: then it stops
               {"text": "the finder ran out of steps"}]
    with FakeLLMServer(replies) as server:
        result = run(server, workspace, "--no-session")
        bodies = [r.body for r in server.requests]

    assert result.returncode == 0, result.stderr
    assert (tools_of(bodies[1]), bodies[1]["model"]) == (["read_file", "glob"], "other-model")
    assert "- finder: Finds files: by name" in json.dumps(bodies[0]["tools"])
    answer = [m["content"] for m in bodies[2]["messages"] if m["role"] == "tool"][0]
    assert answer.startswith("the finder subagent stopped before it finished (max_steps: reached its maxTurns 1)")


def test_a_subagent_gets_the_project_instructions_and_not_the_runs_todo_list(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Always run make test.\n", encoding="utf-8")
    flag = json.dumps({"helper": {"description": "Helps", "prompt": "HELPER"}})
    with FakeLLMServer([{"tool_calls": [task("call_t", agent="helper")]}, {"text": "ok"}, {"text": "done"}]) as server:
        result = run(server, workspace, "--no-session", "--agents", flag)
        body = server.requests[1].body

    assert result.returncode == 0, result.stderr
    assert "Project instructions from AGENTS.md:\nAlways run make test." in body["messages"][0]["content"]
    assert "todo_write" not in tools_of(body) and "read_file" in tools_of(body) and "task" not in tools_of(body)


def test_a_call_naming_no_agent_gets_general_purpose_with_the_runs_tools(workspace: Path) -> None:
    flag = json.dumps({"careful": {"description": "Careful", "prompt": "CAREFUL", "disallowedTools": ["Bash"]}})
    replies = [{"tool_calls": [call("task", "call_g", description="look around", prompt="Look around."),
                               task("call_c", agent="careful")]},
               {"text": "looked"}, {"text": "careful"}, {"text": "done"}]
    with FakeLLMServer(replies) as server:
        result = run(server, workspace, "--no-session", "--agents", flag)
        general, careful = (r.body for r in server.requests[1:3])

    assert result.returncode == 0, result.stderr
    if general["messages"][0]["content"].startswith("CAREFUL"):  # (the two ran at once: either asked first)
        general, careful = careful, general
    assert general["messages"][0]["content"].startswith("You are an agent that another agent handed a task to.")
    assert "run_shell" in tools_of(general) and "task" not in tools_of(general)
    assert "run_shell" not in tools_of(careful) and "read_file" in tools_of(careful)


def test_recursive_tools_lists_the_task_tool_with_the_agent_files(workspace: Path, isolated_home: Path) -> None:
    assert "task" not in [line.split()[0] for line in invoke("tools", "-C", str(workspace)).stdout.splitlines()]
    (isolated_home / "agents").mkdir(parents=True)
    (isolated_home / "agents" / "reviewer.md").write_text(REVIEWER_MD, encoding="utf-8")
    listed = json.loads(invoke("tools", "--json", "-C", str(workspace)).stdout)
    task_tool = next(tool for tool in listed if tool["name"] == "task")
    assert "- reviewer: Reviews code for bugs; use after a change" in task_tool["description"]
    assert set(task_tool["parameters"]["required"]) == {"description", "prompt"}


def test_max_duration_running_out_inside_a_subagent_ends_the_run(workspace: Path) -> None:
    flag = json.dumps({"slow": {"description": "Slow", "prompt": "SLOW"}})
    release = threading.Event()
    with FakeLLMServer([{"tool_calls": [task("call_t", agent="slow")]}, {"text": "late", "hold": release}]) as server:
        result = run(server, workspace, "--no-session", "--agents", flag, "--max-duration", "1s", "-o", "json")
        release.set()
        requests = len(server.requests)

    assert result.returncode == 3, result.stderr
    record = json.loads(result.stdout)
    assert record["subtype"] == "error_max_budget" and "--max-duration" in record["errors"][0]
    assert requests == 2  # the subagent's request was the last


def test_print_mode_takes_agents_and_agent_flags(workspace: Path) -> None:
    """`recursive -p` with Claude Code's `--agents` and `--agent`, as a script passes them."""
    flag = json.dumps({"reader": {"description": "Reads", "prompt": "MAIN READER", "tools": ["Read"]},
                       "helper": {"description": "Helps", "prompt": "HELPER"}})
    replies = [{"tool_calls": [task("call_t", agent="helper")]}, {"text": "helped"}, {"text": "all done"}]
    with FakeLLMServer(replies) as server:
        result = run_cli("-p", "go", "-C", str(workspace), "--provider", "openai", "--api-base",
                        server.openai_base_url, "-m", "fake-model", "--no-session", "--output-format",
                        "stream-json", "--verbose", "--agents", flag, "--agent", "reader", input="")
        bodies = [r.body for r in server.requests]

    assert result.returncode == 0, result.stderr
    lines = json_lines(result.stdout)
    init = lines[0]
    assert init["agents"] == ["reader", "helper", "general-purpose"] and "Task" in init["tools"]
    assert bodies[0]["messages"][0]["content"].startswith("MAIN READER")
    assert tools_of(bodies[0]) == ["read_file", "task"]
    assert bodies[1]["messages"][0]["content"].startswith("HELPER")
    assert [line["type"] for line in lines if line.get("parent_tool_use_id") == "call_t"] == ["user"]
    assert lines[-1]["result"] == "all done"
