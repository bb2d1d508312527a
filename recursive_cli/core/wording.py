"""What a setting accepts, in words, once for every place that checks one.

A bad flag (surfaces/cli/usage.py) and a bad value in a config file or an environment
variable (core/settings.py) are told alike: `expected a whole number of at least 1 (got 'abc')`,
never a validator's own wording ("Input should be…", "Value error, …"). This module imports
nothing, so `--help` stays fast.
"""

from __future__ import annotations

from typing import Any

BOOLEAN = "true or false (1 or 0)"
DURATION = "a duration like 90 (seconds), 90s, 20m, 2h or 1h30m"
POSITIVE_DURATION = "a duration of more than 0, like 90s, 20m or 2h"
USD = "an amount of USD more than 0, e.g. 0.50"
RULE = "a rule: tool or tool(glob), e.g. run_shell(git *)"


def number(whole: bool, low: Any = None, high: Any = None, above: Any = None) -> str:
    """`a whole number of at least 1`, `a number more than 0`…"""
    noun = "a whole number" if whole else "a number"
    return noun + (f" more than {above}" if above is not None else bounds(low, high))


def bounds(low: Any, high: Any) -> str:
    """` from 1 to 9`, ` of at least 1`, ` of at most 9`, or nothing."""
    if low is not None and high is not None:
        return f" from {low} to {high}"
    if low is not None:
        return f" of at least {low}"
    return f" of at most {high}" if high is not None else ""


def got(value: Any) -> str:
    """` (got 'abc')`: the value that was refused, as the user wrote it."""
    return f" (got {value!r})"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 line`, `2 lines`, `0 turns`: a count with its noun in the right number."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def plain(message: str) -> str:
    """A validator's message without its boilerplate ("Value error, ", "Input should be ")."""
    text = message.strip()
    for prefix in ("Value error, ", "Assertion failed, "):
        text = text.removeprefix(prefix)
    if text.startswith("Input should be "):
        text = "expected " + text.removeprefix("Input should be ")
    return text[:1].lower() + text[1:].rstrip(".")


def closest(given: str, names: list[str]) -> list[str]:
    """The names that `given` is most likely a typo of, best first, as click and git suggest
    one: the closest, and a second only when it is as close (a tie is a real doubt)."""
    import difflib  # (only for a command line that went wrong)

    near = difflib.get_close_matches(given, names, n=2, cutoff=0.75)
    best = difflib.SequenceMatcher(None, given, near[0]).ratio() if near else 0.0
    return [name for name in near if difflib.SequenceMatcher(None, given, name).ratio() >= best - 0.02]
