"""How the command line is shown and how a bad one is reported.

A bad command line — an unknown option, a missing value, a value that is not accepted — is
one line on stderr, `error: --max-steps: expected a whole number of at least 1 (got '0')`,
naming the flag and what it accepts, and exit 2. Never the validator's own wording ("Input
should be…", "Value error, 'jsn' is not one of…") and never a usage box.

`--help` shows each option's value name (`N`, `SECONDS`, `FILE`…) rather than the type
names and ranges typer derives from the annotations (`<int range> [x>=1]`, `<bool>`,
`<list[str]>`): `RecursiveGroup`, the root command's class, gives every command and
parameter below it the small subclasses here, which only change what is displayed.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import Any, cast, get_args

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

try:
    from typer import _click as click
except ImportError:  # a typer that uses the real click package
    import click  # type: ignore[no-redef,import-not-found,unused-ignore]

from ...core import wording
from ...core.choices import spelled_out
from ...core.errors import CliError, FlagValueError
from ...launch.errors import EXIT_INTERRUPTED, EXIT_USAGE, fail

# `recursive` alone shows its help (exit 2); a click without this error has no such case.
_NO_ARGS_IS_HELP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


class _HumanOption(TyperOption):
    """An option shown by its value name: `--max-steps N`, and nothing for a flag."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None
        return self.metavar or (self.name or "value").upper()

    def _get_number_range_help_str(self) -> str | None:
        return None  # the help text says the range in words; the error message too


class _HumanArgument(TyperArgument):
    """An argument shown by its name alone; a metavar like `[SESSION] [PROMPT]...` is the usage."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _get_number_range_help_str(self) -> str | None:
        return None

    def make_metavar(self, ctx: Any, *, usage: bool = False) -> str:
        """typer <0.29 asks this for the usage line's piece (`{session}` of its own)."""
        return self._usage_display_name() if usage else super().make_metavar(ctx)

    def _usage_display_name(self) -> str:
        name = self.metavar or (self.name or "arg").upper()
        if "[" in name or "..." in name:
            return name
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")


class _Unnamed:
    """A parameter's own type, converting as it does, of which help shows nothing: a typer
    before 0.29 prints `<str>` beside an argument from its type's metavar and `[x>=1]` beside
    a number's range from its class (0.29 asks `display_type_rich`, above)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def get_metavar(self, *args: Any, **kwargs: Any) -> str:
        return ""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # everything else is the type's own
        return getattr(self.inner, name)


def _human_params(params: list[Any]) -> list[Any]:
    for param in params:
        humanize_param(param)
    return params


# (Subclasses that add no attributes and no slots: an instance's class can be swapped to them.)
class _HumanCommand(TyperCommand):
    """A command whose parameters (the help option too, made on demand) are shown humanly."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _human_params(super().get_params(ctx))


class _HumanGroup(TyperGroup):
    """A group whose parameters are shown humanly, and whose unknown command gets our hint."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _human_params(super().get_params(ctx))

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return self._click_resolve_command(ctx, args)
        except click.exceptions.UsageError as exc:
            if args:
                exc.message = f"no such command {args[0]!r}"
                if near := closest_command(args[0], list(self.commands), ctx.parent is None):
                    exc.message += f" (did you mean {near}?)"
            raise


# Words a user may type for a root option: `recursive version` means `recursive --version`.
_OPTION_WORDS = {"version": "--version", "help": "--help"}


def closest_command(word: str, names: list[str], root: bool = True) -> str | None:
    """The command name (or, at the root, the option) that `word` is most likely a typo of."""
    if root and word.lower().lstrip("-") in _OPTION_WORDS:
        return _OPTION_WORDS[word.lower().lstrip("-")]
    near = wording.closest(word, names)
    return near[0] if near else None


def humanize_param(param: Any) -> None:
    """Give a typer parameter its displaying subclass (it adds no state; only display changes)."""
    if type(param) is TyperOption:
        param.__class__ = _HumanOption
        kind = getattr(param, "type", None)
        if not hasattr(param, "type_descriptor") and hasattr(kind, "_describe_range"):  # typer <0.29
            param.type = cast(Any, _Unnamed(kind))  # (help says the range in words)
    elif type(param) is TyperArgument:
        param.__class__ = _HumanArgument
        if not hasattr(param, "type_descriptor"):  # typer <0.29
            param.type = cast(Any, _Unnamed(param.type))


def humanize(command: Any) -> None:
    """`command` and everything below it get the displaying subclasses."""
    if type(command) is TyperCommand:
        command.__class__ = _HumanCommand
    elif type(command) is TyperGroup:
        command.__class__ = _HumanGroup
    for param in getattr(command, "params", ()):
        humanize_param(param)
    for sub in getattr(command, "commands", {}).values():
        humanize(sub)


class RecursiveGroup(_HumanGroup):
    """The root command: human help below it, and one `error:` line for a bad command line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for sub in self.commands.values():
            humanize(sub)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        words = optional_values(list(sys.argv[1:] if args is None else args))
        try:
            code = super().main(words, prog_name, complete_var, standalone_mode=False,
                                windows_expand_args=windows_expand_args, **extra)
        except _NO_ARGS_IS_HELP as exc:  # `recursive` alone: its help
            _show_rich(exc)
            code = exc.exit_code
        except click.exceptions.UsageError as exc:
            sys.stderr.write(f"error: {usage_message(exc, words)}\n{usage_line(exc)}")
            sys.stderr.flush()
            code = EXIT_USAGE
        except click.exceptions.ClickException as exc:
            exc.show()
            code = exc.exit_code
        except CliError as exc:  # a command that cannot go on, raised from anywhere below (launch/)
            code = fail(str(exc), exc.code)
        except typer.Abort as exc:  # click's for Ctrl-C (130, as everywhere) and for an ended input
            sys.stderr.write("aborted\n")
            code = EXIT_INTERRUPTED if isinstance(exc.__context__, KeyboardInterrupt) else 1
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


def optional_values(words: list[str]) -> list[str]:
    """`words` with "" after each option whose value may be left out (`-w`, launch/options.py)
    when it has none: at the end, before another option, or before a word that is no name (the
    prompt, `-w "fix the bug"`). `-w NAME` and `--worktree=NAME` keep their value."""
    from ...launch.options import OPTIONAL_VALUE_FLAGS

    out: list[str] = []
    for index, word in enumerate(words):
        out.append(word)
        if word == "--":
            return out + words[index + 1:]
        if word in OPTIONAL_VALUE_FLAGS:
            following = words[index + 1] if index + 1 < len(words) else None
            if following is None or following.startswith("-") or not _NAME_WORD.match(following):
                out.append("")
    return out


_NAME_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def _show_rich(exc: Any) -> None:
    try:
        from typer import rich_utils

        rich_utils.rich_format_error(exc)
    except (ImportError, AttributeError):
        exc.show()


def usage_message(exc: Any, words: list[str]) -> str:
    """The one line for a usage error: the flag and what it accepts, or click's own sentence."""
    param = getattr(exc, "param", None)
    if isinstance(exc, click.exceptions.MissingParameter) and param is not None:
        text = f"missing {_kind(param)} {_param_name(param).removesuffix('...')}"
    elif isinstance(exc, click.exceptions.BadParameter) and param is not None:
        return bad_value_message(exc, param, words)
    elif isinstance(exc, click.exceptions.NoSuchOption):
        text = f"no such option: {exc.option_name}"
        if near := closest_options(exc.option_name, getattr(exc, "ctx", None)):
            text += f" (did you mean {' or '.join(near)}?)"
    else:
        text = exc.format_message().strip().rstrip(".")
        text = text[:1].lower() + text[1:]
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", "") if ctx is not None else ""
    return f"{text} (see `{path} --help`)" if path else text


def usage_line(exc: Any) -> str:
    """`usage: recursive sessions show SESSION` and a newline for a missing argument, else ""."""
    ctx = getattr(exc, "ctx", None)
    if not isinstance(exc, click.exceptions.MissingParameter) or ctx is None:
        return ""
    return f"{ctx.get_usage().strip()}\n".replace("Usage:", "usage:", 1)


def _kind(param: Any) -> str:
    return "argument" if getattr(param, "param_type_name", "") == "argument" else "option"


def closest_options(given: str, ctx: Any) -> list[str]:
    """The command's own long options closest to `given` (a typo of one): best first, at most two."""
    command = getattr(ctx, "command", None)
    if command is None:
        return []
    names = {opt for param in command.get_params(ctx) for opt in getattr(param, "opts", ())
             if opt.startswith("--")}
    return wording.closest(given, sorted(names))


def bad_value_message(exc: Any, param: Any, words: list[str]) -> str:
    """`--flag: expected … (got 'value')`."""
    name = _param_name(param)
    given = _given_value(param, words)
    source = ""
    if given is None and getattr(param, "envvar", None):
        env = param.envvar if isinstance(param.envvar, str) else param.envvar[0]
        if os.environ.get(env) is not None:
            given, source = os.environ[env], f" (env {env})"
    accepted = exc.message if isinstance(exc.__cause__, FlagValueError) else accepted_values(param, exc.message)
    repeated = getattr(param, "multiple", False)  # the last value given may not be the bad one
    shown = f" (got {given!r})" if given is not None and not repeated else ""
    return f"{name}{source}: {accepted}{shown}"


def _param_name(param: Any) -> str:
    if getattr(param, "param_type_name", "") == "argument":
        return str(param.metavar or (param.name or "argument").upper())
    longs = [opt for opt in param.opts if opt.startswith("--")]
    return longs[0] if longs else param.opts[0]


def _given_value(param: Any, words: list[str]) -> str | None:
    """The value the command line gave `param`, the last one given (best effort)."""
    if getattr(param, "param_type_name", "") != "option":
        return None
    found: str | None = None
    for index, word in enumerate(words):
        if word == "--":
            break
        for opt in param.opts:
            if word == opt and index + 1 < len(words):
                found = words[index + 1]
            elif opt.startswith("--") and word.startswith(opt + "="):
                found = word[len(opt) + 1:]
            elif not opt.startswith("--") and word.startswith(opt) and len(word) > len(opt) \
                    and not word.startswith("--"):
                found = word[len(opt):]
    return found


def accepted_values(param: Any, message: str) -> str:
    """What `param` accepts, in words, from its type: "expected text, json or stream-json"."""
    descriptor = getattr(param, "type_descriptor", None)
    choices = getattr(descriptor, "choices", None) or getattr(getattr(param, "type", None), "choices", None)
    if choices:
        values = tuple(str(getattr(choice, "value", choice)) for choice in choices)
        return "expected " + spelled_out(values)
    annotation = getattr(descriptor, "annotation", None)
    if getattr(descriptor, "is_list", False):
        annotation = (get_args(annotation) or (str,))[0]
    if annotation is bool:
        return "expected " + wording.BOOLEAN
    if annotation in (int, float):
        return "expected " + wording.number(annotation is int, getattr(param, "min", None),
                                            getattr(param, "max", None))
    if descriptor is None:  # a typer before 0.29: click's own types say what they take
        return _click_type_accepts(getattr(param, "type", None)) or wording.plain(message)
    return wording.plain(message)


def _click_type_accepts(kind: Any) -> str | None:
    """What a click number or boolean type accepts, in words; None for any other."""
    name = getattr(kind, "name", "")
    if name == "boolean":
        return "expected " + wording.BOOLEAN
    if name not in ("int", "int range", "integer", "integer range", "float", "float range"):
        return None
    low, high = getattr(kind, "min", None), getattr(kind, "max", None)
    if getattr(kind, "min_open", False):
        return "expected " + wording.number(name.startswith("int"), None, high, above=low)
    return "expected " + wording.number(name.startswith("int"), low, high)

