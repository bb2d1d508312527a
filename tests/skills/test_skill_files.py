"""Reading one SKILL.md (issue 33): the front matter skills are written in, and what keeps a
file out; the `skill` tool is a reading tool in every permission mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from recursive_cli.features.permissions import PermissionPolicy
from recursive_cli.features.skills import Skill, SkillProblem, load_skill


def skill_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s" / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("front", "name", "description"), [
    ("name: pdf\ndescription: Read PDFs.", "pdf", "Read PDFs."),
    ("name: \"pdf\"\ndescription: 'It''s for PDFs: all of them'", "pdf", "It's for PDFs: all of them"),
    ("name: pdf  # the short one\ndescription: Read PDFs.", "pdf", "Read PDFs."),
    ("name: pdf\ndescription: >\n  Read PDFs,\n  fill forms.\nlicense: MIT", "pdf", "Read PDFs, fill forms."),
    ("name: pdf\ndescription: |\n  Line one.\n  Line two.", "pdf", "Line one. Line two."),
    ("name: pdf\ndescription: Read PDFs\n  and fill forms.\nmetadata:\n  version: 2", "pdf",
     "Read PDFs and fill forms."),
    ("Name: pdf\nDescription: Keys in any case.\nallowed-tools: Read, Bash", "pdf", "Keys in any case."),
])
def test_the_front_matter_skills_are_written_in(tmp_path: Path, front: str, name: str, description: str) -> None:
    found = load_skill(skill_file(tmp_path, f"\ufeff---\n{front}\n---\n# Body\ntext\n"), "user")
    assert isinstance(found, Skill), found
    assert (found.name, found.description) == (name, description)
    assert found.body() == "# Body\ntext"


@pytest.mark.parametrize(("text", "reason"), [
    ("# just text\n", "no front matter (a --- line, then name: and description:, then ---)"),
    ("---\nname: pdf\ndescription: never closed\n", "no front matter (a --- line, then name: and description:, then ---)"),
    ("---\ndescription: no name\n---\nbody\n", "no name in its front matter"),
    ("---\nname: pdf\n---\nbody\n", "no description in its front matter"),
    ("---\nname: a(b)\ndescription: x\n---\n", "name 'a(b)' is not a skill name (letters, digits, '-', '_', '.', "
                                               "':', at most 64, no spaces)"),
])
def test_what_keeps_a_file_out(tmp_path: Path, text: str, reason: str) -> None:
    path = skill_file(tmp_path, text)
    found = load_skill(path, "workspace")
    assert found == SkillProblem(path, "workspace", reason)
    assert found.line() == f"skipped skill {path}: {reason}"


@pytest.mark.parametrize("mode", ["plan", "read-only", "ask", "accept-edits", "auto"])
def test_the_skill_tool_reads_in_every_mode(mode: str) -> None:
    assert PermissionPolicy(mode).verdict("skill", "read", "pdf-tools") == ("allow", "")  # type: ignore[arg-type]
