"""One skill: a folder whose `SKILL.md` holds front matter (`name`, `description`) and a body of
instructions; the folder's other files are its resources (issue 33).

The front matter is the YAML subset skills are written in: `key: value` lines, values plain,
quoted or a block (`|`, `>`), a plain value going on over indented lines. What cannot be
used (no front matter, no name, no description, a name a tool call could not carry) is a
`SkillProblem`, one line that says which file and why, never an exception.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SKILL_FILE = "SKILL.md"
MAX_BYTES = 256 * 1024  # a SKILL.md is instructions, not data: a bigger one is cut
MAX_DESCRIPTION = 1024  # the Agent Skills limit; longer ones are cut in the listing
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")  # what `skill {"skill": NAME}` and `Skill(NAME)` carry

Origin = Literal["workspace", "user", "flag"]  # .claude/skills or .agents/skills; $RECURSIVE_HOME/skills; --skill


@dataclass(frozen=True, slots=True)
class Skill:
    """A usable skill: its name and description (what the model is shown), its SKILL.md and
    where it was found."""

    name: str
    description: str
    path: Path  # the SKILL.md, resolved
    origin: Origin

    @property
    def folder(self) -> Path:
        return self.path.parent

    def body(self) -> str:
        """The instructions: SKILL.md after its front matter (read now: it may have changed)."""
        text, _ = read_text(self.path)
        return split_front_matter(text)[1].strip("\n")


@dataclass(frozen=True, slots=True)
class SkillProblem:
    """A SKILL.md that cannot be used, and why (one line)."""

    path: Path
    origin: Origin
    reason: str

    def line(self) -> str:
        return f"skipped skill {self.path}: {self.reason}"


def read_text(path: Path) -> tuple[str, bool]:
    """The file's text (at most MAX_BYTES, undecodable bytes replaced) and whether it was cut."""
    with path.open("rb") as handle:
        data = handle.read(MAX_BYTES + 1)
    return data[:MAX_BYTES].decode("utf-8", errors="replace").lstrip("\ufeff"), len(data) > MAX_BYTES


def load_skill(path: Path, origin: Origin) -> Skill | SkillProblem:
    """The skill of one SKILL.md, or the problem that keeps it out."""
    try:
        text, _ = read_text(path)
    except OSError as exc:
        return SkillProblem(path, origin, f"cannot read it: {exc.strerror or exc}")
    header, _ = split_front_matter(text)
    if header is None:
        return SkillProblem(path, origin, "no front matter (a --- line, then name: and description:, then ---)")
    fields = front_matter(header)
    name, description = fields.get("name", "").strip(), " ".join(fields.get("description", "").split())
    if not name:
        return SkillProblem(path, origin, "no name in its front matter")
    if not NAME.fullmatch(name):
        return SkillProblem(path, origin, f"name {name!r} is not a skill name (letters, digits, "
                                          "'-', '_', '.', ':', at most 64, no spaces)")
    if not description:
        return SkillProblem(path, origin, "no description in its front matter")
    return Skill(name, description[:MAX_DESCRIPTION], path, origin)


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(the front matter between the first two `---` lines, or None; the body after it)."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None, text
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            return "".join(lines[1:index]), "".join(lines[index + 1:])
    return None, text


def front_matter(text: str) -> dict[str, str]:
    """The top-level `key: value` pairs of a YAML-ish header (nested ones folded into their key)."""
    fields: dict[str, str] = {}
    key: str | None = None
    block: str | None = None  # "|" or ">" while a block value goes on
    parts: list[str] = []

    def close() -> None:
        if key is not None:
            joined = "\n".join(parts) if block == "|" else " ".join(part.strip() for part in parts)
            fields[key] = _scalar(joined.strip()) if block is None else joined.strip()

    for line in text.splitlines():
        top = re.match(r"([A-Za-z0-9_-]+)\s*:(?:\s+(.*))?$", line)
        if top and not line[0].isspace():
            close()
            key, value = top.group(1).lower(), (top.group(2) or "").strip()
            block = value[0] if value[:1] in ("|", ">") else None
            parts = [] if block is not None else [value]
        elif key is not None and (line.strip() or block == "|"):
            parts.append(line.strip() if block != "|" else line.strip(" \t"))
    close()
    return fields


def _scalar(value: str) -> str:
    """A plain or quoted YAML scalar's text (a trailing `# comment` of a plain one dropped)."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            return str(json.loads(value))
        except ValueError:
            return value[1:-1]
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return re.sub(r"\s+#.*$", "", value)
