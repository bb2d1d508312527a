"""Shell completions for bash, zsh and fish, rendered from the CLI tree.

Each script walks the words typed so far to find the subcommand path (skipping option
values), then offers subcommands, options, choice values, files or directories. SESSION
arguments complete from the folder names under `${RECURSIVE_HOME:-$HOME/.recursive}/sessions`,
read by the shell itself: no Python runs at completion time, so completion is instant.
Templates below use @FN@ for the function prefix (`_recursive`) and @PROG@ for the program.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .docgen_man import REGENERATE_COMMAND

if TYPE_CHECKING:
    from .docgen_model import CommandDoc, OptionDoc, Slot

_SAFE_WORD = re.compile(r"^[\w.-]+$")


def _fill(template: str, prog: str) -> list[str]:
    return template.strip("\n").replace("@FN@", _ident(prog)).replace("@PROG@", prog).split("\n")


def _banner(shell: str, prog: str, install: str) -> list[str]:
    return [f"# {shell} completion for {prog}, generated from the CLI definition by",
            f"# `{REGENERATE_COMMAND}`: do not edit.", f"# Install: {install}."]


def _ident(prog: str, key: str = "") -> str:
    """A shell function name for the command `key` of `prog`, e.g. _recursive_sessions_show."""
    return re.sub(r"\W", "_", f"_{prog}" + (f" {key}" if key else ""))


def _word(text: str) -> str:
    """A command path as a shell word: bare when safe, else double-quoted ("" for the root)."""
    return text if _SAFE_WORD.match(text) else f'"{text}"'


def _squote(text: str) -> str:
    """POSIX single-quoted `text` (bash and zsh)."""
    return "'" + text.replace("'", "'\\''") + "'"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _grouped(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Values grouped by key, in first-seen order: one shell case arm per distinct key."""
    groups: dict[str, list[str]] = {}
    for key, value in pairs:
        groups.setdefault(key, []).append(value)
    return groups


def _value_names(command: CommandDoc) -> list[str]:
    return [n for o in command.options if o.takes_value for n in o.names]


# ---------------------------------------------------------------------------------- bash

_BASH_TEMPLATE = r"""
_@FN@_words() {
    local IFS=$' \t\n'
    COMPREPLY=($(compgen -W "$1" -- "$cur"))
}

_@FN@_files() {
    local IFS=$'\n'
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -f -- "$cur"))
}

_@FN@_dirs() {
    local IFS=$'\n'
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -d -- "$cur"))
}

_@FN@_session_ids() {
    local dir ids=()
    for dir in "${RECURSIVE_HOME:-$HOME/.recursive}"/sessions/*/; do
        [[ -d $dir ]] || continue
        dir=${dir%/}
        ids+=("${dir##*/}")
    done
    _@FN@_words "${ids[*]}"
}

@FN@() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local path="" nargs=0 skip=0 word i REPLY
    for (( i = 1; i < COMP_CWORD; i++ )); do
        word=${COMP_WORDS[i]}
        if (( skip )); then
            [[ $word == "=" ]] || skip=0
            continue
        fi
        if [[ $word == -* ]]; then
            _@FN@_value_options "$path"
            [[ " $REPLY " == *" $word "* ]] && skip=1
        elif (( nargs == 0 )) && _@FN@_is_command "${path:+$path }$word"; then
            path=${path:+$path }$word
        else
            (( nargs++ ))
        fi
    done
    COMPREPLY=()
    if [[ $prev == "=" && COMP_CWORD -gt 1 ]]; then
        prev=${COMP_WORDS[COMP_CWORD-2]}
    fi
    _@FN@_value_options "$path"
    if [[ $prev == -* && " $REPLY " == *" $prev "* ]]; then
        _@FN@_complete_value "$path" "$prev"
    elif [[ $cur == -* ]]; then
        _@FN@_options "$path"
        _@FN@_words "$REPLY"
    else
        _@FN@_complete_argument "$path" "$nargs"
    fi
}

complete -F @FN@ @PROG@
"""

_BASH_ACTIONS = {"choice": "_words {words}", "file": "_files", "dir": "_dirs",
                 "session": "_session_ids"}


def render_bash(root: CommandDoc) -> str:
    """The bash completion script (`complete -F`)."""
    prog, fn = root.path[0], _ident(root.path[0])
    install = f"source it, or copy it to ~/.local/share/bash-completion/completions/{prog}"
    commands = _grouped(("return 0", _word(c.key)) for c in root.walk() if c is not root)
    tables = [_bash_case(f"_{fn}_is_command", "Is $1 a command path?", "$1", commands, "return 1"),
              _bash_reply(root, f"_{fn}_options", "REPLY = the options of command $1",
                          lambda c: [n for o in c.options for n in o.names]),
              _bash_reply(root, f"_{fn}_value_options", "REPLY = the options of $1 that take a value",
                          _value_names),
              _bash_complete_value(root, fn), _bash_complete_argument(root, fn)]
    lines = [*_banner("bash", prog, install), *(x for t in tables for x in ("", *t))]
    return "\n".join([*lines, "", *_fill(_BASH_TEMPLATE, prog)]) + "\n"


def _bash_case(name: str, doc: str, subject: str, arms: dict[str, list[str]],
               default: str = "") -> list[str]:
    """A function that is one `case`: each action with its patterns joined by |."""
    lines = [f"# {doc}", f"{name}() {{", f'    case "{subject}" in']
    lines += [f"        {'|'.join(patterns)}) {action} ;;" for action, patterns in arms.items()]
    lines += [f"        *) {default} ;;"] if default else []
    return [*lines, "    esac", "}"]


def _bash_reply(root: CommandDoc, name: str, doc: str,
                words_of: Callable[[CommandDoc], list[str]]) -> list[str]:
    arms = _grouped((f'REPLY="{" ".join(words)}"', _word(c.key)) for c in root.walk()
                    if (words := words_of(c)))
    return _bash_case(name, doc, "$1", arms, 'REPLY=""')


def _bash_action(fn: str, kind: str, choices: tuple[str, ...]) -> str | None:
    action = _BASH_ACTIONS.get(kind)
    return "_" + fn + action.format(words=_squote(" ".join(choices))) if action else None


def _bash_complete_value(root: CommandDoc, fn: str) -> list[str]:
    arms = _grouped((action, f"{_word(c.key)}:{name}")
                    for c in root.walk() for o in c.options
                    if (action := _bash_action(fn, o.kind, o.choices)) for name in o.names)
    return _bash_case(f"_{fn}_complete_value", "Complete the value of option $2 of command $1.",
                      "$1:$2", arms)


def _bash_complete_argument(root: CommandDoc, fn: str) -> list[str]:
    arms: dict[str, list[str]] = {}
    for command in root.walk():
        if command.subcommands:
            words = _squote(" ".join(s.path[-1] for s in command.subcommands))
            arms.setdefault(f"[[ $2 == 0 ]] && _{fn}_words {words}", []).append(_word(command.key))
        elif inner := " ".join(f"{'*' if s.last is None else s.first}) {action} ;;"
                               for s in command.slots()
                               if (action := _bash_action(fn, s.kind, s.choices))):
            arms.setdefault(f'case "$2" in {inner} esac', []).append(_word(command.key))
    return _bash_case(f"_{fn}_complete_argument", "Complete positional argument $2 of command $1.",
                      "$1", arms)


# ----------------------------------------------------------------------------------- zsh

_ZSH_HELPERS = r"""
_@FN@_session_ids() {
  local -a ids
  ids=(${RECURSIVE_HOME:-$HOME/.recursive}/sessions/*(N/:t))
  _wanted sessions expl session compadd -a ids
}
"""

_ZSH_FOOTER = r"""
if [[ $funcstack[1] == @FN@ ]]; then
  @FN@ "$@"
else
  compdef @FN@ @PROG@
fi
"""

_ZSH_ACTIONS = {"file": "_files", "dir": "_files -/", "session": "_{fn}_session_ids"}


def render_zsh(root: CommandDoc) -> str:
    """The zsh completion function (`#compdef`, `_arguments`)."""
    prog, fn = root.path[0], _ident(root.path[0])
    install = f"copy it as _{prog} into a folder of $fpath, then run compinit"
    lines = [f"#compdef {prog}", *_banner("zsh", prog, install), "", *_fill(_ZSH_HELPERS, prog)]
    for command in root.walk():
        lines += ["", *(_zsh_group(command, fn) if command.subcommands
                        else _zsh_leaf(command, fn))]
    return "\n".join([*lines, "", *_fill(_ZSH_FOOTER, prog)]) + "\n"


def _zsh_escape(text: str) -> str:
    return re.sub(r"([\\\[\]:])", r"\\\1", _one_line(text))


def _zsh_action(kind: str, choices: tuple[str, ...], fn: str) -> str:
    if kind == "choice":
        return "(" + " ".join(re.sub(r"([\\\s()])", r"\\\1", c) for c in choices) + ")"
    return _ZSH_ACTIONS.get(kind, " ").format(fn=fn)


def _zsh_option(option: OptionDoc, fn: str) -> str:
    names = option.names
    exclusive = f"({' '.join(names)})" if len(names) > 1 and not option.repeatable else ""
    prefix = ("*" if option.repeatable else "") + exclusive
    spec = f"[{_zsh_escape(option.help)}]" if option.help else ""
    if option.takes_value:
        message = _zsh_escape(option.metavar.lower().replace("_", " "))
        spec += f":{message}:{_zsh_action(option.kind, option.choices, fn)}"
    flags = names[0] if len(names) == 1 else "{" + ",".join(names) + "}"
    return (_squote(prefix) if prefix else "") + flags + (_squote(spec) if spec else "")


def _zsh_argument(slot: Slot, fn: str) -> str:
    lead = "*:" if slot.last is None else (":" if slot.required else "::")
    action = _zsh_action(slot.kind, slot.choices, fn)
    return _squote(f"{lead}{_zsh_escape(slot.label)}:{action}")


def _zsh_arguments(flags: str, specs: list[str], tail: str = "") -> list[str]:
    lines = [f"  _arguments {flags}", *(f"    {spec}" for spec in specs)]
    return [line + " \\" for line in lines[:-1]] + [lines[-1] + tail]


def _zsh_leaf(command: CommandDoc, fn: str) -> list[str]:
    specs = [*(_zsh_option(o, fn) for o in command.options),
             *(_zsh_argument(s, fn) for s in command.slots())]
    return [f"{_ident(command.path[0], command.key)}() {{", *_zsh_arguments("-s -S", specs), "}"]


def _zsh_group(command: CommandDoc, fn: str) -> list[str]:
    prog = command.path[0]
    specs = [*(_zsh_option(o, fn) for o in command.options), "': :->command'",
             "'*:: :->argument'"]
    entries = [f"        {_squote(s.path[-1] + ':' + _one_line(s.summary))}"
               for s in command.subcommands]
    arms = [f"        {_word(s.path[-1])}) {_ident(prog, s.key)} && ret=0 ;;"
            for s in command.subcommands]
    return [f"{_ident(prog, command.key)}() {{",
            "  local curcontext=$curcontext state state_descr line ret=1",
            "  typeset -A opt_args",
            *_zsh_arguments("-C", specs, " && ret=0"),
            "  case $state in",
            "    command)",
            "      local -a commands",
            "      commands=(", *entries, "      )",
            f"      _describe -t commands {_squote(command.name + ' command')} commands && ret=0",
            "      ;;",
            "    argument)",
            f"      curcontext=${{curcontext%:*:*}}:{'-'.join(command.path)}-$words[1]:",
            "      case $words[1] in", *arms, "      esac",
            "      ;;",
            "  esac",
            "  return ret",
            "}"]


# ---------------------------------------------------------------------------------- fish

_FISH_HELPERS = r"""
function _@FN@_session_ids --description 'Print the ids of the saved sessions'
    set -l home $RECURSIVE_HOME
    test -n "$home"; or set home $HOME/.recursive
    for dir in $home/sessions/*/
        string replace -r '.*/([^/]+)/$' '$1' -- $dir
    end
end

function _@FN@_state --description 'Print the command path typed so far, then its count of arguments'
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l path ''
    set -l nargs 0
    set -l skip 0
    for token in $tokens
        if test $skip = 1
            set skip 0
        else if string match -q -- '-*' $token
            contains -- $token (_@FN@_value_options $path); and set skip 1
        else if test $nargs = 0; and _@FN@_is_command (string trim -- "$path $token")
            set path (string trim -- "$path $token")
        else
            set nargs (math $nargs + 1)
        end
    end
    printf '%s\n' $path $nargs
end

function _@FN@_at --description 'True when the command path typed so far is one of the arguments'
    set -l state (_@FN@_state)
    contains -- "$state[1]" $argv
end

function _@FN@_arg --description 'True when completing argument FIRST[..LAST] (from 0) of PATH'
    set -l state (_@FN@_state)
    test "$state[1]" = "$argv[1]"; and test $state[2] -ge $argv[2]
    and begin
        test (count $argv) -lt 3; or test $state[2] -le $argv[3]
    end
end
"""

_FISH_ACTIONS = {"text": "-x", "choice": "-x -a {words}", "file": "-r -F",
                 "dir": "-x -a '(__fish_complete_directories (commandline -ct))'",
                 "session": "-x -a '(_{fn}_session_ids)'"}


def render_fish(root: CommandDoc) -> str:
    """The fish completion script (`complete -c`)."""
    prog, fn = root.path[0], _ident(root.path[0])
    install = f"copy it to ~/.config/fish/completions/{prog}.fish"
    lines = [*_banner("fish", prog, install), "", *_fill(_FISH_HELPERS, prog), "",
             *_fish_switch(f"_{fn}_is_command", "True when the argument is a command path",
                           _grouped(("return 0", _word(c.key)) for c in root.walk()
                                    if c is not root), "return 1"),
             "", *_fish_switch(f"_{fn}_value_options", "Print the options of PATH that take a value",
                               _grouped((f"printf '%s\\n' -- {' '.join(_value_names(c))}",
                                         _word(c.key)) for c in root.walk()
                                        if _value_names(c))),
             "", f"complete -c {prog} -f", *_fish_completions(root, fn)]
    return "\n".join(lines) + "\n"


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_switch(name: str, doc: str, arms: dict[str, list[str]], default: str = "") -> list[str]:
    lines = [f"function {name} --description {_fish_quote(doc)}", "    switch $argv[1]"]
    for action, patterns in arms.items():
        lines += [f"        case {' '.join(patterns)}", f"            {action}"]
    lines += ["    end", *([f"    {default}"] if default else []), "end"]
    return lines


def _fish_completions(root: CommandDoc, fn: str) -> list[str]:
    prog = root.path[0]
    lines: list[str] = []
    options = _grouped((_fish_option(o, fn), _word(c.key)) for c in root.walk()
                       for o in c.options)
    for command in root.walk():
        lines += [_fish_line(prog, f"_{fn}_arg {_word(command.key)} 0 0",
                             f"-a {_fish_quote(s.path[-1])} -d {_fish_quote(_one_line(s.summary))}")
                  for s in command.subcommands]
        lines += [_fish_line(prog, f"_{fn}_arg {_word(command.key)} {s.first}"
                             + ("" if s.last is None else f" {s.last}"), spec)
                  for s in command.slots() if (spec := _fish_value(s.kind, s.choices, fn, "")) != "-x"]
    lines += [_fish_line(prog, f"_{fn}_at {' '.join(paths)}", spec)
              for spec, paths in options.items()]
    return lines


def _fish_line(prog: str, condition: str, spec: str) -> str:
    return f"complete -c {prog} -n {_fish_quote(condition)} {spec}"


def _fish_option(option: OptionDoc, fn: str) -> str:
    flags = [f"-s {n[1:]}" if len(n) == 2 else (f"-l {n[2:]}" if n.startswith("--")
                                                 else f"-o {n[1:]}") for n in option.names]
    spec = " ".join(flags)
    if option.takes_value:
        return f"{spec} {_fish_value(option.kind, option.choices, fn, option.help)}"
    return f"{spec} -d {_fish_quote(_one_line(option.help))}" if option.help else spec


def _fish_value(kind: str, choices: tuple[str, ...], fn: str, help_text: str) -> str:
    words = _fish_quote(" ".join(choices))
    spec = _FISH_ACTIONS[kind].format(words=words, fn=fn)
    return f"{spec} -d {_fish_quote(_one_line(help_text))}" if help_text else spec
