"""`recursive run` end to end with the scripted provider: outputs, formats and exit codes.

The CLI runs in this process (`invoke`); only the signal cases and the import probe start one.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from clitools import alive, host_pid, invoke, json_lines, wait_until, write_script


def call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


def scripted(tmp_path: Path, replies: list[dict]) -> list[str]:
    script = write_script(tmp_path / "script.json", replies)
    return ["--provider", "scripted", "--script", str(script)]


def test_multi_step_run_prints_only_the_answer(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [
        {"tool_calls": [call("write_file", path="notes/hello.txt", content="hi\n")]},
        {"tool_calls": [call("run_shell", command="cat notes/hello.txt")]},
        {"text": "Wrote notes/hello.txt."},
    ])
    proc = invoke("run", "write a note", "-C", str(workspace), *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Wrote notes/hello.txt.\n"
    assert (workspace / "notes" / "hello.txt").read_text() == "hi\n"
    assert "✓ write_file notes/hello.txt" in proc.stderr
    assert "✓ run_shell cat notes/hello.txt (exit 0" in proc.stderr
    assert "3 steps" in proc.stderr


def test_stream_json_shapes(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [
        {"text": "looking", "tool_calls": [{"id": "c1", "name": "list_dir", "arguments": {}}]},
        {"text": "done"},
    ])
    proc = invoke("run", "look around", "-C", str(workspace), "-o", "stream-json",
                  "--session-id", "s-1", *args)
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    checkpoints = [line for line in lines if line.get("subtype") == "checkpoint"]  # tests/checkpoints
    assert [line["phase"] for line in checkpoints] == ["before", "after"]
    init, first, tool_result, final, result = [line for line in lines if line not in checkpoints]
    assert init["type"] == "system" and init["subtype"] == "init"
    assert init["schema_version"] == 2 and init["session_id"] == "s-1"
    assert init["cwd"] == str(workspace.resolve()) and "run_shell" in init["tools"]
    assert init["permissionMode"] == "auto" and init["model"] == "scripted"
    assert first["type"] == "assistant" and first["session_id"] == "s-1"
    assert first["message"]["content"] == [
        {"type": "text", "text": "looking"},
        {"type": "tool_use", "id": "c1", "name": "list_dir", "input": {}},
    ]
    block = tool_result["message"]["content"][0]
    assert tool_result["type"] == "user" and block["type"] == "tool_result"
    assert block["tool_use_id"] == "c1" and block["is_error"] is False
    assert final["message"]["content"] == [{"type": "text", "text": "done"}]
    assert result["type"] == "result" and result["subtype"] == "success"
    assert result["is_error"] is False and result["result"] == "done"
    assert result["num_turns"] == 2  # model calls, as Claude Code counts them
    assert result["usage"] == {"input_tokens": 20, "output_tokens": 10, "cache_read_input_tokens": 0,
                               "cache_creation_input_tokens": 0}
    assert result["total_cost_usd"] is None and result["finish_reason"] == "completed"
    assert isinstance(result["duration_ms"], int)


def test_json_output_is_one_object(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"text": "42"}])
    proc = invoke("run", "answer", "-C", str(workspace), "-o", "json", *args)
    assert proc.returncode == 0
    (result,) = json_lines(proc.stdout)  # one object on one line
    assert result["result"] == "42" and result["subtype"] == "success"


def test_max_steps_exits_3(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"tool_calls": [call("run_shell", command=f"echo {i}")]} for i in range(5)])
    proc = invoke("run", "loop", "-C", str(workspace), "--max-steps", "2", "-o", "json", *args)
    assert proc.returncode == 3
    (result,) = json_lines(proc.stdout)
    assert result["subtype"] == "error_max_turns" and result["finish_reason"] == "max_steps"
    assert result["is_error"] is True and result["num_turns"] == 2


def test_max_cost_exits_3(tmp_path: Path, workspace: Path) -> None:
    big = {"input_tokens": 1_000_000, "output_tokens": 0}
    args = scripted(tmp_path, [{"tool_calls": [call("list_dir")], "usage": big}, {"text": "never"}])
    proc = invoke("run", "x", "-C", str(workspace), "-m", "gpt-4o", "--max-cost", "0.5", *args)
    assert proc.returncode == 3, proc.stderr
    assert "--max-cost" in proc.stderr


def test_max_duration_exits_3(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"tool_calls": [call("run_shell", command="sleep 0.5")]}, {"text": "late"}])
    proc = invoke("run", "x", "-C", str(workspace), "--max-duration", "0.3s", *args)
    assert proc.returncode == 3
    assert "max-duration" in proc.stderr


def test_stuck_exits_5(tmp_path: Path, workspace: Path) -> None:
    failing = {"tool_calls": [call("read_file", path="missing.txt")]}
    args = scripted(tmp_path, [failing] * 4 + [{"text": "never"}])
    proc = invoke("run", "x", "-C", str(workspace), "-o", "json", *args)
    assert proc.returncode == 5
    (result,) = json_lines(proc.stdout)
    assert result["subtype"] == "error_stuck" and "repeated 3 times" in result["errors"][0]


def test_output_length_stop_exits_1(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"text": "partial answ", "stop": "length"}])
    proc = invoke("run", "x", "-C", str(workspace), *args)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "the model stopped: length" in proc.stderr


def test_provider_error_exits_1_with_one_line(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"error": {"status": 400, "message": "bad tool schema"}}])
    proc = invoke("run", "x", "-C", str(workspace), *args)
    assert proc.returncode == 1
    assert "error: HTTP 400: bad tool schema" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_tool_calls_go_back_to_the_model(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [
        {"tool_calls": [{"id": "a", "name": "no_such_tool", "arguments": {}},
                        {"id": "b", "name": "read_file", "arguments": "{not json"},
                        {"id": "c", "name": "read_file", "arguments": {"path": 7}}]},
        {"text": "recovered"},
    ])
    proc = invoke("run", "x", "-C", str(workspace), "-o", "stream-json", *args)
    assert proc.returncode == 0, proc.stderr
    results = [line["message"]["content"][0] for line in json_lines(proc.stdout) if line["type"] == "user"]
    assert [r["tool_use_id"] for r in results] == ["a", "b", "c"]
    assert all(r["is_error"] for r in results)
    assert "unknown tool 'no_such_tool'" in results[0]["content"]
    assert "not valid JSON" in results[1]["content"]
    assert "path" in results[2]["content"]


def test_usage_errors_exit_2(workspace: Path) -> None:
    empty = invoke("run", "", "-C", str(workspace), "--provider", "scripted")
    assert empty.returncode == 2 and "empty prompt" in empty.stderr
    provider = invoke("run", "hi", "--provider", "nope")
    assert provider.returncode == 2 and "Traceback" not in provider.stderr


def test_configuration_errors_exit_1(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    missing_ws = invoke("run", "hi", "--provider", "openai",  # (as `-C`, a command line's: exit 2)
                        env={"RECURSIVE_API_KEY": "k", "RECURSIVE_WORKSPACE": str(tmp_path / "nowhere")})
    assert missing_ws.returncode == 1 and "workspace does not exist" in missing_ws.stderr
    no_key = invoke("run", "hi", "-C", str(workspace))
    assert no_key.returncode == 1 and "no API key" in no_key.stderr
    bad_env = invoke("run", "hi", "-C", str(workspace), env={"RECURSIVE_PROVIDER": "bogus"})
    assert bad_env.returncode == 1 and "provider" in bad_env.stderr
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text("max-steps = [\n")
    broken = invoke("run", "hi", "-C", str(workspace), "--provider", "scripted")
    assert broken.returncode == 1 and "config.toml" in broken.stderr
    for proc in (missing_ws, no_key, bad_env, broken):
        assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_stdin_alone_is_the_prompt(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"text": "ok"}])
    proc = invoke("run", "-C", str(workspace), *args, input="summarise this")
    assert proc.returncode == 0 and proc.stdout == "ok\n"


def _start_and_signal(tmp_path: Path, workspace: Path, signum: int) -> tuple[int, list[dict], float, int]:
    """A real process (signals need one): signal it once its shell command is running."""
    command = "echo $$ > tool.pid; exec sleep 30"
    args = scripted(tmp_path, [{"tool_calls": [call("run_shell", command=command)]}, {"text": "no"}])
    proc = subprocess.Popen([sys.executable, "-m", "recursive_cli", "run", "x", "-C", str(workspace),
                             "-o", "stream-json", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    pid_file = workspace / "tool.pid"
    wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", proc=proc)
    sent = time.monotonic()
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=20)
    return proc.returncode, json_lines(out), time.monotonic() - sent, host_pid(pid_file)


def test_sigint_exits_130_and_stops_the_tool(tmp_path: Path, workspace: Path) -> None:
    code, lines, elapsed, tool = _start_and_signal(tmp_path, workspace, signal.SIGINT)
    assert code == 130 and elapsed < 10
    assert lines[-1]["subtype"] == "interrupted"
    answered = [line for line in lines if line["type"] == "user"]
    assert answered and answered[0]["message"]["content"][0]["is_error"] is True
    assert not alive(tool), "the shell command outlived the run"


def test_sigterm_exits_143(tmp_path: Path, workspace: Path) -> None:
    code, lines, _, tool = _start_and_signal(tmp_path, workspace, signal.SIGTERM)
    assert code == 143 and lines[-1]["subtype"] == "interrupted"
    assert not alive(tool), "the shell command outlived the run"


def test_read_only_denies_writes_and_exits_6(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"tool_calls": [call("write_file", path="a.txt", content="x")]},
                               {"text": "I could not write the file."}])
    proc = invoke("run", "x", "-C", str(workspace), "--permission-mode", "read-only",
                  "-o", "stream-json", *args)
    assert proc.returncode == 6, proc.stderr
    lines = json_lines(proc.stdout)
    denied = lines[-1]["permission_denials"]
    assert denied and denied[0]["tool_name"] == "write_file"
    assert lines[-1]["subtype"] == "error_permission"
    assert not (workspace / "a.txt").exists()


def test_headless_ask_denies_at_once_and_rules_refine(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [
        {"tool_calls": [call("run_shell", command="git --version"), call("run_shell", command="touch x"),
                        call("read_file", path="nothing")]},
        {"text": "done"}])
    proc = invoke("run", "x", "-C", str(workspace), "--permission-mode", "ask",
                  "--allow", "run_shell(git *)", "-o", "stream-json", *args)
    results = [line["message"]["content"][0] for line in json_lines(proc.stdout) if line["type"] == "user"]
    assert "git version" in results[0]["content"]
    assert "headless" in results[1]["content"] and not (workspace / "x").exists()
    assert "permission denied" not in results[2]["content"]  # reading is allowed in ask mode
    assert proc.returncode == 6


def test_deny_rule_wins_over_allow(tmp_path: Path, workspace: Path) -> None:
    args = scripted(tmp_path, [{"tool_calls": [call("run_shell", command="rm -rf build")]},
                               {"tool_calls": [call("list_dir")]}, {"text": "ok"}])
    proc = invoke("run", "x", "-C", str(workspace), "--allow", "run_shell", "--deny", "run_shell(rm *)",
                  "-o", "stream-json", *args)
    assert proc.returncode == 0  # the agent went on after the denial and finished
    results = [line["message"]["content"][0] for line in json_lines(proc.stdout) if line["type"] == "user"]
    assert "denied by rule --deny 'run_shell(rm *)'" in results[0]["content"]


def test_bad_rule_is_a_clear_error(tmp_path: Path, workspace: Path) -> None:
    proc = invoke("run", "x", "-C", str(workspace), *scripted(tmp_path, [{"text": "no"}]),
                  "--deny", "run shell(")
    assert proc.returncode == 2  # a bad command-line value (tests/test_bad_values.py has more)
    assert proc.stderr == "error: --deny: expected a rule: tool or tool(glob), e.g. run_shell(git *) (got 'run shell(')\n"
