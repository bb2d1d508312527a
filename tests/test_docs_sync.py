"""The man page and shell completions are generated from the CLI and must match it exactly.

A change to the CLI without `python -m recursive_cli.surfaces.cli.docgen` fails here. The scripts are
also checked by the shells themselves: syntax, and real completions in a bash process.
"""

from __future__ import annotations

import enum
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer import _click

from recursive_cli import __version__
from recursive_cli.surfaces.cli import docgen
from recursive_cli.surfaces.cli.app import app
from recursive_cli.surfaces.cli.docgen_completions import render_bash, render_fish
from recursive_cli.surfaces.cli.docgen_man import render_man

ROOT = docgen.repository_root()
OUTPUTS = docgen.render_outputs(docgen.collect(docgen.load_cli()), __version__)
MAN, BASH, ZSH, FISH = (ROOT / rel for rel in OUTPUTS)
SESSION_NAMES = {"session", "session_id", "sessions", "session_ids"}


def cli_tree(command: _click.Command) -> tuple[list[tuple[str, ...]], set[str], list[tuple[str, ...]]]:
    """Read straight from click (not through docgen): command paths, option names, and the
    paths of commands whose first argument is a session (by name or by a SESSION metavar)."""
    paths: list[tuple[str, ...]] = []
    options: set[str] = set()
    session_paths: list[tuple[str, ...]] = []

    def visit(cmd: _click.Command, ctx: _click.Context, path: tuple[str, ...]) -> None:
        params = [p for p in cmd.get_params(ctx) if not getattr(p, "hidden", False)]
        options.update(n for p in params if p.param_type_name == "option"
                       for n in (*p.opts, *p.secondary_opts))
        arguments = [p for p in params if p.param_type_name == "argument"]
        if arguments and (arguments[0].name in SESSION_NAMES
                          or (arguments[0].metavar or "").lstrip("[").startswith("SESSION")):
            session_paths.append(path)
        for name, sub in getattr(cmd, "commands", {}).items():
            if not sub.hidden:
                paths.append((*path, name))
                visit(sub, _click.Context(sub, parent=ctx, info_name=name), (*path, name))

    visit(command, _click.Context(command, info_name="recursive", **command.context_settings), ())
    return paths, options, session_paths


COMMANDS, OPTIONS, SESSION_COMMANDS = cli_tree(typer.main.get_command(app))


def bash_complete(script: Path, words: list[str], cwd: Path | None = None) -> list[str]:
    """COMPREPLY of the bash completion in `script` for the command line `words` (last = cursor)."""
    program = "\n".join([
        f"source {shlex.quote(str(script))}",
        f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})",
        f"COMP_CWORD={len(words) - 1}",
        "_recursive",
        'printf "%s\\n" "${COMPREPLY[@]}"',
    ])
    proc = subprocess.run(["bash", "-c", program], capture_output=True, text=True, cwd=cwd,
                          check=True)
    return [line for line in proc.stdout.splitlines() if line]


def has_word(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def man_text(source: str) -> str:
    """The man page source with font, hyphenation and dash escapes taken out."""
    return re.sub(r"\\f[BIR]|\\%|\\&", "", source).replace("\\-", "-")


def fish_flag(name: str) -> str:
    if name.startswith("--"):
        return f"-l {name[2:]}"
    return f"-s {name[1:]}" if len(name) == 2 else f"-o {name[1:]}"


def make_home_sessions(home: Path) -> None:
    sessions = home / "sessions"
    for session_id in ("20260101-aaa", "20260102-bbb", "parser-1"):
        (sessions / session_id).mkdir(parents=True)
    (sessions / "2026-notes.txt").write_text("not a session\n")


# ------------------------------------------------------------------------- in sync with CLI

@pytest.mark.parametrize("rel", list(OUTPUTS))
def test_generated_file_is_up_to_date(rel: str) -> None:
    path = ROOT / rel
    current = path.read_text(encoding="utf-8") if path.exists() else None
    assert current == OUTPUTS[rel], (
        f"{rel} is out of date with the CLI definition: run `{docgen.REGENERATE_COMMAND}` "
        "and commit the result")


def test_check_mode_lists_stale_files_and_regeneration_fixes_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(docgen, "repository_root", lambda: tmp_path)
    assert docgen.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert all(rel in err for rel in OUTPUTS) and docgen.REGENERATE_COMMAND in err
    assert not (tmp_path / "man").exists(), "--check must write nothing"
    assert docgen.main([]) == 0
    assert docgen.main(["--check"]) == 0
    assert all((tmp_path / rel).read_text(encoding="utf-8") == text for rel, text in OUTPUTS.items())


def test_man_page_date_is_stable() -> None:
    header = next(line for line in MAN.read_text().splitlines() if line.startswith(".TH"))
    assert __version__ in header and not re.search(r"\d{4}-\d{2}-\d{2}", header)


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_man_page_renders_without_groff_warnings() -> None:
    proc = subprocess.run(["groff", "-man", "-ww", "-Tutf8", str(MAN)], capture_output=True,
                          text=True)
    assert proc.returncode == 0 and proc.stderr == ""
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "COMMON OPTIONS",
                    "ENVIRONMENT", "FILES", "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
        assert re.search(rf"^{section}$", re.sub(r".\x08", "", proc.stdout), re.M), section


def test_man_page_documents_every_command_and_option() -> None:
    text = man_text(MAN.read_text())
    missing = [" ".join(p) for p in COMMANDS if f"recursive {' '.join(p)}" not in text]
    missing += sorted(o for o in OPTIONS if not has_word(text, o))
    assert not missing
    for variable in ("RECURSIVE_HOME", "RECURSIVE_API_KEY", "OPENAI_API_KEY", "NO_COLOR"):
        assert variable in text


@pytest.mark.parametrize("path", [BASH, ZSH, FISH], ids=lambda p: p.name)
def test_completion_knows_every_command_and_option(path: Path) -> None:
    text = path.read_text()
    if path is ZSH:
        missing = [" ".join(p) for p in COMMANDS if f"'{p[-1]}:" not in text]
    else:
        missing = [" ".join(p) for p in COMMANDS if " ".join(p) not in text]
    flag = (lambda name: fish_flag(name) in text) if path is FISH else (lambda n: has_word(text, n))
    missing += sorted(o for o in OPTIONS if not flag(o))
    assert not missing


# -------------------------------------------------------------------------- shell syntax

@pytest.mark.parametrize(("shell", "args", "path"), [
    ("bash", ["-n"], BASH), ("zsh", ["-n"], ZSH), ("fish", ["--no-execute"], FISH),
], ids=["bash", "zsh", "fish"])
def test_completion_script_parses(shell: str, args: list[str], path: Path) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    proc = subprocess.run([shell, *args, str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------------- bash, for real

def test_bash_completes_subcommands_and_choices() -> None:
    assert bash_complete(BASH, ["recursive", "ru"]) == ["run"]
    assert bash_complete(BASH, ["recursive", "run", "--provider", ""]) == [
        "openai", "anthropic", "scripted"]
    assert bash_complete(BASH, ["recursive", "run", "-o", "s"]) == ["stream-json"]
    assert bash_complete(BASH, ["recursive", "run", "--permission-mode", "=", "re"]) == ["read-only"]
    assert "--permission-mode" in bash_complete(BASH, ["recursive", "run", "--per"])
    assert bash_complete(BASH, ["recursive", "run", "-m", "gpt", "fix", ""]) == []


def test_bash_completes_paths(tmp_path: Path) -> None:
    (tmp_path / "somedir").mkdir()
    (tmp_path / "somefile").write_text("")
    assert bash_complete(BASH, ["recursive", "run", "-C", "some"], cwd=tmp_path) == ["somedir"]
    assert sorted(bash_complete(BASH, ["recursive", "run", "--script", "some"], cwd=tmp_path)) == [
        "somedir", "somefile"]


@pytest.mark.skipif(not SESSION_COMMANDS, reason="no command takes a SESSION argument yet")
@pytest.mark.parametrize("path", SESSION_COMMANDS, ids=" ".join)
def test_bash_completes_session_ids_from_recursive_home(path: tuple[str, ...],
                                                        isolated_home: Path) -> None:
    make_home_sessions(isolated_home)
    assert bash_complete(BASH, ["recursive", *path, "2026"]) == ["20260101-aaa", "20260102-bbb"]
    assert bash_complete(BASH, ["recursive", *path, "p"]) == ["parser-1"]


def test_bash_session_ids_without_a_sessions_folder(isolated_home: Path) -> None:
    if not SESSION_COMMANDS:
        pytest.skip("no command takes a SESSION argument yet")
    assert bash_complete(BASH, ["recursive", *SESSION_COMMANDS[0], ""]) == []


# --------------------------------------------- commands added later: a nested fake CLI

class Format(str, enum.Enum):
    jsonl = "jsonl"
    md = "md"


def nested_app() -> typer.Typer:
    """A CLI shaped like the future one: groups inside groups, session arguments, awkward help."""
    root = typer.Typer(name="recursive", help="Test CLI.",
                       context_settings={"help_option_names": ["-h", "--help"]})
    sessions = typer.Typer(help="Manage sessions.")
    meta = typer.Typer(help="Session metadata.")
    root.add_typer(sessions, name="sessions")
    sessions.add_typer(meta, name="meta")

    @root.callback()
    def _root() -> None:
        """Test CLI."""

    @sessions.command("show", epilog="[b]Examples[/b]\n\n  .recursive sessions show 'a\\b'\n")
    def show(session: str, fmt: Annotated[Format, typer.Option("--format", "-f")] = Format.md) -> None:
        """Show one — with "quotes", a back\\slash and 'apostrophes'."""

    @sessions.command("rm")
    def rm(session_id: Annotated[list[str], typer.Argument()]) -> None:
        """.Delete sessions; -starts with a dash."""

    @meta.command("get")
    def get(session: str, out: Annotated[Path, typer.Option("--out", dir_okay=False,
                                                            help="'Quoted' \\ help -x.")]) -> None:
        """Print metadata."""

    return root


def test_nested_groups_complete_in_bash(tmp_path: Path, isolated_home: Path) -> None:
    make_home_sessions(isolated_home)
    script = tmp_path / "nested.bash"
    script.write_text(render_bash(docgen.collect(typer.main.get_command(nested_app()))))
    assert bash_complete(script, ["recursive", ""]) == ["sessions"]
    assert bash_complete(script, ["recursive", "sessions", ""]) == ["show", "rm", "meta"]
    assert bash_complete(script, ["recursive", "sessions", "meta", ""]) == ["get"]
    assert bash_complete(script, ["recursive", "sessions", "meta", "get", "p"]) == ["parser-1"]
    assert bash_complete(script, ["recursive", "sessions", "rm", "parser-1", "2026"]) == [
        "20260101-aaa", "20260102-bbb"]
    assert bash_complete(script, ["recursive", "sessions", "show", "-f", ""]) == ["jsonl", "md"]
    assert bash_complete(script, ["recursive", "sessions", "show", "--format", "md", "p"]) == [
        "parser-1"]
    assert bash_complete(script, ["recursive", "sessions", "meta", "get", "--"]) == [
        "--out", "--help"]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_nested_groups_complete_in_fish(tmp_path: Path, isolated_home: Path) -> None:
    make_home_sessions(isolated_home)
    script = tmp_path / "nested.fish"
    script.write_text(render_fish(docgen.collect(typer.main.get_command(nested_app()))))

    def complete(line: str) -> list[str]:
        program = f"source {shlex.quote(str(script))}; complete -C {shlex.quote(line)}"
        proc = subprocess.run(["fish", "-c", program], capture_output=True, text=True, check=True)
        return sorted(line.split("\t")[0] for line in proc.stdout.splitlines())

    assert complete("recursive sessions ") == ["meta", "rm", "show"]
    assert complete("recursive sessions meta get p") == ["parser-1"]
    assert complete("recursive sessions show -f ") == ["jsonl", "md"]


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_awkward_help_text_is_escaped_for_groff(tmp_path: Path) -> None:
    page = tmp_path / "nested.1"
    page.write_text(render_man(docgen.collect(typer.main.get_command(nested_app())), "9.9"))
    proc = subprocess.run(["groff", "-man", "-ww", "-Tutf8", str(page)], capture_output=True,
                          text=True)
    assert proc.stderr == ""
    text = re.sub(r".\x08", "", proc.stdout)
    for shown in ("recursive sessions meta get", ".recursive sessions show 'a\\b'",
                  "'Quoted' \\ help -x.", ".Delete sessions; -starts with a dash."):
        assert shown in text
