"""Generate the man page and the shell completions from the CLI definition, so they cannot drift.

    python -m recursive_cli.surfaces.cli.docgen           # rewrite man/ and completions/
    python -m recursive_cli.surfaces.cli.docgen --check   # write nothing; exit 1 if a file is stale

The click command tree that typer builds from `app` is walked once into plain `CommandDoc`
records (names, help, options, arguments, examples); `docgen_man` and `docgen_completions`
render those records, so a command added to the app shows up everywhere on the next run.
"""

from __future__ import annotations

import argparse
import enum
import inspect
import re
import sys
from pathlib import Path
from typing import (
    Any,
    Protocol,
    get_args,
    get_origin,
    runtime_checkable,
)

try:
    from typer import _click as click
except ImportError:  # a typer that uses the real click package
    import click  # type: ignore[no-redef,import-not-found,unused-ignore]

from ... import __version__
from . import docgen_completions, docgen_man
from .docgen_model import ArgumentDoc, CommandDoc, OptionDoc, ValueKind

REGENERATE_COMMAND = docgen_man.REGENERATE_COMMAND

SESSION_ARGUMENTS = frozenset({"session", "session_id", "sessions", "session_ids"})
# options.py declares plain `Path` (files and dirs both allowed); these names mean a folder.
_DIR_NAMES = re.compile(r"(^|_)(dir|dirs|directory|workspace)$")
_RICH_TAG = re.compile(r"(?<!\\)\[/?[a-z#][\w #.=-]*\]")


def load_cli() -> click.Command:
    """The click command tree of the `recursive` typer app."""
    import typer

    from .app import app

    return typer.main.get_command(app)


def collect(command: click.Command, prog: str | None = None) -> CommandDoc:
    """Walk `command` and everything below it into `CommandDoc` records."""
    name = prog or command.name or "recursive"
    ctx = click.Context(command, info_name=name, **command.context_settings)
    return _collect(command, ctx, (name,))


def _collect(command: click.Command, ctx: click.Context, path: tuple[str, ...]) -> CommandDoc:
    subcommands = tuple(
        _collect(sub, click.Context(sub, parent=ctx, info_name=name, **sub.context_settings),
                 (*path, name))
        for name, sub in _visible_subcommands(command, ctx))
    help_option = command.get_help_option(ctx)
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
    help_text = clean_text(command.help or "")
    return CommandDoc(
        path=path,
        summary=clean_text(command.short_help or "") or _first_paragraph(help_text),
        help=help_text,
        options=tuple(_option(p, p is help_option) for p in params if p.param_type_name == "option"),
        arguments=tuple(_argument(p) for p in params if p.param_type_name == "argument"),
        examples=examples_from_epilog(command.epilog or ""),
        subcommands=subcommands,
    )


@runtime_checkable
class _Group(Protocol):
    def list_commands(self, ctx: click.Context) -> list[str]: ...
    def get_command(self, ctx: click.Context, name: str) -> click.Command | None: ...


def _visible_subcommands(command: click.Command, ctx: click.Context) -> list[tuple[str, Any]]:
    if not isinstance(command, _Group):
        return []
    found = [(name, command.get_command(ctx, name)) for name in command.list_commands(ctx)]
    return [(name, sub) for name, sub in found if sub is not None and not sub.hidden]


def _option(param: click.Parameter, is_help: bool) -> OptionDoc:
    takes_value = not (getattr(param, "is_flag", False) or getattr(param, "count", False))
    names = sorted([*param.opts, *param.secondary_opts], key=lambda n: n.startswith("--"))
    kind = _value_kind(param) if takes_value else "none"
    return OptionDoc(
        names=tuple(names), takes_value=takes_value, kind=kind, choices=_choices(param),
        metavar=param.metavar or _metavar(names, param.name or "value", kind),
        help=clean_text(getattr(param, "help", None) or ""),
        panel=getattr(param, "rich_help_panel", None),
        repeatable=bool(param.multiple or getattr(param, "count", False)), is_help=is_help)


def _argument(param: click.Parameter) -> ArgumentDoc:
    """An argument; a metavar like "[SESSION] [PROMPT]..." tells its first and later values."""
    name = param.name or "arg"
    variadic = param.nargs < 0
    base = _session_or(name, _value_kind(param))
    words = re.findall(r"[A-Za-z][\w-]*", param.metavar or "") or [name]
    first, last = (_session_or(word, base) for word in (words[0], words[-1]))
    return ArgumentDoc(
        name=name, usage=_argument_usage(param.metavar, name, param.required, variadic),
        kind=first, rest_kind=last if variadic else first, choices=_choices(param),
        help=clean_text(getattr(param, "help", None) or ""), required=param.required,
        variadic=variadic)


def _session_or(word: str, kind: ValueKind) -> ValueKind:
    return "session" if word.lower().replace("-", "_") in SESSION_ARGUMENTS else kind


def _argument_usage(metavar: str | None, name: str, required: bool, variadic: bool) -> str:
    """The argument as in a usage line: SESSION, [PROMPT]... (a metavar with [ or ... is one)."""
    if metavar and ("[" in metavar or "..." in metavar):
        return metavar
    text = (metavar or name.upper()) + ("..." if variadic else "")
    return text if required else f"[{text}]"


def _metavar(names: list[str], name: str, kind: ValueKind) -> str:
    """DIR or FILE for paths, else the long option name: --output-format OUTPUT_FORMAT."""
    longs = [n.lstrip("-") for n in names if n.startswith("--")]
    default = (longs[0] if longs else name).replace("-", "_").upper()
    return {"dir": "DIR", "file": "FILE"}.get(kind, default)


def _value_kind(param: click.Parameter) -> ValueKind:
    if _choices(param):
        return "choice"
    path_type = _path_type(param)
    if path_type is None:
        return "text"
    if path_type == "dir" or (path_type == "path" and _DIR_NAMES.search(param.name or "")):
        return "dir"
    return "file"


def _path_type(param: click.Parameter) -> str | None:
    """"file", "dir" or "path" (either) for a path or file parameter, else None."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None:  # click's types (typer <0.29); usage.py may wrap one for its help
        ptype: Any = getattr(param, "type", None)
        ptype = getattr(ptype, "inner", ptype)
        if type(ptype).__name__ not in ("Path", "TyperPath"):
            return "file" if type(ptype).__name__ == "File" else None
        return _either(ptype.file_okay, ptype.dir_okay)
    if descriptor.is_file:
        return "file"
    if not _is_path_annotation(descriptor.annotation):
        return None
    info = descriptor.parameter_info
    return _either(info.file_okay, info.dir_okay)


def _either(file_okay: bool, dir_okay: bool) -> str:
    if file_okay and not dir_okay:
        return "file"
    return "dir" if dir_okay and not file_okay else "path"


def _is_path_annotation(annotation: Any) -> bool:
    if get_origin(annotation) in (list, tuple):
        return any(_is_path_annotation(arg) for arg in get_args(annotation))
    return isinstance(annotation, type) and issubclass(annotation, Path)


def _choices(param: click.Parameter) -> tuple[str, ...]:
    descriptor = getattr(param, "type_descriptor", None)
    values = descriptor.choices if descriptor is not None else getattr(
        getattr(param, "type", None), "choices", None)
    return tuple(str(v.value if isinstance(v, enum.Enum) else v) for v in values or ())


def clean_text(text: str) -> str:
    """Help text without rich markup tags, click's no-rewrap marks or common indentation."""
    text = inspect.cleandoc(strip_markup(text)).replace("\b", "")
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def strip_markup(text: str) -> str:
    """`text` without rich markup tags such as [b]...[/b]."""
    return _RICH_TAG.sub("", text).replace("\\[", "[")


def _first_paragraph(text: str) -> str:
    return " ".join(text.split("\n\n", 1)[0].split())


def examples_from_epilog(epilog: str) -> tuple[str, ...]:
    """The indented lines of an epilog: the convention for example command lines."""
    lines = strip_markup(epilog).splitlines()
    return tuple(line.strip() for line in lines if line[:1].isspace() and line.strip())


def render_outputs(root: CommandDoc, version: str) -> dict[str, str]:
    """The generated files, keyed by their path relative to the repository root."""
    prog = root.path[0]
    return {
        f"man/{prog}.1": docgen_man.render_man(root, version),
        f"completions/{prog}.bash": docgen_completions.render_bash(root),
        f"completions/_{prog}": docgen_completions.render_zsh(root),
        f"completions/{prog}.fish": docgen_completions.render_fish(root),
    }


def repository_root() -> Path:
    """The folder that holds the `recursive_cli` package (and man/, completions/)."""
    return Path(__file__).resolve().parents[3]


def stale_outputs(outputs: dict[str, str], root: Path) -> list[str]:
    """The relative paths whose file under `root` is missing or differs from `outputs`."""
    return [rel for rel, text in outputs.items() if _read(root / rel) != text]


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def main(argv: list[str] | None = None) -> int:
    """Regenerate the man page and completions, or with --check report the stale ones."""
    parser = argparse.ArgumentParser(
        prog=REGENERATE_COMMAND, description="Regenerate man/ and completions/ from the CLI.")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 and list the files that are out of date")
    args = parser.parse_args(argv)
    root = repository_root()
    outputs = render_outputs(collect(load_cli()), __version__)
    stale = stale_outputs(outputs, root)
    if args.check:
        for rel in stale:
            print(f"out of date: {rel}", file=sys.stderr)
        if stale:
            print(f"run `{REGENERATE_COMMAND}` to regenerate", file=sys.stderr)
        return 1 if stale else 0
    for rel in stale:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(outputs[rel].encode("utf-8"))
        print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
