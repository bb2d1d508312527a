"""Subagents (issue 33): the `task` tool runs a sub-conversation with its own context, system
prompt, tools and model, inside the run's process, budget and sandbox, and returns its report.

`definitions.py` reads what can be started (`--agents`, the SDK's `agents`, agent files),
`tool.py` is the tool and the run's `Subagents`, `runner.py` runs one sub-conversation.
"""

from __future__ import annotations

from .definitions import (
    GENERAL,
    USER_FOLDER,
    WORKSPACE_FOLDER,
    AgentDefinition,
    DefinitionProblem,
    agent_files,
    load_agent_file,
    merge,
    parse_agents_json,
)
from .tool import TASK_TOOL, Subagents, TaskTool, attach_subagents

__all__ = ["GENERAL", "TASK_TOOL", "USER_FOLDER", "WORKSPACE_FOLDER", "AgentDefinition", "DefinitionProblem",
           "Subagents", "TaskTool", "agent_files", "attach_subagents", "load_agent_file", "merge",
           "parse_agents_json"]
