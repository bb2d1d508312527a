"""The way into headless mode: `recursive -p …` and `recursive --input-format stream-json …`.

Claude's Agent SDKs spawn their CLI with its flags first and no subcommand; `maybe_headless`
tells such a command line from ours (whose first word is a subcommand, `--help` or
`--version`) without importing anything heavy, so `recursive --help` stays fast.
"""

from __future__ import annotations

import sys

_OURS_FIRST = ("-h", "--help", "--version")
# The level of Claude Code's headless protocol spoken here: what `init` reports as
# `claude_code_version`, and what `recursive -v` prints first, as `claude -v` prints its version
# (the Agent SDKs read the `X.Y.Z` a line starts with, and warn below 2.0.0).
PROTOCOL_VERSION = "2.0.0"


def claude_version_line() -> str:
    """`recursive -v`: Claude Code's version line (`2.1.3 (Claude Code)`), ours in the brackets."""
    from ... import __version__

    return f"{PROTOCOL_VERSION} (recursive {__version__}, Claude Code compatible)"


def is_headless(argv: list[str]) -> bool:
    """Whether `argv` (without the program name) is a headless command line: it starts with an
    option and, before any `--`, says `-p`/`--print` or `--input-format`."""
    if not argv or not argv[0].startswith("-") or argv[0] in _OURS_FIRST:
        return False
    for token in argv:
        if token == "--":
            return False
        if token in ("-p", "--print") or token.split("=", 1)[0] == "--input-format":
            return True
    return False


def maybe_headless(argv: list[str] | None = None) -> int | None:
    """Run a headless command line and return its exit code; None when `argv` is not one."""
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["-v"]:  # Claude's spelling of --version (its SDKs run `CLI -v`)
        sys.stdout.write(claude_version_line() + "\n")
        sys.stdout.flush()
        return 0
    if not is_headless(argv):
        return None
    from .main import run_headless

    return run_headless(argv)
