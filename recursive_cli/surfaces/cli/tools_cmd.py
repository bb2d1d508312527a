"""`recursive tools`: the tools the agent would get, without building a provider."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap

from ...launch.options import CommonOptions, McpOptions
from ...launch.settings import command_settings


def tools_command(common: CommonOptions, as_json: bool, mcp: McpOptions | None = None) -> int:
    """Print the tool list (names and one-line descriptions, or JSON with schemas)."""
    loaded = command_settings(common)
    settings = loaded.settings
    from ...launch.run import run_tools

    tools = run_tools(settings)
    if not (settings.no_session or settings.no_checkpoints):  # what launch adds (with git present)
        from ...features.checkpoints.git import find_git
        from ...features.checkpoints.tools import checkpoint_tools

        tools += checkpoint_tools() if find_git() else []
    if settings.permission_mode == "plan":  # (offered in plan mode only)
        from ...features.plan_mode import ExitPlanModeTool, PlanState

        tools.append(ExitPlanModeTool(PlanState()))
    from ...launch.parts import run_skills

    skills = run_skills(loaded, quiet=True)
    if skills is not None and skills.skills:  # (the `skill` tool, when a skill is offered)
        from ...features.skills.tool import SkillTool

        tools.append(SkillTool(skills))
    from ...launch.agents import agent_definitions

    definitions = agent_definitions(loaded, [])  # (the workspace's and the user's agent files)
    if definitions:
        from ...features.subagents import TaskTool

        tools.append(TaskTool(listed=definitions))
    from .mcp_cmd import mcp_tools

    found = mcp_tools(loaded, mcp or McpOptions())  # started to be listed, then stopped
    tools += found
    if as_json:
        specs = [tool.spec() for tool in tools]
        data = [{"name": s.name, "description": s.description, "parameters": s.parameters} for s in specs]
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return 0
    width = max(len(tool.name) for tool in tools)
    columns = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    for tool in tools:
        summary = tool.description.strip().splitlines()[0]
        sys.stdout.write(_entry(f"{tool.name:<{width}}  ", summary, columns) + "\n")
    return 0


def _entry(name: str, summary: str, columns: int | None) -> str:
    """`name  summary`, on a terminal wrapped at word boundaries under the summary's column;
    piped (`columns` None) on one line, for grep and cut."""
    if columns is None or columns - len(name) < 20:
        return name + summary
    return textwrap.fill(summary, columns - 1, initial_indent=name, subsequent_indent=" " * len(name),
                         break_long_words=False, break_on_hyphens=False)
