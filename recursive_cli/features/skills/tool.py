"""The `skill` tool (Claude Code's `Skill`): the model names a skill of the listing and gets its
instructions, the body of its SKILL.md, with the folder its files are in."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from msgspec import Meta

from ...core.tool import BaseTool, ToolContext, ToolResult
from .catalog import SKILL_TOOL, SkillCatalog
from .skill import SKILL_FILE

MAX_FILES = 30  # the folder's other files listed in the result


@dataclass(slots=True, kw_only=True)
class SkillArgs:
    skill: Annotated[str, Meta(description="The name of a skill from the system prompt's list of skills, exactly.")]
    args: Annotated[str | None, Meta(description="Optional arguments for the skill.")] = None


class SkillTool(BaseTool[SkillArgs]):
    name = SKILL_TOOL
    description = ("Load a skill: the instructions of one of the skills the system prompt lists, for "
                   "the kind of task it covers. Call it before you start such a task, then follow what it "
                   "returns; the files it names are in the skill's folder.")
    kind = "read"
    Args = SkillArgs
    subject_field = "skill"

    def __init__(self, catalog: SkillCatalog) -> None:
        self.catalog = catalog

    async def run(self, args: SkillArgs, ctx: ToolContext) -> ToolResult:
        skill = self.catalog.find(args.skill.strip().lstrip("/"))
        if skill is None:
            names = ", ".join(s.name for s in self.catalog.skills) or "none"
            return ToolResult(f"no skill named {args.skill!r}; the skills are: {names}", is_error=True,
                              summary="no such skill")
        try:
            body = skill.body()
        except OSError as exc:
            return ToolResult(f"cannot read {skill.path}: {exc.strerror or exc}", is_error=True,
                              summary="unreadable skill")
        parts = [f"Base directory for this skill: {skill.folder}", body]
        files = _other_files(skill.folder)
        if files:
            parts.append("Files in this folder: " + ", ".join(files))
        if args.args:
            parts.append(f"ARGUMENTS: {args.args}")
        return ToolResult("\n\n".join(parts), summary=f"skill {skill.name}")


def _other_files(folder: Path) -> list[str]:
    """The skill folder's files besides its SKILL.md, relative, at most MAX_FILES (then `…`)."""
    found: list[str] = []
    try:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path != folder / SKILL_FILE:
                found.append(str(path.relative_to(folder)))
            if len(found) > MAX_FILES:
                return [*found[:MAX_FILES], "…"]
    except OSError:
        pass
    return found
