"""Helpers for the fleet tests: tasks files, scripted replies, bare git repositories, results."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from clitools import write_script


def call(name: str, **arguments: object) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def shell(command: str) -> dict[str, Any]:
    return call("run_shell", command=command)


def say(text: str) -> dict[str, Any]:
    return {"text": text}


def script(folder: Path, name: str, replies: list[dict[str, Any]]) -> str:
    """A script file for the scripted provider; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    return str(write_script(folder / f"{name}.json", replies))


def tasks_file(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(task) + "\n" for task in tasks), encoding="utf-8")
    return path


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def bare_repo(tmp_path: Path) -> str:
    """A bare repository as a file:// URL: main has version.txt 'two'; tag v1 has 'one'; branch
    feature adds feature.txt."""
    src = tmp_path / "repo-src"
    src.mkdir()
    git("init", "--quiet", "-b", "main", cwd=src)
    git("config", "user.email", "t@example.com", cwd=src)
    git("config", "user.name", "t", cwd=src)
    (src / "version.txt").write_text("one\n")
    git("add", ".", cwd=src)
    git("commit", "--quiet", "-m", "one", cwd=src)
    git("tag", "v1", cwd=src)
    git("checkout", "--quiet", "-b", "feature", cwd=src)
    (src / "feature.txt").write_text("feature\n")
    git("add", ".", cwd=src)
    git("commit", "--quiet", "-m", "feature", cwd=src)
    git("checkout", "--quiet", "main", cwd=src)
    (src / "version.txt").write_text("two\n")
    git("commit", "--quiet", "-am", "two", cwd=src)
    bare = tmp_path / "repo.git"
    git("clone", "--quiet", "--bare", str(src), str(bare))
    return bare.as_uri()


def results(folder: Path) -> list[dict[str, Any]]:
    """Every line of DIR/results.jsonl."""
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def by_id(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The last line of each task."""
    return {line["id"]: line for line in lines}


def transcript(home: Path, session_id: str) -> list[dict[str, Any]]:
    path = home / "sessions" / session_id / "transcript.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def tool_calls(records: list[dict[str, Any]]) -> list[str]:
    """The names of the tool calls in a transcript, in order."""
    return [call["name"] for record in records if record.get("type") == "message"
            for call in record["message"].get("tool_calls") or []]
