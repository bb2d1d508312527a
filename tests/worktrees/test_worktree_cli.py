"""`-w/--worktree`, `recursive worktree list|rm` and fleet's `"worktree": true`, with real git
in temp folders: sessions in one repository each get their own checkout and branch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from clitools import invoke, json_lines, write_script

from .conftest import git


def writes(tmp_path: Path, name: str, content: str, delay: float = 0.0) -> list[str]:
    """A script that writes same.txt, then reads it back with a shell command, then answers."""
    script = write_script(tmp_path / f"{name}.json", [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "same.txt", "content": content}}]},
        {"delay": delay, "tool_calls": [{"name": "run_shell", "arguments": {"command": "cat same.txt"}}]},
        {"text": f"wrote {content.strip()}"},
    ])
    return ["--provider", "scripted", "--script", str(script)]


def test_two_parallel_worktree_runs_never_see_each_other(tmp_path: Path, repo: Path) -> None:
    runs = [subprocess.Popen([sys.executable, "-m", "recursive_cli", "run", "-w", name, "-o", "stream-json",
                              *writes(tmp_path, name, f"{name}\n", delay=0.5), "write same.txt"],
                             cwd=repo, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
            for name in ("alpha", "beta")]
    outputs = [proc.communicate(timeout=60) for proc in runs]
    for name, proc, (stdout, stderr) in zip(("alpha", "beta"), runs, outputs, strict=True):
        assert proc.returncode == 0, stderr
        lines = json_lines(stdout)
        shell = [block for line in lines if line["type"] == "user"
                 for block in line["message"]["content"] if block["type"] == "tool_result"][-1]
        assert shell["content"].splitlines()[-1] == name or name in shell["content"]  # its own file only
        other = "beta" if name == "alpha" else "alpha"
        assert other not in shell["content"]
        result = lines[-1]
        tree = repo / ".recursive" / "worktrees" / name
        assert result["worktree"] == {"path": str(tree), "branch": f"recursive/{name}"}
        assert lines[0]["cwd"] == str(tree)
        assert (tree / "same.txt").read_text() == f"{name}\n"
    assert not (repo / "same.txt").exists()
    assert git(repo, "status", "--porcelain") == ""  # the main checkout is untouched (info/exclude)
    assert set(git(repo, "branch", "--list", "recursive/*", "--format=%(refname:short)").split()) == \
        {"recursive/alpha", "recursive/beta"}


def test_result_line_sessions_show_and_resume_name_the_worktree(tmp_path: Path, repo: Path) -> None:
    sub = repo / "src"
    sub.mkdir()
    (sub / "keep.txt").write_text("x\n")
    git(repo, "add", "src")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "src")
    proc = invoke("run", "--session-id", "wt-1", "-w", *writes(tmp_path, "one", "one\n"), "write it", cwd=sub)
    assert proc.returncode == 0, proc.stderr
    tree = repo / ".recursive" / "worktrees" / "wt-1"  # no NAME: the session id
    assert f"· branch recursive/wt-1 in {tree}" in proc.stderr.splitlines()[-1]
    assert (tree / "src" / "same.txt").read_text() == "one\n"  # the subfolder it was started in
    shown = invoke("sessions", "show", "wt-1")
    assert f"worktree: branch recursive/wt-1 in {tree} (of {repo})" in shown.stdout
    again = write_script(tmp_path / "again.json", [{"tool_calls": [{"name": "run_shell", "arguments": {"command": "pwd"}}]},
                                                   {"text": "back"}])
    resumed = invoke("resume", "wt-1", "where are you", "--script", str(again), "-o", "json", cwd=repo)
    result = json.loads(resumed.stdout)
    assert result["worktree"]["branch"] == "recursive/wt-1", resumed.stderr


def test_not_a_git_repository_is_one_line_and_exit_2(tmp_path: Path, workspace: Path) -> None:
    proc = invoke("run", "-w", "x", *writes(tmp_path, "x", "x\n"), "write it", "-C", str(workspace))
    assert proc.returncode == 2
    assert proc.stderr == f"error: --worktree needs a git repository, and {workspace} is not in one\n"


def test_an_existing_name_is_refused_before_anything_runs(tmp_path: Path, repo: Path) -> None:
    assert invoke("run", "-w", "dup", *writes(tmp_path, "a", "a\n"), "write it", cwd=repo).returncode == 0
    proc = invoke("run", "-w", "dup", *writes(tmp_path, "b", "b\n"), "write it", cwd=repo)
    assert proc.returncode == 2 and proc.stderr.startswith("error: worktree dup already exists")
    assert (repo / ".recursive" / "worktrees" / "dup" / "same.txt").read_text() == "a\n"


def test_a_launch_that_fails_leaves_no_worktree(repo: Path) -> None:
    proc = invoke("run", "-w", "gone", "--provider", "openai", "hi", cwd=repo,
                  env={"OPENAI_API_KEY": None, "RECURSIVE_API_KEY": None})
    assert proc.returncode != 0
    assert not (repo / ".recursive" / "worktrees" / "gone").exists()
    assert "recursive/gone" not in git(repo, "branch", "--list")


def test_list_shows_branch_dirty_state_and_session(tmp_path: Path, repo: Path) -> None:
    assert invoke("run", "--session-id", "s-dirty", "-w", "dirty", *writes(tmp_path, "d", "d\n"), "go", cwd=repo).returncode == 0
    proc = invoke("worktree", "list", "--json", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    [row] = json.loads(proc.stdout)
    assert row == {"name": "dirty", "branch": "recursive/dirty", "path": str(repo / ".recursive/worktrees/dirty"),
                   "dirty": 1, "session": "s-dirty", "status": "completed"}
    text = invoke("worktree", "list", cwd=repo).stdout
    assert text.split("\t")[:4] == ["dirty", "recursive/dirty", "1 uncommitted", "s-dirty (completed)"]


def test_rm_refuses_a_dirty_worktree_without_force(tmp_path: Path, repo: Path) -> None:
    assert invoke("run", "-w", "wip", *writes(tmp_path, "w", "w\n"), "go", cwd=repo).returncode == 0
    tree = repo / ".recursive" / "worktrees" / "wip"
    proc = invoke("worktree", "rm", "wip", cwd=repo)
    assert proc.returncode == 1
    assert proc.stderr == (f"error: worktree wip has uncommitted changes (1 file) in {tree}: commit or discard "
                           "them, or pass --force to delete them\n")
    assert (tree / "same.txt").exists() and "recursive/wip" in git(repo, "branch", "--list")
    forced = invoke("worktree", "rm", "wip", "--force", cwd=repo)
    assert forced.returncode == 0, forced.stderr
    assert not tree.exists() and "recursive/wip" not in git(repo, "branch", "--list")
    assert invoke("worktree", "list", "--json", cwd=repo).stdout == "[]\n"


def test_rm_refuses_commits_no_other_branch_has(tmp_path: Path, repo: Path) -> None:
    assert invoke("run", "-w", "done", *writes(tmp_path, "c", "c\n"), "go", cwd=repo).returncode == 0
    tree = repo / ".recursive" / "worktrees" / "done"
    git(tree, "add", "same.txt")
    git(tree, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "work")
    proc = invoke("worktree", "rm", "done", cwd=repo)
    assert proc.returncode == 1 and "branch recursive/done has 1 commit HEAD does not have" in proc.stderr
    git(repo, "merge", "-q", "--ff-only", "recursive/done")
    assert invoke("worktree", "rm", "done", cwd=repo).returncode == 0
    assert not tree.exists()


def test_clean_worktree_is_removed_and_unknown_name_is_exit_1(repo: Path) -> None:
    assert invoke("worktree", "rm", "nope", cwd=repo).returncode == 1
    git(repo, "worktree", "add", "-q", "-b", "other", str(repo.parent / "other"))  # not recursive's: not listed
    assert invoke("worktree", "list", "--json", cwd=repo).stdout == "[]\n"


def test_optional_name_reads_the_prompt_as_the_prompt(tmp_path: Path, repo: Path) -> None:
    proc = invoke("run", *writes(tmp_path, "p", "p\n"), "-o", "json", "-w", "write the file please", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    name = json.loads(proc.stdout)["session_id"]
    assert json.loads(proc.stdout)["worktree"]["branch"] == f"recursive/{name}"


def test_goal_and_loop_work_in_their_worktree(tmp_path: Path, repo: Path) -> None:
    goal = invoke("goal", "-w", "g", "--check", "test -f same.txt", *writes(tmp_path, "g", "g\n"),
                  "make same.txt", "-o", "json", cwd=repo)
    assert goal.returncode == 0, goal.stderr
    assert json.loads(goal.stdout)["worktree"]["branch"] == "recursive/g"
    assert (repo / ".recursive/worktrees/g/same.txt").read_text() == "g\n"
    loop = invoke("loop", *writes(tmp_path, "l", "l\n"), "make same.txt", "--worktree=l", cwd=repo)
    assert loop.returncode == 0, loop.stderr
    assert (repo / ".recursive/worktrees/l/same.txt").read_text() == "l\n"
    assert not (repo / "same.txt").exists()


def test_worktree_with_continue_or_without_a_prompt_is_exit_2(tmp_path: Path, repo: Path) -> None:
    proc = invoke("run", "-c", "-w", "x", *writes(tmp_path, "x", "x\n"), "go", cwd=repo)
    assert proc.returncode == 2 and "--worktree starts a new session" in proc.stderr
    proc = invoke("run", *writes(tmp_path, "y", "y\n"), "-w", cwd=repo)  # -w last: no name, and no prompt
    assert proc.returncode == 2
    assert not (repo / ".recursive" / "worktrees").exists() or not any((repo / ".recursive" / "worktrees").iterdir())
