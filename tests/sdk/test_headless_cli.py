"""`recursive -p` and `recursive --input-format stream-json` as a user or a script sees them:
stdout lines of SPEC §4's shapes (one golden shape per line type), exit codes, the session."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from clitools import json_lines, run_cli, wait_until, write_script

from .shapes import check_line

STREAM = ("--output-format", "stream-json", "--verbose", "--input-format", "stream-json")


def scripted(tmp_path: Path, replies: list[dict[str, Any]]) -> list[str]:
    return ["--provider", "scripted", "--script", str(write_script(tmp_path / "script.json", replies)),
            "--no-checkpoints"]


def user(text: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": text},
                       "parent_tool_use_id": None, "session_id": ""}) + "\n"


def control(request_id: str, **request: Any) -> str:
    return json.dumps({"type": "control_request", "request_id": request_id, "request": request}) + "\n"


def checked(stdout: str) -> list[dict[str, Any]]:
    """Every stdout line: compact JSON of a SPEC §4 shape."""
    records = []
    for line in stdout.splitlines():
        record = json.loads(line)
        assert line == json.dumps(record, ensure_ascii=False, separators=(",", ":")), line
        check_line(record)
        records.append(record)
    return records


def test_every_line_type_has_its_shape(tmp_path: Path, workspace: Path) -> None:
    flags = scripted(tmp_path, [
        {"text": "looking", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"error": {"status": 503, "message": "busy"}},
        {"text": "It says hello."}])
    (workspace / "a.txt").write_text("hello\n")
    stdin = control("init_1", subtype="initialize", hooks=None) + user("what does a.txt say?")

    proc = run_cli(*STREAM, "--include-partial-messages", "-C", str(workspace), *flags, input=stdin)

    assert proc.returncode == 0, proc.stderr
    records = checked(proc.stdout)
    kinds = {(r["type"], r.get("subtype") or (r["event"]["type"] if r["type"] == "stream_event" else ""))
             for r in records}
    assert {("control_response", ""), ("system", "init"), ("assistant", ""), ("user", ""), ("result", "success"),
            ("system", "api_retry"), ("stream_event", "message_start"),
            ("stream_event", "content_block_delta"), ("stream_event", "message_stop")} <= kinds
    assistant = next(r for r in records if r["type"] == "assistant")
    assert [block["type"] for block in assistant["message"]["content"]] == ["text", "tool_use"]
    assert assistant["message"]["content"][1]["name"] == "Read"
    assert assistant["message"]["content"][1]["input"] == {"file_path": str(workspace / "a.txt")}
    uuids = [r["uuid"] for r in records if "uuid" in r]
    assert len(uuids) == len(set(uuids)) == len([r for r in records if r["type"] != "control_response"])
    result = records[-1]
    assert (result["subtype"], result["result"], result["num_turns"]) == ("success", "It says hello.", 2)
    assert result["modelUsage"]["scripted"]["outputTokens"] == result["usage"]["output_tokens"]


def test_print_mode_text_and_json(tmp_path: Path, workspace: Path) -> None:
    flags = scripted(tmp_path, [{"text": "four"}, {"text": "five"}])

    text = run_cli("-p", "2+2?", "-C", str(workspace), *flags, input="")
    as_json = run_cli("--print", "--output-format", "json", "2+3?", "-C", str(workspace), *flags,
                      "--no-session", input="")

    assert (text.returncode, text.stdout) == (0, "four\n")
    assert as_json.returncode == 0 and len(as_json.stdout.splitlines()) == 1
    record = checked(as_json.stdout)[0]
    assert (record["type"], record["result"]) == ("result", "four")  # a fresh process: the script starts over


def test_print_mode_reads_stdin(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    flags = scripted(tmp_path, [{"text": "summarised"}])

    proc = run_cli("-p", "summarise this", "-C", str(workspace), *flags, input="some long text\n")

    assert (proc.returncode, proc.stdout) == (0, "summarised\n")
    session = next((isolated_home / "sessions").iterdir())
    assert "some long text" in (session / "transcript.jsonl").read_text()


def test_denied_call_then_answer_is_a_success_unless_fail_on(tmp_path: Path, workspace: Path) -> None:
    replies = [{"tool_calls": [{"name": "run_shell", "arguments": {"command": "rm -rf /"}}]}, {"text": "I won't."}]

    plain = run_cli("-p", "clean up", "-C", str(workspace), *scripted(tmp_path, replies), input="")
    strict = run_cli("-p", "clean up", "-C", str(workspace), *scripted(tmp_path, replies),
                     "--fail-on", "permission_denied", "-o", "json", input="")

    assert (plain.returncode, plain.stdout) == (0, "I won't.\n")
    assert strict.returncode == 6
    record = checked(strict.stdout)[0]
    assert record["is_error"] and record["permission_denials"][0]["tool_name"] == "Bash"


def test_bad_command_lines_exit_2(tmp_path: Path, workspace: Path) -> None:
    flags = scripted(tmp_path, [{"text": "x"}])
    cases = {
        ("-p", "x", "--frobnicate"): "unknown option --frobnicate",
        ("-p", "x", "--max-turns", "0"): "invalid value for --max-turns: '0'",
        ("-p", "x", "--permission-mode", "yolo"): "invalid value for --permission-mode: 'yolo'",
        ("--input-format", "stream-json", "-o", "json"): "--input-format stream-json needs --output-format stream-json",
        ("-p", "x", "--max-turns"): "--max-turns needs a value",
        ("-p",): "empty prompt",
        ("-p", "x", "--resume", "a", "--continue"): "not both",
    }
    for args, message in cases.items():
        proc = run_cli("-C", str(workspace), *flags, *args, input="")
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith("error: ") and message in proc.stderr, (args, proc.stderr)
        assert proc.stdout == ""


def test_resume_of_an_unknown_session_is_an_error(tmp_path: Path, workspace: Path) -> None:
    proc = run_cli("-p", "x", "--resume", "no-such-session", "-C", str(workspace),
                   *scripted(tmp_path, [{"text": "x"}]), input="")

    assert proc.returncode == 1 and proc.stderr.startswith("error: ") and "no-such-session" in proc.stderr


def test_end_of_stdin_ends_after_the_queued_prompts_with_the_session_saved(tmp_path: Path, workspace: Path,
                                                                           isolated_home: Path) -> None:
    flags = scripted(tmp_path, [{"text": "one"}, {"text": "two"}])

    proc = run_cli(*STREAM, "-C", str(workspace), *flags, input=user("first") + "not json\n" + user("second"))

    assert proc.returncode == 0
    results = [r for r in checked(proc.stdout) if r["type"] == "result"]
    assert [r["result"] for r in results] == ["one", "two"]
    assert "warning: ignored a stdin line: not JSON" in proc.stderr
    meta = json.loads((isolated_home / "sessions" / results[0]["session_id"] / "meta.json").read_text())
    assert (meta["status"], meta["turns"]) == ("completed", 2)


def test_unsupported_control_request_gets_an_error_answer(tmp_path: Path, workspace: Path) -> None:
    proc = run_cli(*STREAM, "-C", str(workspace), *scripted(tmp_path, []),
                   input=control("r1", subtype="rewind_files", user_message_id="x")
                   + control("r2", subtype="set_permission_mode", mode="wild"))

    answers = {r["response"]["request_id"]: r["response"] for r in checked(proc.stdout)}
    assert answers["r1"]["subtype"] == "error" and "rewind_files" in answers["r1"]["error"]
    assert answers["r2"]["subtype"] == "error" and "wild" in answers["r2"]["error"]
    assert proc.returncode == 0


def test_sigterm_mid_turn_saves_the_session_as_interrupted(tmp_path: Path, workspace: Path,
                                                           isolated_home: Path) -> None:
    flags = scripted(tmp_path, [{"tool_calls": [{"name": "run_shell", "arguments": {"command": "sleep 30"}}]}])
    proc = subprocess.Popen([sys.executable, "-m", "recursive_cli", *STREAM, "-C", str(workspace), *flags,
                             "--permission-mode", "bypassPermissions"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(user("sleep"))
    proc.stdin.flush()
    lines: list[str] = []
    wait_until(lambda: '"tool_use"' in (lines.append(proc.stdout.readline()) or lines[-1]), proc=proc)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)

    assert proc.returncode == 143
    records = json_lines("".join(lines) + out)
    result = [r for r in records if r["type"] == "result"][-1]
    assert result["is_error"] and result["finish_reason"] == "interrupted"
    meta = json.loads((isolated_home / "sessions" / result["session_id"] / "meta.json").read_text())
    assert meta["status"] == "interrupted"


def test_detection_leaves_our_commands_alone() -> None:
    code = ("from recursive_cli.surfaces.headless.entry import is_headless, maybe_headless;"
            "assert maybe_headless(['--help']) is None and maybe_headless(['run', '-p']) is None;"
            "assert is_headless(['--output-format', 'stream-json', '--verbose', '--input-format', 'stream-json']);"
            "assert is_headless(['-p', 'hi']) and not is_headless(['--version']);"
            "assert not is_headless(['--model', 'x', '--', '-p'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_replayed_prompts_and_a_message_without_text(tmp_path: Path, workspace: Path) -> None:
    image = json.dumps({"type": "user", "message": {"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]}}) + "\n"

    proc = run_cli(*STREAM, "--replay-user-messages", "-C", str(workspace),
                   *scripted(tmp_path, [{"text": "hi"}]), input=user("hello") + image)

    records = checked(proc.stdout)
    replay = [r for r in records if r["type"] == "user"]
    assert [r["message"]["content"] for r in replay] == ["hello", ""]
    results = [r for r in records if r["type"] == "result"]
    assert [(r["is_error"], r["result"]) for r in results] == [(False, "hi"), (True, "the message has no text to send")]
    assert "image block 1 is not an image (PNG, JPEG, GIF or WebP); it is not passed on" in proc.stderr
    assert proc.returncode == 1
