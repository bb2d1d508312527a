"""The core tools every run gets, in the order the model is shown them.

A run shows the model every tool's spec before it calls any, but calls few of them (a
one-step answer none), so each core tool is a `LazyTool` until its first call: its name,
kind and spec come from `core_specs.py`, and its module — and msgspec, which validates its
arguments — are imported only when the model calls it or asks what a call is about.
Importing all twelve would add ~145M instructions to a one-step run's ~880M (msgspec ~30M of
them) and building their schemas ~20M more (callgrind, 2026-12-03).

`core_specs.py` is generated from the classes: after changing a tool's name, kind,
description or arguments run `python -m recursive_cli.tools.catalog` (tests/test_startup.py
fails while the file is out of date). A class listed in `CORE` but missing from the file is
imported at once, so a new tool works before the file is regenerated.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any, cast

from ..core.provider import ToolSpec
from ..core.tool import Tool, ToolContext, ToolKind, ToolResult

# (module under recursive_cli.tools, class), in the order the model sees them.
CORE: tuple[tuple[str, str], ...] = (
    ("files", "ReadFileTool"), ("files", "WriteFileTool"), ("files", "EditFileTool"), ("patch", "ApplyPatchTool"),
    ("listing", "ListDirTool"), ("listing", "GlobTool"), ("search", "SearchFilesTool"), ("shell", "RunShellTool"),
    ("web", "WebFetchTool"), ("todo", "TodoWriteTool"), ("memory", "RememberTool"), ("memory", "RecallTool"),
)
SPECS_FILE = Path(__file__).with_name("core_specs.py")
_specs: dict[str, tuple[ToolSpec, ToolKind]] = {}  # "module.Class" → its spec and kind, built once


def core_tools() -> list[Tool]:
    """Fresh instances of the core tools, in the order the model sees them."""
    known = _known_specs()
    return [cast(Tool, LazyTool(module, name, *known[f"{module}.{name}"])) if f"{module}.{name}" in known
            else _tool_class(module, name)() for module, name in CORE]


class LazyTool:
    """A core tool whose class is imported on its first call; until then name, kind and spec
    come from the generated table."""

    def __init__(self, module: str, class_name: str, spec: ToolSpec, kind: ToolKind) -> None:
        self.name = spec.name
        self.description = spec.description
        self.kind = kind
        self._spec = spec
        self._where = (module, class_name)
        self._tool: Tool | None = None

    @property
    def tool(self) -> Tool:
        """The real tool, imported and made on first use."""
        if self._tool is None:
            self._tool = _tool_class(*self._where)()
        return self._tool

    def spec(self) -> ToolSpec:
        return self._spec

    def subject(self, arguments: dict[str, Any]) -> str:
        return self.tool.subject(arguments)

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self.tool.invoke(arguments, ctx)

    def __repr__(self) -> str:
        return f"LazyTool({self.name!r})"


def _tool_class(module: str, class_name: str) -> type[Tool]:
    return cast("type[Tool]", getattr(importlib.import_module(f"{__package__}.{module}"), class_name))


def _known_specs() -> dict[str, tuple[ToolSpec, ToolKind]]:
    if not _specs:
        from .core_specs import SPECS

        for key, entry in SPECS.items():
            spec = ToolSpec(entry["name"], entry["description"], entry["parameters"])
            _specs[key] = (spec, entry["kind"])
    return _specs


def live_specs() -> dict[str, dict[str, Any]]:
    """The table `core_specs.py` holds, built from the tool classes themselves."""
    table = {}
    for module, name in CORE:
        tool = _tool_class(module, name)()
        spec = tool.spec()
        table[f"{module}.{name}"] = {"name": spec.name, "kind": tool.kind, "description": spec.description,
                                     "parameters": spec.parameters}
    return table


def specs_source(table: dict[str, dict[str, Any]]) -> str:
    """The text of `core_specs.py` for `table`."""
    import pprint  # (for the generator only: a run reads the table)

    return (
        '"""The core tools\' names, kinds, descriptions and argument schemas, for `catalog.py`.\n\n'
        "Generated from the tool classes by `python -m recursive_cli.tools.catalog`: do not edit.\n"
        '"""\n\nfrom typing import Any\n\n'
        f"SPECS: dict[str, dict[str, Any]] = {pprint.pformat(table, width=110, sort_dicts=False)}\n")


def main() -> None:
    """Write `core_specs.py` from the tool classes."""
    SPECS_FILE.write_text(specs_source(live_specs()), encoding="utf-8")
    sys.stdout.write(f"wrote {SPECS_FILE}\n")


if __name__ == "__main__":
    main()
