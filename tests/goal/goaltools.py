"""Helpers for goal tests: scripted replies, running `recursive goal`, reading the session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clitools import CliResult, invoke, json_lines, write_script


def call(name: str, **arguments: object) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def write(path: str, content: str = "x\n") -> dict[str, Any]:
    """A reply that writes a file (a turn's tool step)."""
    return call("write_file", path=path, content=content)


def say(text: str) -> dict[str, Any]:
    return {"text": text}


def verdict(achieved: bool, reason: str) -> dict[str, Any]:
    """A judge reply in the strict JSON it must use."""
    return {"text": json.dumps({"achieved": achieved, "reason": reason})}


def goal(tmp_path: Path, workspace: Path, replies: list[dict[str, Any]], *args: str,
         script_name: str = "script.json", **kwargs: Any) -> CliResult:
    """Run `recursive goal ... -C workspace` with the scripted provider (in this process)."""
    script = write_script(tmp_path / script_name, replies)
    return invoke("goal", *args, "-C", str(workspace), "--provider", "scripted",
                  "--script", str(script), **kwargs)


def evaluations(stdout: str) -> list[dict[str, Any]]:
    """The goal_evaluation lines of a stream-json output."""
    return [line for line in json_lines(stdout) if line.get("subtype") == "goal_evaluation"]


def result_of(stdout: str) -> dict[str, Any]:
    """The result object of `-o json` (its one line) or the last line of `-o stream-json`."""
    return json_lines(stdout)[-1]


def records(home: Path, session_id: str) -> list[dict[str, Any]]:
    lines = (home / "sessions" / session_id / "transcript.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def user_prompts(home: Path, session_id: str) -> list[str]:
    """The user messages of a session, in order (the turns' prompts)."""
    return [r["message"]["content"] for r in records(home, session_id)
            if r["type"] == "message" and r["message"]["role"] == "user"]


def meta(home: Path, session_id: str) -> dict[str, Any]:
    return json.loads((home / "sessions" / session_id / "meta.json").read_text())
