"""The `apply_patch` tool: V4A patches applied through the sandbox (engine in `patch_engine`)."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from msgspec import Meta

from ..core.tool import BaseTool, ToolContext, ToolResult
from .patch_engine import PatchError, PatchResult, apply_patch

_PATH_HEADER = re.compile(r"^\s*\*\*\* (?:Add File|Update File|Delete File|Move to):\s*(.+?)\s*$",
                          re.MULTILINE)


@dataclass(slots=True, kw_only=True)
class PatchArgs:
    patch: Annotated[str, Meta(description="The whole patch, from '*** Begin Patch' to '*** End Patch'.")]


class ApplyPatchTool(BaseTool[PatchArgs]):
    name = "apply_patch"
    description = (
        "Add, update, delete or move files with one patch in the V4A format:\n"
        "*** Begin Patch\n"
        "*** Add File: path/new.py\n+line of the new file\n"
        "*** Update File: path/old.py\n"
        "@@ def nearby_function():\n context line\n-removed line\n+added line\n context line\n"
        "*** Delete File: path/gone.py\n"
        "*** End Patch\n"
        "In an update, `@@` may name a line (class or function) that locates the hunk; give "
        "about 3 unchanged context lines around each change, prefixed by a space. "
        "`*** Move to: new/path` after an Update header renames the file. "
        "Prefer this or edit_file over rewriting whole files."
    )
    kind = "edit"
    Args = PatchArgs
    subject_field = None

    def subject(self, arguments: dict[str, Any]) -> str:
        """The files the patch names, comma-separated."""
        patch = arguments.get("patch")
        return ", ".join(patch_paths(patch)) if isinstance(patch, str) else ""

    async def run(self, args: PatchArgs, ctx: ToolContext) -> ToolResult:
        def resolve(path: str) -> Path:
            return ctx.sandbox.resolve(path, write=True)

        try:
            result = await asyncio.to_thread(apply_patch, args.patch, resolve)
        except PatchError as exc:
            return failure(exc)
        return ToolResult(f"patch applied:\n{result.summary()}", summary=count_files(result))


def failure(exc: PatchError) -> ToolResult:
    """The error result for a patch that failed, saying what was kept if anything was."""
    text = f"patch not applied: {exc}"
    if exc.applied is not None:
        text = (f"patch partly applied: {exc}\nthese changes were made before the failure and "
                f"were kept:\n{exc.applied.summary()}")
    return ToolResult(text, is_error=True, summary="patch failed")


def count_files(result: PatchResult) -> str:
    """Summary like `2 files: 1 added, 1 modified`."""
    parts = [f"{len(paths)} {label}" for label, paths in
             (("added", result.added), ("modified", result.modified), ("deleted", result.deleted))
             if paths]
    total = len(result.added) + len(result.modified) + len(result.deleted)
    noun = "file" if total == 1 else "files"
    return f"{total} {noun}: " + ", ".join(parts) if parts else "no changes"


def patch_paths(patch: str) -> list[str]:
    """Every path a patch's headers name, in order, without repeats."""
    return list(dict.fromkeys(_PATH_HEADER.findall(patch)))
