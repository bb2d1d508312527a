"""Custom slash commands, as Claude Code reads them: a Markdown file per command under
`.claude/commands/` in the workspace (workspace configuration: used once the workspace is
trusted, as its hooks are) and `$RECURSIVE_HOME/commands/` (the user's own). The file's path
below that folder names it (`review.md` is `/review`, `git/commit.md` is `/git:commit`); an
optional front matter gives its `description` (else the body's first line) and its
`allowed-tools` (permission rules added for the turn it runs in).

A prompt `/name args` runs it: the model gets Claude Code's command header and the body, with
`$ARGUMENTS` replaced by `args` and `$0`, `$1`… by its words (counted from 0, as Claude Code
counts them); a body that names no `$ARGUMENTS` gets them after it (`ARGUMENTS: args`).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

COMMANDS_DIR = "commands"
_POSITIONAL = re.compile(r"\$(\d+)")
_INVOCATION = re.compile(r"/([A-Za-z0-9_.:-]+)(?:\s+(.*))?", re.DOTALL)


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """One command file: its name (no slash), description, permission rules and body."""

    name: str
    description: str
    allowed_tools: tuple[str, ...]
    body: str
    path: Path
    argument_hint: str = ""
    scope: str = "project"  # where it comes from: project, user, or a plugin's name

    def listing(self) -> dict[str, str]:
        """Its entry in `initialize`'s `commands`, as Claude Code lists one."""
        entry = {"name": self.name, "description": f"{self.description} ({self.scope})"}
        return {**entry, "argumentHint": self.argument_hint} if self.argument_hint else entry

    def expand(self, arguments: str) -> str:
        """The user message that runs this command with `arguments`."""
        header = (f"<command-message>{self.name}</command-message>\n<command-name>/{self.name}</command-name>\n"
                  f"<command-args>{arguments}</command-args>\n")
        if "$ARGUMENTS" in self.body:
            text = self.body.replace("$ARGUMENTS", arguments)
        else:
            text = f"{self.body.rstrip()}\n\n\nARGUMENTS: {arguments}" if arguments else self.body
        try:
            words = shlex.split(arguments)
        except ValueError:
            words = arguments.split()
        text = _POSITIONAL.sub(lambda m: words[int(m[1])] if int(m[1]) < len(words) else m[0], text)
        return f"{header}\n{text}"


def invocation(prompt: str) -> tuple[str, str] | None:
    """(name, arguments) when `prompt` starts with a slash command, else None."""
    match = _INVOCATION.fullmatch(prompt.strip())
    return (match[1], (match[2] or "").strip()) if match else None


def command_folders(workspace: Path, home: Path, trusted: bool) -> list[tuple[Path, str]]:
    """Where commands come from, and their scope; later ones override earlier ones of the same name."""
    folders = [(home / COMMANDS_DIR, "user")]
    return [*folders, (workspace / ".claude" / COMMANDS_DIR, "project")] if trusted else folders


def load_commands(folders: list[tuple[Path, str]]) -> dict[str, SlashCommand]:
    """The commands of `folders` (each with its scope) by name; a file that cannot be read is left out."""
    found: dict[str, SlashCommand] = {}
    for folder, scope in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.md")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            name = ":".join(path.relative_to(folder).with_suffix("").parts)
            found[name] = _parse(name, text, path, scope)
    return found


def workspace_commands(workspace: Path) -> list[str]:
    """The names of the workspace's own commands (to say which an untrusted run leaves out)."""
    return sorted(load_commands([(workspace / ".claude" / COMMANDS_DIR, "project")]))


def _parse(name: str, text: str, path: Path, scope: str) -> SlashCommand:
    fields: dict[str, str] = {}
    body = text
    if text.startswith("---\n"):
        head, sep, rest = text[4:].partition("\n---")
        if sep:
            body = rest.partition("\n")[2]
            for line in head.splitlines():
                key, colon, value = line.partition(":")
                if colon:
                    fields[key.strip().lower()] = value.strip().strip("\"'")
    first = next((line.strip() for line in body.splitlines() if line.strip()), "")
    tools = fields.get("allowed-tools", "")
    rules = tuple(rule.strip() for rule in re.split(r",(?![^(]*\))", tools) if rule.strip())
    return SlashCommand(name, fields.get("description") or first, rules, body, path,
                        fields.get("argument-hint", ""), scope)
