"""Where skills are found, which of them a run offers, and how the model is told of them.

Folders, first wins when two skills share a name: `--skill DIR` (a skill folder, or a folder
of them), `$RECURSIVE_HOME/skills/`, then the workspace's `.claude/skills/` and
`.agents/skills/`. The workspace's are its configuration: a run offers them only once the
workspace is trusted (features/trust); `--bare` leaves the workspace's and the user's out,
`--no-skills` every one. Only names and descriptions go into the system prompt
(`SkillCatalog.section`); a body reaches the model when it asks (`tool.py`, or read_file of
the SKILL.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ...core.workspace_trust import SKILL_FOLDERS as WORKSPACE_FOLDERS
from .skill import SKILL_FILE, Origin, Skill, SkillProblem, load_skill

USER_FOLDER = "skills"  # under $RECURSIVE_HOME
SKILL_TOOL = "skill"
ORIGIN_NAMES = {"flag": "--skill", "user": "user", "workspace": "workspace"}


@dataclass(frozen=True, slots=True)
class Entry:
    """A skill found, whether the run offers it (`in_force`) and, when not, why."""

    skill: Skill
    in_force: bool = True
    reason: str = ""


@dataclass(slots=True)
class SkillCatalog:
    """Every skill found for a run, the ones it offers first in their order, and the SKILL.md
    files that could not be used."""

    entries: list[Entry] = field(default_factory=list)
    problems: list[SkillProblem] = field(default_factory=list)

    @property
    def skills(self) -> list[Skill]:
        """The skills the run offers, in order."""
        return [entry.skill for entry in self.entries if entry.in_force]

    def keep_only(self, names: list[str]) -> None:
        """Offer only the skills named (an SDK client's `skills=[…]`); the rest are left out."""
        wanted = set(names)
        self.entries = [entry if not entry.in_force or entry.skill.name in wanted
                        else Entry(entry.skill, False, "not in the client's skills") for entry in self.entries]

    def find(self, name: str) -> Skill | None:
        return next((skill for skill in self.skills if skill.name == name), None)

    def section(self, tools: Sequence[str], workspace: Path) -> str:
        """The system prompt's part naming each skill offered (name, description, file), or ''."""
        skills = self.skills
        if not skills:
            return ""
        how = (f"call the {SKILL_TOOL} tool with its name (or read its SKILL.md)" if SKILL_TOOL in tools
               else "read its SKILL.md")
        lines = [f"Skills: instructions for particular kinds of task, each in a SKILL.md file. When the "
                 f"task is one a skill below covers, first {how}, then follow it; the files it names are "
                 "in its folder."]
        lines += [f"- {skill.name}: {skill.description} (file: {shown_path(skill.path, workspace)})"
                  for skill in skills]
        return "\n".join(lines)


def shown_path(path: Path, workspace: Path) -> str:
    """`path` relative to the workspace when inside it, else absolute."""
    try:
        return str(path.relative_to(workspace))
    except ValueError:
        return str(path)


@dataclass(frozen=True, slots=True)
class SkillChoice:
    """Which skills a run may offer: `--skill` folders, and whether the user's and the
    workspace's count (with the reason when not: `--bare`, `this workspace is not trusted`…);
    `off`: `--no-skills`."""

    flags: tuple[Path, ...] = ()
    user: str = ""  # "" : they count; else why not
    workspace: str = ""
    off: bool = False


def find_skills(workspace: Path, home: Path, choice: SkillChoice) -> SkillCatalog:
    """Every skill of the folders `choice` names (the left-out ones too, marked, for `skills
    list`), each name offered once: the first found."""
    catalog = SkillCatalog()
    seen: dict[str, Skill] = {}
    for origin, folder, reason in _folders(workspace, home, choice):
        for path in skill_files(folder):
            found = load_skill(path, origin)
            if isinstance(found, SkillProblem):
                catalog.problems.append(found)
                continue
            first = seen.get(found.name)
            why = "--no-skills" if choice.off else reason or (
                f"the {ORIGIN_NAMES[first.origin]} skill {first.path} has the same name" if first else "")
            if not why:
                seen[found.name] = found
            catalog.entries.append(Entry(found, not why, why))
    return catalog


def _folders(workspace: Path, home: Path, choice: SkillChoice) -> list[tuple[Origin, Path, str]]:
    folders: list[tuple[Origin, Path, str]] = [("flag", path, "") for path in choice.flags]
    folders.append(("user", home / USER_FOLDER, choice.user))
    folders += [("workspace", workspace / name, choice.workspace) for name in WORKSPACE_FOLDERS]
    return folders


def folder_problem(folder: Path) -> str:
    """What `--skill DIR` needs and `folder` is not ("" when it is fine)."""
    if not folder.expanduser().is_dir():
        return "expected a skill folder (one with a SKILL.md) or a folder of them"
    if not skill_files(folder):
        return "expected a folder with a SKILL.md, or with subfolders that have one"
    return ""


def skill_files(folder: Path) -> list[Path]:
    """The SKILL.md of `folder` itself, else those of its subfolders (by name), resolved."""
    folder = folder.expanduser()
    own = folder / SKILL_FILE
    if own.is_file():
        return [own.resolve()]
    try:
        children = sorted(folder.iterdir())
    except OSError:  # (no such folder: no skills there)
        return []
    return [(child / SKILL_FILE).resolve() for child in children if (child / SKILL_FILE).is_file()]

