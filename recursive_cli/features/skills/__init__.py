"""Skills (issue 33): folders of instructions the model loads when a task calls for one.

`catalog.py` finds them and decides which a run offers (trust, `--bare`, `--no-skills`),
`skill.py` reads one SKILL.md, `tool.py` is the `skill` tool that hands the model a body.
`attach_skills` gives a runtime the tool and its file tools the skill folders to read.
"""

from __future__ import annotations

from .catalog import SKILL_TOOL, Entry, SkillCatalog, SkillChoice, find_skills, shown_path
from .skill import Skill, SkillProblem, load_skill

__all__ = ["SKILL_TOOL", "Entry", "Skill", "SkillCatalog", "SkillChoice", "SkillProblem", "find_skills",
           "load_skill", "shown_path"]
