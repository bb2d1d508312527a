"""Which shell command lines may run without asking, as Claude Code judges them: the one source
for plan mode (read-only commands) and for Claude's `default` and `acceptEdits` modes.

A command line is split at `|`, `&&`, `||`, `;` and newlines; it passes when every part does.
A part passes when its command only reads (`READ_ONLY_COMMANDS`, read-only git subcommands,
`find` without `-exec`/`-delete`…) or, where edits are allowed (`acceptEdits`), is one of
Claude Code's filesystem commands (`FILESYSTEM_COMMANDS`: mkdir, touch, rm, rmdir, mv, cp)
or writes its output (`>`, `>>`) to a file. Given `inside` (the workspace and `--add-dir`
roots), every path it names, and every file it writes to, must lie inside them: Claude Code
asks before `ls /etc` or `touch /tmp/x`. A substitution (`$(…)`, backticks, `<(…)`), a
subshell, input redirection, a variable in a path, or anything it cannot parse never passes:
what cannot be told safe is asked about.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable

# Commands that only read. (Claude Code asks before `uniq`, `env`, `printenv`, `less`, `awk`,
# so they are not here.)
READ_ONLY_COMMANDS = frozenset({
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "find", "pwd", "echo", "printf",
    "which", "file", "stat", "tree", "du", "df", "sort", "cut", "diff", "cmp", "basename", "dirname",
    "realpath", "readlink", "date", "whoami", "id", "hostname", "uname", "type", "true", "false", "nl",
    "md5sum", "sha256sum", "sha1sum", "jq", "sleep", "tr", "column", "test", "[", "cd"})
READ_ONLY_GIT = frozenset({"status", "log", "diff", "show", "blame", "grep", "ls-files", "rev-parse",
                           "describe", "shortlog", "reflog", "ls-tree", "cat-file"})
# What `acceptEdits` lets run in the workspace, as Claude Code does.
FILESYSTEM_COMMANDS = frozenset({"mkdir", "touch", "rm", "rmdir", "mv", "cp"})
# Commands whose arguments are text, not paths.
_TEXT_ARGUMENTS = frozenset({"echo", "printf", "date", "sleep", "true", "false", "whoami", "id", "hostname",
                             "uname", "type", "which", "basename", "dirname", "tr", "test", "["})
_SEPARATORS = frozenset({"|", "||", "&&", ";", "\n"})
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>"})
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-delete", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf",
                           "-fls"})

_OPERATOR_CHARS = frozenset("();<>|&")
_RISKY_OPTIONS = {"date": ("--set",), "rg": ("--pre",), "file": ("-C", "--compile"),
                  "git": ("--ext-diff", "--textconv", "-c")}

Inside = Callable[[str], bool]


def read_only_command(command: str, inside: Inside | None = None) -> bool:
    """Whether every part of `command` only reads (and, given `inside`, only inside it)."""
    return _passes(command, edits=False, inside=inside)


def workspace_command(command: str, inside: Inside) -> bool:
    """Whether every part of `command` only reads or changes files inside `inside` (acceptEdits)."""
    return _passes(command, edits=True, inside=inside)


def inside_roots(roots: tuple[str, ...], cwd: str) -> Inside:
    """A path test for words of a command run in `cwd`: inside one of `roots` (no symlinks
    followed: a relative path stays relative to `cwd` wherever a `cd` before it went, since
    each `cd` is itself judged from `cwd`)."""
    def inside(word: str) -> bool:
        if "$" in word or word.startswith("~"):
            return False
        path = os.path.normpath(os.path.join(cwd, word))
        return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)

    return inside


def _passes(command: str, *, edits: bool, inside: Inside | None) -> bool:
    if not command.strip() or "`" in command or "$(" in command:
        return False
    try:
        lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return False
    part: list[str] = []
    for token in [*tokens, ";"]:
        if token in _SEPARATORS:
            if part and not _part_passes(part, edits, inside):
                return False
            part = []
        else:
            part.append(token)
    return True


def _part_passes(tokens: list[str], edits: bool, inside: Inside | None) -> bool:
    words: list[str] = []
    targets: list[str] = []
    it = iter(tokens)
    for token in it:
        if token in _WRITES:
            targets.append(next(it, ""))
        elif token == ">&":  # `2>&1`: one output joins another
            if not next(it, "").isdigit():
                return False
        elif token and all(ch in _OPERATOR_CHARS for ch in token):
            return False  # input redirection, process substitution, a subshell, a background job
        else:
            words.append(token)
    if words and words[-1].isdigit() and targets:  # (`2>` is split as `2`, `>`)
        words.pop()
    if not words or not all(_writable(target, edits, inside) for target in targets):
        return False
    return _command_passes(words, edits, inside)


def _changes(name: str, word: str) -> bool:
    """Whether `word` makes a reading command change or run something."""
    risky = _RISKY_OPTIONS.get(name, ())
    return any(word == option or word.startswith(option + "=") for option in risky) or (
        name == "date" and word.startswith("-s"))


def _writable(target: str, edits: bool, inside: Inside | None) -> bool:
    if target == "/dev/null":
        return True
    return edits and bool(target) and (inside is None or inside(target))


def _command_passes(words: list[str], edits: bool, inside: Inside | None) -> bool:
    name, args = words[0], words[1:]
    if name == "git":
        rest = [word for word in args if not word.startswith("-")]
        if not rest or rest[0] not in READ_ONLY_GIT:
            return False
        args = rest[1:]
    elif name not in READ_ONLY_COMMANDS and not (edits and name in FILESYSTEM_COMMANDS):
        return False
    if name == "find" and any(word in _FIND_ACTIONS for word in args):
        return False
    if any(word.startswith("--output") for word in words) or (
            name in ("sort", "tree") and any(word.startswith("-o") for word in args)):
        return False  # (`git diff --output=F`, `sort -o F` write files)
    if any(_changes(name, word) for word in words[1:]) or (name == "hostname" and args):
        return False  # (`date -s`, `rg --pre CMD`, `file -C`, `hostname NAME` change or run something)
    if name in FILESYSTEM_COMMANDS and any(os.path.normpath(word) == "." for word in args):
        return False  # (the workspace itself is not an edit in it)
    if inside is None or name in _TEXT_ARGUMENTS:
        return True
    return all(inside(word) for word in args if not word.startswith("-"))
