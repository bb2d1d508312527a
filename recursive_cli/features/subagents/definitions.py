"""Subagent definitions: what the `task` tool can start, and where each comes from.

Claude Code's shapes: `--agents JSON` (and the Agent SDKs' `agents=`, sent in `initialize`) is
`{"name": {"description", "prompt", "tools"?, "disallowedTools"?, "model"?, "maxTurns"?}}`; an
agent file (`.claude/agents/NAME.md`, `$RECURSIVE_HOME/agents/NAME.md`) holds front matter
(`name`, `description`, `tools`, `disallowedTools`, `model`, `maxTurns`) and, as its body, the
agent's system prompt. When two share a name the first wins: the flag's and the SDK's, then
the workspace's, then the user's. The workspace's files are workspace configuration: they count
only once the workspace is trusted (features/trust), as its hooks and `.mcp.json` do.

A definition that cannot be used is a `DefinitionProblem` (one line naming the file or key and
why), never an exception; the flag's JSON that is not JSON at all is an `AgentsError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.errors import AgentsError
from ..skills.skill import front_matter, split_front_matter

WORKSPACE_FOLDER = ".claude/agents"
USER_FOLDER = "agents"  # under $RECURSIVE_HOME
MAX_BYTES = 256 * 1024
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
GENERAL = "general-purpose"  # Claude Code's built-in agent, the one a call that names none gets
_GENERAL_PROMPT = ("You are an agent that another agent handed a task to. Do the task with the tools you "
                   "have, completely; when done, answer with a concise report of what you found or did: "
                   "it is all the other agent sees of your work.")


@dataclass(frozen=True, slots=True)
class AgentDefinition:
    """One kind of subagent: its name, when to use it (`description`), its system prompt, its
    tools (None: the parent's, less `task`), the tools it must not have, its model (None or
    `inherit`: the parent's), its own step limit, and where it was defined."""

    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None
    disallowed_tools: tuple[str, ...] = ()
    model: str | None = None
    max_turns: int | None = None
    source: str = "--agents"

    def as_json(self) -> dict[str, Any]:
        """Claude's shape of the definition (what `--agents` takes)."""
        shown: dict[str, Any] = {"description": self.description, "prompt": self.prompt}
        if self.tools is not None:
            shown["tools"] = list(self.tools)
        if self.disallowed_tools:
            shown["disallowedTools"] = list(self.disallowed_tools)
        if self.model:
            shown["model"] = self.model
        if self.max_turns:
            shown["maxTurns"] = self.max_turns
        return shown


GENERAL_PURPOSE = AgentDefinition(GENERAL, "General-purpose agent for researching complex questions, "
                                  "searching for code and doing multi-step tasks.", _GENERAL_PROMPT,
                                  source="built-in")


@dataclass(frozen=True, slots=True)
class DefinitionProblem:
    """A definition that cannot be used, and why (one line)."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


def parse_agents_json(text: str | Mapping[str, Any], source: str = "--agents"
                      ) -> tuple[list[AgentDefinition], list[DefinitionProblem]]:
    """The definitions of `--agents JSON` (or the SDK's `agents`); AgentsError when it is not
    a JSON object."""
    if isinstance(text, str):
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise AgentsError(f"{source} is not JSON: {exc}") from None
    else:
        value = dict(text)
    if not isinstance(value, dict):
        raise AgentsError(f'{source} must be a JSON object: {{"name": {{"description": …, "prompt": …}}}}')
    found: list[AgentDefinition] = []
    problems: list[DefinitionProblem] = []
    for name, fields in value.items():
        made = definition(str(name), fields if isinstance(fields, dict) else None, source, f"{source} {name}")
        (found if isinstance(made, AgentDefinition) else problems).append(made)  # type: ignore[arg-type]
    return found, problems


def definition(name: str, fields: Mapping[str, Any] | None, source: str,
               where: str) -> AgentDefinition | DefinitionProblem:
    """One definition from Claude's fields, or why it cannot be used."""
    if fields is None:
        return DefinitionProblem(where, "a definition must be an object with a description and a prompt")
    if not NAME.fullmatch(name):
        return DefinitionProblem(where, "a name is letters, digits, '.', '_', ':' or '-' (at most 64)")
    description, prompt = fields.get("description"), fields.get("prompt")
    if not isinstance(description, str) or not description.strip():
        return DefinitionProblem(where, "no description")
    if not isinstance(prompt, str) or not prompt.strip():
        return DefinitionProblem(where, "no prompt")
    model = fields.get("model")
    turns = fields.get("maxTurns")
    if model is not None and not isinstance(model, str):
        return DefinitionProblem(where, "model must be a string")
    if turns is not None and (not isinstance(turns, int) or isinstance(turns, bool) or turns < 1):
        return DefinitionProblem(where, "maxTurns must be a whole number of at least 1")
    tools = _names(fields.get("tools"))
    return AgentDefinition(name=name, description=description.strip(), prompt=prompt.strip(),
                           tools=tuple(tools) if tools is not None else None,
                           disallowed_tools=tuple(_names(fields.get("disallowedTools")) or ()),
                           model=model.strip() or None if model else None, max_turns=turns, source=source)


def _names(value: Any) -> list[str] | None:
    """Tool names as a list: Claude writes them as a list or as `Read, Grep, Glob`."""
    if value is None:
        return None
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [str(part).strip() for part in value if str(part).strip()]
    return None


def load_agent_file(path: Path, source: str) -> AgentDefinition | DefinitionProblem:
    """The definition an agent file holds (its name: the front matter's, else the file's stem)."""
    try:
        with path.open("rb") as handle:
            text = handle.read(MAX_BYTES).decode("utf-8", errors="replace")
    except OSError as exc:
        return DefinitionProblem(str(path), f"cannot be read: {exc.strerror or exc}")
    fields, body = agent_front_matter(text)
    if fields is None:
        return DefinitionProblem(str(path), "no front matter (--- name, description --- before the prompt)")
    name = fields.get("name") or path.stem
    return definition(str(name), {**fields, "prompt": body}, source, str(path))


def agent_front_matter(text: str) -> tuple[dict[str, Any] | None, str]:
    """The front matter's fields (None when there is none) and the body, read as skills' are
    (features/skills: the YAML subset such files are written in), with Claude's key names and
    its lists (`[a, b]`, or `- item` lines under the key) as lists."""
    header, body = split_front_matter(text.lstrip("\ufeff"))
    if header is None:
        return None, text
    fields: dict[str, Any] = {_KEYS.get(key, key): _value(value) for key, value in front_matter(header).items()}
    return fields, body.strip("\n")


_KEYS = {"disallowedtools": "disallowedTools", "maxturns": "maxTurns"}  # (front_matter lowers keys)


def _value(text: str) -> Any:
    if text.startswith("[") and text.endswith("]"):
        return [_unquoted(part) for part in text[1:-1].split(",") if part.strip()]
    if text.startswith("- "):  # (a list's lines, folded into one)
        return [_unquoted(part) for part in re.split(r"(?:^|\s)-\s+", text) if part.strip()]
    return int(text) if text.isdigit() else text


def _unquoted(text: str) -> str:
    text = text.strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text


def agent_files(folder: Path) -> list[Path]:
    """The `*.md` files of `folder`, by name; none when it does not exist."""
    try:
        return sorted(path for path in folder.iterdir() if path.suffix == ".md" and path.is_file())
    except OSError:
        return []


def merge(*groups: Iterable[AgentDefinition]) -> list[AgentDefinition]:
    """The definitions of every group, the first of each name winning."""
    seen: dict[str, AgentDefinition] = {}
    for group in groups:
        for found in group:
            seen.setdefault(found.name, found)
    return list(seen.values())
