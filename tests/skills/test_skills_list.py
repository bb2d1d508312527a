"""`recursive skills list` (issue 33): each skill with its source, SKILL.md, description and
whether a run here offers it; exit 1 for a SKILL.md that cannot be used, 2 for a bad --skill."""

from __future__ import annotations

import json
from pathlib import Path

from clitools import invoke

from .skillkit import make_skill


def test_the_table_says_what_is_in_force_and_why_not(workspace: Path, isolated_home: Path, tmp_path: Path) -> None:
    make_skill(isolated_home / "skills", "mine", "My own.")
    make_skill(workspace / ".claude" / "skills", "pdf-tools")
    make_skill(workspace / ".agents" / "skills", "mine", "The workspace's, shadowed.")
    flagged = make_skill(tmp_path / "more", "lint-rules", "Our lint rules.")
    result = invoke("skills", "list", "--skill", str(flagged), cwd=workspace)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAME", "IN", "FORCE", "SOURCE", "PATH", "DESCRIPTION"]
    rows = lines[1:-1]
    assert [row.split()[0] for row in rows] == ["lint-rules", "mine", "pdf-tools", "mine"]
    assert rows[0].split()[:4] == ["lint-rules", "yes", "--skill", str(flagged / "SKILL.md")]
    assert rows[1].split()[:4] == ["mine", "yes", "user", str(isolated_home / "skills" / "mine" / "SKILL.md")]
    assert "no: this workspace is not trusted" in rows[2] and "no: this workspace is not trusted" in rows[3]
    assert ".claude/skills/pdf-tools/SKILL.md" in rows[2] and "Extract text from PDF files." in rows[2]
    assert lines[-1] == "(`recursive trust .` trusts the workspace's skills, `--trust-workspace` for one run)"
    assert result.stderr == ""

    listed = invoke("skills", "list", "--json", "--trust-workspace", cwd=workspace)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert [(row["name"], row["source"], row["in_force"]) for row in data] == [
        ("mine", "user", True), ("pdf-tools", "workspace", True), ("mine", "workspace", False)]
    assert data[2]["reason"] == f"the user skill {isolated_home / 'skills' / 'mine' / 'SKILL.md'} has the same name"
    assert data[1] == {"name": "pdf-tools", "description": "Extract text from PDF files.", "in_force": True,
                       "reason": "", "source": "workspace", "path": ".claude/skills/pdf-tools/SKILL.md"}

    off = json.loads(invoke("skills", "list", "--json", "--no-skills", cwd=workspace).stdout)
    assert {row["reason"] for row in off} == {"--no-skills"} and not any(row["in_force"] for row in off)
    bare = json.loads(invoke("skills", "list", "--json", "--bare", cwd=workspace).stdout)
    assert {row["reason"] for row in bare} == {"--bare"}


def test_a_bad_skill_file_is_named_and_the_exit_code_is_1(workspace: Path, isolated_home: Path) -> None:
    make_skill(isolated_home / "skills", "good", "A good one.")
    make_skill(isolated_home / "skills", "nameless", front="description: no name\n")
    result = invoke("skills", "list", cwd=workspace)
    assert result.returncode == 1
    bad = isolated_home / "skills" / "nameless" / "SKILL.md"
    assert result.stderr == f"warning: skipped skill {bad}: no name in its front matter\n"
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["NAME", "good"]
    data = json.loads(invoke("skills", "list", "--json", cwd=workspace).stdout)
    assert data[-1] == {"name": None, "description": None, "in_force": False,
                        "reason": "no name in its front matter", "source": "user", "path": str(bad)}


def test_no_skills_and_bad_flags(workspace: Path) -> None:
    empty = invoke("skills", "list", cwd=workspace)
    assert empty.returncode == 0 and empty.stdout.startswith("no skills (folders: --skill DIR")
    assert json.loads(invoke("skills", "list", "--json", cwd=workspace).stdout) == []
    bad = invoke("skills", "list", "--skill", str(workspace / "missing"), cwd=workspace)
    assert bad.returncode == 2 and "--skill" in bad.stderr and bad.stdout == ""


def test_tools_lists_the_skill_tool_only_when_a_skill_is_offered(workspace: Path, isolated_home: Path) -> None:
    def names(*args: str) -> list[str]:
        return [tool["name"] for tool in json.loads(invoke("tools", "--json", *args, cwd=workspace).stdout)]

    assert "skill" not in names()
    make_skill(isolated_home / "skills", "mine", "My own.")
    assert "skill" in names() and "skill" not in names("--no-skills")


def test_every_agent_command_takes_the_skill_flags() -> None:
    for command in ("run", "loop", "goal", "chat", "resume"):
        shown = invoke(command, "--help", env={"COLUMNS": "200"})
        assert shown.returncode == 0 and "--skill" in shown.stdout and "--no-skills" in shown.stdout, command
