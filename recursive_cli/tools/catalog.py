"""The core tools every run gets, in the order the model is shown them."""

from __future__ import annotations

from .base import Tool
from .files import EditFileTool, ReadFileTool, WriteFileTool
from .listing import GlobTool, ListDirTool
from .memory import RecallTool, RememberTool
from .patch import ApplyPatchTool
from .search import SearchFilesTool
from .shell import RunShellTool
from .todo import TodoWriteTool
from .web import WebFetchTool


def core_tools() -> list[Tool]:
    """Fresh instances of the core tools, in the order the model sees them."""
    return [
        ReadFileTool(), WriteFileTool(), EditFileTool(), ApplyPatchTool(),
        ListDirTool(), GlobTool(), SearchFilesTool(), RunShellTool(), WebFetchTool(),
        TodoWriteTool(), RememberTool(), RecallTool(),
    ]
