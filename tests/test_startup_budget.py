"""Start-up budget: how many modules and how much memory a command costs a fresh process.

Each case runs the real CLI (`python -X importtime -m recursive_cli ARGS`) in a subprocess and
reads two figures: the modules it imported beyond a bare interpreter's (`python -X importtime
-c pass`; the `import time:` lines of stderr name each one) and its peak resident set beyond
the bare interpreter's (`ru_maxrss` of that process, from `os.wait4` in a small parent). A
case fails when a figure passes its budget: today's figure plus 10 % of the modules and 5 MB
of memory — a real regression (a heavy library pulled onto the start-up path: httpx2 back on
every command's path is +45 modules and +2.4 MB for a run, `requests` +85 and +5.8 MB), not
the noise of a refactor (h11 for HTTP is a dozen modules). It also fails when one of a few
heavy modules that a command has never needed is loaded at all: no SDK (`openai`,
`anthropic`, `mcp`: we speak their protocols ourselves; `opentelemetry` without --otel; `acp`, which
only `recursive acp` loads), no Ray, no interactive UI
(`prompt_toolkit`, `markdown_it`) outside `chat`, no `rich` for a run's plain output, no
pydantic for a one-step `run` (with the typer pyproject.toml asks for) nor for a run whose model
calls tools (`run_shell`; `read_file` and `edit_file`, one call's arguments refused), and for
`--version` none of pydantic, asyncio, rich, `importlib.metadata`, `email` or `zipfile`.
Our own module paths are named nowhere: they move, the count is what matters.

Measured 2026-12-02 (CPython 3.11.7, Linux x86-64, this venv; a bare interpreter: 60 modules,
10.6 MB), beyond the bare interpreter, after and (in brackets) before issue 28 removed the
stand-in for `importlib.metadata`:

    case        modules        peak RSS
    version      99 (100)     6.6 (6.8) MB
    help        311 (277)    29.8 (28.1) MB
    run         324 (294)    28.7 (27.1) MB   (scripted provider, checkpoints on)
    run-http    332 (302)    29.2 (27.7) MB   (OpenAI provider against a loopback server)
    headless    326 (296)    28.9 (27.3) MB   (`-p`, scripted provider)
    sessions    276 (246)    26.6 (25.1) MB   (`sessions list`, one session saved)

`importlib.metadata` is among them for every command that builds a pydantic validator
(`--help` too: typer's parameter adapters are pydantic TypeAdapters). Only pydantic asks for it
on these paths: its plugin loader (`pydantic/plugin/_loader.py`, 2.14) imports it at module
level to look up the `pydantic` entry-point group, and with it `email`, `zipfile`, `csv`, … —
30 modules, ≈ 1.5 MB and, measured alone, 12–20 ms of CPU for the import and 4–6 ms for the
scan (on a loaded machine: a one-step run's median CPU time went 297 → 314 ms). pydantic's
documented switch, `PYDANTIC_DISABLE_PLUGINS=1`, skips the scan but not the import (no
difference to be seen in a whole run), turns off a user's plugins and would reach every
command a tool runs through the environment; so we pay it rather than keep a 214-line stand-in
for `importlib.metadata` (`light_metadata.py`, removed in issue 28 with its tests).

To update the budget after a change that is worth its cost: `python tests/test_startup_budget.py`
prints today's figures in the form of `MEASURED` below; paste them there, and say in the commit
why the figures moved.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from clitools import invoke, write_script
from fakeserver import FakeLLMServer

pytestmark = pytest.mark.skipif(not hasattr(os, "wait4"), reason="needs os.fork and os.wait4 (POSIX)")

# case: (modules, peak RSS in MB) beyond a bare interpreter, as measured on the date above
MEASURED: dict[str, tuple[int, float]] = {
    "version": (99, 6.6),
    "help": (311, 29.8),
    "run": (324, 28.7),
    "run-http": (332, 29.2),
    "headless": (326, 28.9),
    "sessions": (276, 26.6),
}
def _typer_version() -> tuple[int, ...]:
    from importlib.metadata import version

    return tuple(int(part) for part in version("typer").split(".")[:2])


MODULE_MARGIN = 0.10  # of today's modules (at 15 %, httpx2 back on a run's path would pass)
RSS_MARGIN_MB = 5.0

NEVER = frozenset({"openai", "anthropic", "mcp", "ray", "prompt_toolkit", "markdown_it",
                   "opentelemetry",  # (--otel's SDK: only a run that asks for it loads it)
                   "acp"})  # (the Agent Client Protocol package: only `recursive acp` loads it)
PLAIN_OUTPUT = NEVER | {"rich"}  # (only help and chat render with rich)
# A one-step run makes dataclasses only (core/values.py): pydantic is for reading files back,
# and for typer 0.29's option coercion, which pyproject.toml keeps out (typer <0.29).
RUN = PLAIN_OUTPUT | ({"pydantic"} if _typer_version() < (0, 29) else set())
NEVER_FOR = {"version": NEVER | {"pydantic", "asyncio", "rich", "importlib.metadata", "email", "zipfile"},
             "run": RUN, "run-http": RUN, "headless": PLAIN_OUTPUT}
ANSWER = "all done"
_IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \| +(\S+)", re.MULTILINE)


@dataclass(frozen=True)
class Startup:
    """One process, from start to exit: what it printed and what it cost."""

    returncode: int
    stdout: str
    stderr: str
    modules: frozenset[str]  # every module it imported (the `-X importtime` lines)
    rss_mb: float  # its peak resident set


# Runs ARGV in a child of its own and writes that child's peak RSS (`ru_maxrss` from `wait4`) to
# the file argv[1]. The child of a fork carries its parent's peak into its own (Linux keeps the
# larger across exec), so the parent is this small interpreter (`-S -I`: no site, ≈ 8 MB, under
# a bare `python -c pass`), never the test process (a pytest worker of hundreds of MB).
_PEAK_OF_CHILD = """
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execv(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
os._exit(os.waitstatus_to_exitcode(status))
"""


def measure(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> Startup:
    """Run `python -X importtime ARGV` to its end; its output, modules and peak RSS."""
    with tempfile.TemporaryDirectory() as folder:
        peak = Path(folder) / "peak"
        proc = subprocess.Popen([sys.executable, "-S", "-I", "-c", _PEAK_OF_CHILD, str(peak), sys.executable,
                                 "-X", "importtime", *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # (its own session: the command and what it started)
            proc.communicate()
            raise
        kilobytes = int(peak.read_text()) / (1024 if sys.platform == "darwin" else 1)  # (macOS counts bytes)
    return Startup(proc.returncode, stdout, _IMPORT_LINE.sub("", stderr).strip(),
                   frozenset(_IMPORT_LINE.findall(stderr)), kilobytes / 1024)


def _env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("RECURSIVE_")}
    return {**env, "RECURSIVE_HOME": str(home), "RECURSIVE_API_KEY": "sk-test"}


@contextlib.contextmanager
def started(case: str, root: Path) -> Iterator[tuple[list[str], dict[str, str]]]:
    """The command line of `case` and its environment, in a workspace and home of its own
    under `root` (with the loopback server of `run-http` up meanwhile)."""
    workspace, home = root / "ws", root / "home"
    workspace.mkdir()
    script = ["--provider", "scripted", "--script", str(write_script(root / "script.json", [{"text": ANSWER}]))]
    env = _env(home)
    if case == "run-http":
        with FakeLLMServer([{"text": ANSWER}]) as server:
            yield ["run", "say done", "-C", str(workspace), "--provider", "openai", "--api-base",
                   server.openai_base_url, "-m", "fake-model"], env
            assert len(server.requests) == 1
        return
    if case == "sessions":  # a home with one session in it to list
        saved = invoke("run", "say done", "-C", str(workspace), *script, env={"RECURSIVE_HOME": str(home)})
        assert saved.returncode == 0, saved.stderr
    yield {"version": ["--version"], "help": ["--help"], "sessions": ["sessions", "list"],
           "run": ["run", "say done", "-C", str(workspace), *script],
           "headless": ["-p", "say done", "-C", str(workspace), *script]}[case], env


def startup_of(case: str, root: Path) -> Startup:
    """`recursive ARGS` of `case` measured, checked to have done its job: the second of two
    runs, in folders of their own, so that every module it loads is compiled already (the first
    writes what bytecode is missing; compiling costs memory that a user's second run does not
    pay)."""
    for attempt in ("first", "second"):
        (root / attempt).mkdir()
        with started(case, root / attempt) as (args, env):
            seen = measure(["-m", "recursive_cli", *args], root / attempt / "ws", env)
        assert seen.returncode == 0, seen.stderr[-3000:]
        if case.startswith("run") or case == "headless":
            assert seen.stdout == f"{ANSWER}\n"
        else:
            assert seen.stdout.strip(), seen.stderr  # (the version, the help, the list)
    return seen


def bare_interpreter(root: Path) -> Startup:
    measure(["-c", "pass"], root, _env(root / "home"))  # (its bytecode written, as above)
    return measure(["-c", "pass"], root, _env(root / "home"))


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Startup:
    return bare_interpreter(tmp_path_factory.mktemp("bare"))


@pytest.mark.parametrize("case", list(MEASURED))
def test_a_command_starts_within_its_budget_of_modules_and_memory(case: str, bare: Startup,
                                                                  tmp_path: Path) -> None:
    seen = startup_of(case, tmp_path)
    modules, rss_mb = len(seen.modules - bare.modules), seen.rss_mb - bare.rss_mb
    today_modules, today_rss = MEASURED[case]
    figures = f"{case}: {modules} modules, {rss_mb:.1f} MB beyond a bare interpreter (measured {MEASURED[case]})"
    heavy = sorted(seen.modules & NEVER_FOR.get(case, NEVER))
    assert not heavy, f"{figures}; loaded what it never needed: {heavy}"
    assert modules <= today_modules * (1 + MODULE_MARGIN), f"{figures}: over its budget of modules"
    assert rss_mb <= today_rss + RSS_MARGIN_MB, f"{figures}: over its budget of memory"


# A run whose model calls tools: their arguments are dataclasses that msgspec validates, so no
# call needs pydantic either (issue 28). Each script ends with ANSWER.
TOOL_RUNS = {
    "run_shell": [{"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo ran > shell.txt"}}]}],
    "read_file, edit_file": [{"tool_calls": [
        {"name": "read_file", "arguments": {"path": "notes.txt", "limit": "5"}},  # ("5": taken for 5)
        {"name": "edit_file", "arguments": {"path": "notes.txt", "old_string": "draft", "new_string": "final"}},
        {"name": "read_file", "arguments": {"path": "notes.txt", "offset": 0}}]}],  # (refused: offset ≥ 1)
}


@pytest.mark.parametrize("tools", list(TOOL_RUNS))
def test_a_run_whose_model_calls_tools_loads_no_pydantic(tools: str, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("a draft\n")
    script = write_script(tmp_path / "script.json", [*TOOL_RUNS[tools], {"text": ANSWER}])
    seen = measure(["-m", "recursive_cli", "run", "work", "-C", str(workspace), "--provider", "scripted",
                    "--script", str(script), "-o", "stream-json", "--verbose"], workspace, _env(tmp_path / "home"))
    assert seen.returncode == 0, seen.stderr[-3000:]
    results = [block for line in seen.stdout.splitlines() if (event := json.loads(line)).get("type") == "user"
               for block in event["message"]["content"] if block.get("type") == "tool_result"]
    if tools == "run_shell":
        assert (workspace / "shell.txt").read_text() == "ran\n"
        assert [r.get("is_error", False) for r in results] == [False]
    else:
        assert (workspace / "notes.txt").read_text() == "a final\n"
        assert [r.get("is_error", False) for r in results] == [False, False, True]
        assert "invalid arguments for read_file: offset:" in json.dumps(results[2])
    heavy = sorted(seen.modules & NEVER_FOR["run"])
    assert not heavy, f"a run calling {tools} loaded what it never needed: {heavy}"


def main() -> None:
    """Print today's figures, in the form of `MEASURED`."""
    import conftest  # noqa: F401 (its bytecode set-up: the children read compiled modules, as under pytest)

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        base = bare_interpreter(root)
        print(f"# bare interpreter: {len(base.modules)} modules, {base.rss_mb:.1f} MB")
        print("MEASURED: dict[str, tuple[int, float]] = {")
        for case in MEASURED:
            (root / case).mkdir()
            seen = startup_of(case, root / case)
            print(f"    {json.dumps(case)}: ({len(seen.modules - base.modules)}, {seen.rss_mb - base.rss_mb:.1f}),")
        print("}")


if __name__ == "__main__":
    main()
