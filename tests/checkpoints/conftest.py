"""Helpers for checkpoint tests: turns of a session driven through the real CLI, and workspace states."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from clitools import CliResult, invoke, json_lines, run_cli, write_script

import recursive_cli.features.checkpoints.git as git_module
from recursive_cli.features.checkpoints.checkpointer import GitCheckpointer
from recursive_cli.features.checkpoints.repo import shadow_folder
from recursive_cli.features.sessions.reader import load_session


def shell(command: str) -> dict[str, Any]:
    """A scripted reply that runs one shell command."""
    return {"tool_calls": [{"name": "run_shell", "arguments": {"command": command}}]}


Result = subprocess.CompletedProcess[str] | CliResult


class Agent:
    """One session in one workspace; each `turn` is a separate `recursive run`/`resume` command
    with the scripted provider, the way a user runs turns one after another. The commands run in
    this process through `invoke` (fast, and a test can patch what runs); `in_process=False`
    runs each one as a real process instead."""

    def __init__(self, tmp_path: Path, workspace: Path, home: Path, session_id: str = "s1",
                 in_process: bool = True) -> None:
        self.tmp_path = tmp_path
        self.workspace = workspace
        self.home = home
        self.session_id = session_id
        self.turns = 0
        self.in_process = in_process

    def cli(self, *args: str) -> Result:
        """Run one `recursive` command in the workspace."""
        run = invoke if self.in_process else run_cli
        return run(*args, cwd=self.workspace)

    def turn(self, prompt: str, *replies: dict[str, Any], flags: tuple[str, ...] = (),
             ok: bool = True) -> Result:
        """Run one turn whose model replies are `replies` then a final answer."""
        started = self.turns > 0
        # On resume the scripted provider skips as many replies as the conversation already holds.
        held = self._assistant_messages() if started else 0
        script = write_script(self.tmp_path / f"script-{self.session_id}-{self.turns}.json",
                              [{"text": "(replayed)"}] * held + [*replies, {"text": f"done: {prompt}"}])
        scripted = ("--provider", "scripted", "--script", str(script))
        if started:
            args = ("resume", self.session_id, prompt, *scripted, *flags)
        else:
            args = ("run", prompt, "-C", str(self.workspace), "--session-id", self.session_id,
                    *scripted, *flags)
        proc = self.cli(*args)
        self.turns += 1
        if ok:
            assert proc.returncode == 0, proc.stderr
        return proc

    def checkpoints(self, *args: str) -> Result:
        """`recursive checkpoints SUBCOMMAND SESSION ARGS…`."""
        return self.cli("checkpoints", args[0], self.session_id, *args[1:])

    def records(self, kind: str | None = None) -> list[dict[str, Any]]:
        path = self.home / "sessions" / self.session_id / "transcript.jsonl"
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [r for r in records if kind is None or r["type"] == kind]

    def refs(self) -> dict[str, str]:
        """The session's refs in the shadow repository: name after the session folder → commit."""
        repo = shadow_folder(self.home, self.workspace) / "repo"
        if not repo.is_dir():
            return {}
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        out = subprocess.run(["git", "--git-dir", str(repo), "for-each-ref",
                              "--format=%(refname) %(objectname)", f"refs/recursive/{self.session_id}"],
                             capture_output=True, text=True, check=True, env=env).stdout
        prefix = f"refs/recursive/{self.session_id}/"
        return {ref[len(prefix):]: commit for ref, commit in (line.split() for line in out.splitlines())}

    def _assistant_messages(self) -> int:
        folder = self.home / "sessions" / self.session_id
        return sum(1 for m in load_session(folder).messages if m.role == "assistant")


@pytest.fixture
def agent(tmp_path: Path, workspace: Path, isolated_home: Path) -> Agent:
    return Agent(tmp_path, workspace, isolated_home)


def state(root: Path) -> dict[str, tuple[str, bytes, bool]]:
    """Every file, symlink and folder under `root` except `.git`: kind, content, executable."""
    found: dict[str, tuple[str, bytes, bool]] = {}
    for folder, dirs, files in os.walk(root):  # symlinks to folders are listed, not entered
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            path = Path(folder, name)
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                entry = ("link", os.readlink(path).encode(), False)
            elif stat.S_ISDIR(info.st_mode):
                entry = ("dir", b"", False)
            else:
                entry = ("file", path.read_bytes(), bool(info.st_mode & stat.S_IXUSR))
            found[path.relative_to(root).as_posix()] = entry
    return found


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes (for "byte-identical" checks of a `.git` folder)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def stream(proc: Result, subtype: str) -> list[dict[str, Any]]:
    """The `system` lines of one subtype in a stream-json output."""
    return [line for line in json_lines(proc.stdout)
            if line["type"] == "system" and line.get("subtype") == subtype]


@pytest.fixture
def watched_cp(workspace: Path, isolated_home: Path) -> GitCheckpointer:
    """A checkpointer of 20 files whose workspace is watched already (quiet windows' tests)."""
    for i in range(20):
        (workspace / f"f{i}.txt").write_text(str(i))
    cp = GitCheckpointer(isolated_home, workspace, "s1")
    cp.snapshot(1, "before")
    cp.snapshot(1, "before")  # from the second walk on, the workspace is watched
    return cp


def git_commands(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The git subcommands the checkpointer runs from now on."""
    seen: list[str] = []
    real = subprocess.run

    def counting(argv: list[str], *args: Any, **kwargs: Any) -> Any:
        seen.append(next(a for a in argv[1:] if not a.startswith("-") and "=" not in a))
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(git_module.subprocess, "run", counting)
    return seen
