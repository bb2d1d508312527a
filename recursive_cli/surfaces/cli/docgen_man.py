"""The man page, in man(7) macros: generated sections from the CLI tree, hand-written ones here.

Hand-written text marks code with `backticks` (rendered bold); everything is escaped so that
`groff -man -ww` renders the page without a warning.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ...core.choices import PROVIDERS, spelled_out
from ...core.config_keys import CONFIG_ONLY

if TYPE_CHECKING:
    from .docgen_model import CommandDoc, OptionDoc

DESCRIPTION = (
    "`recursive` is a command-line coding agent. It drives an LLM (any OpenAI-compatible "
    "server, or Anthropic) through a loop of tool calls inside a workspace (reading, editing "
    "and patching files, searching, running shell commands) and prints the answer.",
    "The final answer goes to standard output and nothing else does, whenever the model gave "
    "one: also when the run then failed (an answer after a denied action, a refusal, a goal "
    "not met), where the exit status tells the outcome. Progress (tool calls, a spinner while "
    "the model works, a summary of steps, tokens and cost) goes to standard error. `-o json` "
    "prints one JSON object at the end, on one line, and `-o stream-json` one compact object "
    "per line, in the shapes of Claude Code's headless mode plus `schema_version` (2). "
    "`--output-last-message FILE` also "
    "writes the answer to a file; `--output-schema FILE` asks for an answer that validates "
    "against a JSON Schema (asked once more when it does not, then exit status 1) and puts it "
    "in the result as `structured_output`.",
    "Standard input that is not a terminal is read and composes with PROMPT: alone when there "
    "is no PROMPT (or it is `-`), else appended to it in a fenced block. When a PROMPT was given "
    "and nothing arrives on a pipe for 2 seconds, a note on standard error says so. `--no-stdin` "
    "(or `RECURSIVE_NO_STDIN=1`) never reads it, as in a shell loop that reads its own input: "
    "`while read f; do recursive run --no-stdin \"fix $f\"; done < files.txt`. `-c` (`--continue`) "
    "goes on with the latest session of the workspace.",
    "Every run is written to disk as it goes, as a session under `$RECURSIVE_HOME/sessions`, "
    "and can be continued later; when the session cannot be written (a full disk), the run "
    "stops before the next tool runs and exits 1. Before and after every turn, and around "
    "every tool call that can change files, the workspace is snapshotted, so the agent's "
    "changes can be inspected and undone: `checkpoints restore` undoes only what the session's "
    "own tool calls and shell commands changed, never edits made by anyone else in between, "
    "and lists a file someone else changed since the session wrote it as a conflict.",
    "A model reply is acted on only when it is whole: when it is cut off at the output limit "
    "or stops for any reason but finishing or calling tools, none of its tool calls run; the "
    "model is told and goes on, and a second cut-off in a row ends the run with exit status 1. "
    "A refusal is the answer and also exits 1.",
    "Settings come from command-line options, then environment variables, then the project's "
    "`.recursive/config.toml`, then the user's `$RECURSIVE_HOME/config.toml`, then built-in "
    "defaults. Config keys are the long option names, e.g. `max-steps = 50`.",
    "Prices: `--max-cost` needs the model's price. Common OpenAI and Anthropic models are built "
    "in; for any other model add a table to a config file, `[prices.\"MODEL\"]` with `input` "
    "and `output` in USD per million tokens (optional `cache_read`, `cache_write`; 0 for a "
    "local model). A `--max-cost` on a model with no price refuses to start (exit status 2); "
    "`config show` prints the price in force and where it comes from.",
    "MCP servers: tools from Model Context Protocol servers, configured as for Claude Code in "
    "the workspace's `.mcp.json`, `$RECURSIVE_HOME/mcp.json` and `--mcp-config FILE|JSON`, "
    "appear as `mcp__SERVER__TOOL`; permission rules apply to them as to any tool. "
    "`mcp list` shows each server, its source, status and tools.",
)

ENVIRONMENT = (
    ("RECURSIVE_HOME", "Folder for user configuration, sessions, checkpoints and memory. "
     "Default: `~/.recursive`."),
    ("RECURSIVE_MODEL", "Model name, as `--model`. Default: the provider's."),
    ("RECURSIVE_PROVIDER", spelled_out(PROVIDERS, "`") + ", as `--provider`. "
     "Default: `openai`."),
    ("RECURSIVE_API_BASE", "Base URL of the API, as `--api-base`. When unset, "
     "`OPENAI_BASE_URL` or `ANTHROPIC_BASE_URL` (by provider), else the official endpoint."),
    ("RECURSIVE_API_KEY", "API key. When unset, `OPENAI_API_KEY` or `ANTHROPIC_API_KEY` "
     "(by provider). Read from the environment only; never printed or stored."),
    ("OPENAI_API_KEY, OPENAI_BASE_URL", "Fallbacks for the `openai` provider."),
    ("ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL", "Fallbacks for the `anthropic` provider."),
    ("RECURSIVE_WORKSPACE", "Workspace root, as `--workspace`. Default: the current directory."),
    ("RECURSIVE_MAX_STEPS", "LLM calls per turn, as `--max-steps`. Default: 100."),
    ("RECURSIVE_SCRIPT", "Replies for the `scripted` provider, as `--script`."),
    ("RECURSIVE_NO_STDIN", "When `1` (or `true`), standard input is never read, as `--no-stdin`."),
    ("RECURSIVE_REQUEST_TIMEOUT", "Seconds one request to the model may take before it is "
     "retried. Default: 600."),
    ("RECURSIVE_MCP_TIMEOUT", "How long an MCP server may take to start, a duration, as the "
     "config key `mcp-timeout`. Default: 30 s (Claude's `MCP_TIMEOUT`, in ms, when unset)."),
    ("RECURSIVE_CHECKPOINT_MAX_FILES", "The most files a workspace may hold for a run to "
     "snapshot it; over it, the session runs without checkpoints and says so once. `0`: no "
     "limit. Default: 20000."),
    ("RECURSIVE_CHECKPOINT_BUDGET", "Seconds the run's first listing of the workspace's files "
     "may take before checkpoints go off for the session. Default: 2."),
    ("RECURSIVE_TRUST_WORKSPACE", "When 1, the workspace's own hooks, MCP servers and config "
     "keys count for this run, as `--trust-workspace`."),
    ("RECURSIVE_OTEL", "When 1 (or `true`), the run exports a trace and metrics over OTLP/HTTP, as "
     "`--otel` (the `[otel]` extra)."),
    ("OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, "
     "OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES", "Where and how `--otel` exports, as OpenTelemetry "
     "defines them (default endpoint `http://localhost:4318`, service `recursive`). They turn nothing "
     "on alone; `OTEL_SDK_DISABLED=true` turns `--otel` off."),
    ("NO_COLOR", "When set to a non-empty value, no colour is used on standard error."),
)

# The config-file keys that no flag sets (every other key is a long option's name).
CONFIGURATION_KEYS = tuple((key.key, key.line().split(": ", 1)[1]) for key in CONFIG_ONLY)

FILES = (
    ("$RECURSIVE_HOME/config.toml", "User configuration; keys are the long option names."),
    (".recursive/config.toml", "Project configuration in the workspace; overrides the user "
     "file. Its keys that loosen yours (prices, api-base, allow, a higher budget…) count only "
     "once the workspace is trusted."),
    ("$RECURSIVE_HOME/trust.json", "The folders trusted with `recursive trust`, with a sha256 "
     "of each of their config files: a change makes the folder untrusted again."),
    ("$RECURSIVE_HOME/sessions/", "One folder per session, named by its id, holding "
     "`transcript.jsonl` (append-only), `meta.json` and a `lock` file."),
    ("$RECURSIVE_HOME/checkpoints/", "Workspace snapshots: a shadow git repository per "
     "workspace, with refs per session and turn. The workspace's own `.git` is never touched."),
    (".mcp.json, $RECURSIVE_HOME/mcp.json", "MCP servers of the workspace (once it is "
     "trusted) and of the user, in Claude Code's `mcpServers` format; `--mcp-config` adds more."),
    ("AGENTS.md, CLAUDE.md", "Project instructions at the workspace root (`AGENTS.md` first), "
     "appended to the system prompt."),
)

EXIT_STATUS = (
    ("0", "success", "The agent finished, the goal was met, or the loop ended normally."),
    ("1", "error_during_execution", "Provider error after retries, the model stopped for "
     "another reason than finishing (e.g. output length), IO error, or a bad config file found "
     "on disk (`config.toml`, `.mcp.json`, `settings.json`) or environment variable. "
     "An answer that never matched `--output-schema` has the subtype "
     "`error_max_structured_output_retries`."),
    ("2", "", "Bad command line: an unknown option, a missing argument, a value that is not "
     "accepted, or a file or folder named on it that is missing or malformed (`-C`, `--script`, "
     "`--mcp-config`…); one `error:` line on standard error names the option and what it accepts."),
    ("3", "error_max_turns, error_max_budget_usd, error_max_budget", "`--max-steps` "
     "(`error_max_turns`), `--max-cost` (`error_max_budget_usd`), or `--max-duration`, "
     "`--max-iterations` or the transcript limit (`error_max_budget`) was reached."),
    ("4", "error_goal_not_met", "A goal run ended (`--max-turns` or stalled) without success."),
    ("5", "error_stuck", "The agent repeated failing tool calls."),
    ("6", "error_permission", "A needed action was denied and the run could not go on."),
    ("130, 143", "interrupted", "SIGINT or SIGTERM (Ctrl-C at a question too). The session is "
     "saved and can be resumed."),
    ("141", "interrupted", "The reader of standard output went away (`| head -1`): the run "
     "stops quietly. The session is saved and can be resumed."),
)

# Every generated file names the command that regenerates it (docgen's `main`).
REGENERATE_COMMAND = f"python -m {__package__}.docgen"
SEE_ALSO = ("git(1)", "jq(1)", "bash(1)", "zsh(1)", "fish(1)")

_GENERAL_PANEL = "General"
_ESCAPES = {"\\": "\\e", "-": "\\-", "'": "\\(aq", '"': "\\(dq", "`": "\\(ga", "~": "\\(ti",
            "^": "\\(ha"}


def escape(text: str) -> str:
    """`text` as roff source: dashes as `\\-`, quotes and non-ASCII as named glyphs."""
    out = "".join(_ESCAPES.get(ch, ch) if ord(ch) < 128 else f"\\[u{ord(ch):04X}]" for ch in text)
    return "\\&" + out if out.startswith(".") else out


def bold(text: str) -> str:
    """Bold roff text (a name or code, so never hyphenated)."""
    return f"\\fB{_unbroken(text)}\\fR"


def italic(text: str) -> str:
    """Italic roff text (a placeholder, so never hyphenated)."""
    return f"\\fI{_unbroken(text)}\\fR"


def _unbroken(text: str) -> str:
    return " ".join("\\%" + escape(word) if word else "" for word in text.split(" "))


def placeholder(text: str) -> str:
    """A usage fragment such as `[SESSION] [PROMPT]...`: the uppercase words in italics."""
    pieces = re.split(r"([A-Z][A-Z0-9_]*)", text)
    return "".join(italic(p) if i % 2 else escape(p) for i, p in enumerate(pieces))


def inline(text: str) -> str:
    """Hand-written prose: `backticked` parts bold, the rest plain."""
    pieces = text.split("`")
    return "".join(bold(p) if i % 2 else escape(p) for i, p in enumerate(pieces))


def render_man(root: CommandDoc, version: str) -> str:
    """The whole man page of `root`'s program."""
    common, users = common_options(root)
    parts = [
        _header(root, version), _name(root), _synopsis(root),
        _section("DESCRIPTION", [line for text in DESCRIPTION for line in (".PP", inline(text))]),
        _commands(root, common, users), _common_options(root, common, users),
        _definitions("ENVIRONMENT", ENVIRONMENT), _definitions("CONFIGURATION KEYS", CONFIGURATION_KEYS),
        _definitions("FILES", FILES),
        _exit_status(), _examples(root), _see_also(root),
    ]
    return "\n".join(line for part in parts for line in part) + "\n"


def common_options(root: CommandDoc) -> tuple[list[OptionDoc], list[CommandDoc]]:
    """The largest set of options shared, identically, by the same two or more commands."""
    users: dict[OptionDoc, list[CommandDoc]] = {}
    for command in root.walk():
        for option in command.options:
            if not option.is_help:
                users.setdefault(option, []).append(command)
    groups: dict[tuple[str, ...], list[OptionDoc]] = {}
    for option, commands in users.items():
        if len(commands) > 1:
            groups.setdefault(tuple(c.key for c in commands), []).append(option)
    if not groups:
        return [], []
    keys, options = max(groups.items(), key=lambda item: len(item[1]))
    return options, [c for c in root.walk() if c.key in keys]


def _section(title: str, lines: list[str]) -> list[str]:
    return [f'.SH "{title}"', *lines]


def _header(root: CommandDoc, version: str) -> list[str]:
    prog = root.path[0]
    return [f'.\\" Generated from the CLI definition by `{REGENERATE_COMMAND}`; do not edit.',
            f'.TH "{escape(prog.upper())}" 1 "version {escape(version)}" "{escape(prog)}" '
            '"User Commands"']


def _name(root: CommandDoc) -> list[str]:
    summary = root.summary.rstrip(".")
    first = summary.split(" ", 1)[0]
    if len(first) == 1 or first[1:].islower():  # "A coding agent" but not "LLM agent"
        summary = summary[:1].lower() + summary[1:]
    return _section("NAME", [f"{escape(root.path[0])} \\- {escape(summary)}"])


def _synopsis(root: CommandDoc) -> list[str]:
    flags = [_bracketed(o) for o in root.options]
    lines = [" ".join([bold(root.name), *flags])]
    lines += [usage(c) for c in root.walk() if not c.subcommands and c is not root]
    return _section("SYNOPSIS", [x for line in lines for x in (line, ".br")][:-1])


def _bracketed(option: OptionDoc) -> str:
    names = "|".join(bold(n) for n in option.names)
    return f"[{names}]"


def usage(command: CommandDoc) -> str:
    """The usage line: program and subcommand in bold, placeholders in italics."""
    pieces = [bold(command.name)]
    if any(not o.is_help for o in command.options):
        pieces.append(placeholder("[OPTIONS]"))
    pieces += [placeholder(a.usage) for a in command.arguments]
    if command.subcommands:
        pieces.append(placeholder("COMMAND"))
    return " ".join(pieces)


def _commands(root: CommandDoc, common: list[OptionDoc], users: list[CommandDoc]) -> list[str]:
    lines: list[str] = []
    for command in root.walk():
        if command is not root:
            lines += _command(command, common if command in users else [])
    return _section("COMMANDS", lines)


def _command(command: CommandDoc, common: list[OptionDoc]) -> list[str]:
    lines = [f'.SS "{escape(command.key)}"', usage(command), *_paragraphs(command.help)]
    if command.subcommands:
        subs = ", ".join(bold(s.path[-1]) for s in command.subcommands)
        lines += [".PP", f"Commands: {subs}."]
    if common:
        lines += [".PP", f"Also accepts the options under {bold('COMMON OPTIONS')}."]
    lines += [x for a in command.arguments for x in _item(placeholder(a.usage), a.help)]
    own = [o for o in command.options if not o.is_help and o not in common]
    return lines + [x for o in own for x in _option(o)]


def _paragraphs(text: str) -> list[str]:
    lines: list[str] = []
    for paragraph in text.split("\n\n"):
        lines += [".PP", *(escape(line.strip()) for line in paragraph.splitlines() if line.strip())]
    return lines if text else []


def _item(tag: str, body: str) -> list[str]:
    return [".TP", tag, *(escape(line.strip()) for line in body.splitlines() if line.strip())]


def _option(option: OptionDoc) -> list[str]:
    tag = ", ".join(bold(n) for n in option.names)
    if option.choices:
        tag += " {" + "|".join(bold(c) for c in option.choices) + "}"
    elif option.takes_value:
        tag += " " + placeholder(option.metavar)
    body = option.help
    if option.repeatable and "repeat" not in body.lower():
        body = f"{body} Repeatable.".strip()
    return _item(tag, body)


def _common_options(root: CommandDoc, common: list[OptionDoc],
                    users: list[CommandDoc]) -> list[str]:
    lines = [".PP", f"Options of {bold(root.name)} itself, given before any command:"]
    lines += [x for o in root.options for x in _option(o)]
    help_names = ", ".join(bold(n) for o in root.options if o.is_help for n in o.names)
    if help_names:
        lines += [".PP", f"Every command accepts {help_names} and shows its own help."]
    if common:
        names = ", ".join(bold(c.key) for c in users)
        lines += [".PP", f"These commands accept the options below after the command name: "
                  f"{names}."]
        lines += _panels(common)
    return _section("COMMON OPTIONS", lines)


def _panels(options: list[OptionDoc]) -> list[str]:
    panels: dict[str, list[OptionDoc]] = {_GENERAL_PANEL: []}
    for option in options:
        panels.setdefault(option.panel or _GENERAL_PANEL, []).append(option)
    lines: list[str] = []
    for title, members in panels.items():
        if members:
            lines += [f'.SS "{escape(title)}"', *(x for o in members for x in _option(o))]
    return lines


def _definitions(title: str, entries: tuple[tuple[str, str], ...]) -> list[str]:
    return _section(title, [x for term, text in entries
                            for x in (".TP", ", ".join(bold(t) for t in term.split(", ")),
                                      inline(text))])


def _exit_status() -> list[str]:
    lines: list[str] = []
    for code, subtype, text in EXIT_STATUS:
        tag = bold(code) + (f" ({italic(subtype)})" if subtype else "")
        lines += [".TP", tag, inline(text)]
    return _section("EXIT STATUS", lines)


def _examples(root: CommandDoc) -> list[str]:
    lines: list[str] = []
    for command in root.walk():
        if command.examples:
            lines += [".PP", ".RS 4", ".nf", *(escape(e) for e in command.examples), ".fi", ".RE"]
    return _section("EXAMPLES", lines) if lines else []


def _see_also(root: CommandDoc) -> list[str]:
    pages = [page.rstrip(")").split("(") for page in SEE_ALSO]
    refs = [f".BR {escape(name)} ({section}){',' if i < len(pages) - 1 else ''}"
            for i, (name, section) in enumerate(pages)]
    prog = root.path[0]
    note = (f"Shell completions for {bold(prog)}: {bold(f'completions/{prog}.bash')}, "
            f"{bold(f'completions/_{prog}')} and {bold(f'completions/{prog}.fish')} in the "
            f"source tree; {bold('docs/configuration.md')} says how to install them.")
    return _section("SEE ALSO", [*refs, ".PP", note])
