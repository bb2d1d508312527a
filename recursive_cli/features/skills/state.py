"""The skill flags a session ran with (`--skill` folders, `--no-skills`), kept in its state so
that `resume` offers the same skills unless it is given skill flags of its own."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ...core.state import StatePart


@dataclass(slots=True, kw_only=True)
class SkillState(StatePart):
    """`--skill` folders (absolute) and `--no-skills`, as the session ran with them."""

    key: ClassVar[str] = "skills"

    folders: list[str] = field(default_factory=list)
    off: bool = False
