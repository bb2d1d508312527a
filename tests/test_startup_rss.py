"""Memory of a one-step run (issue 16, goal 3): what a `recursive run` does not load.

A run registers only its own command's typer definitions (`app.app_for`: `chat`, `fleet`,
`mcp`, `loop`, `goal`, `checkpoints` are not imported), answers httpx2's, httpcore2's and
pydantic's questions to `importlib.metadata` without importing it (`light_metadata`: no
`zipfile`, `csv`, …), and loads `ctypes` only when an inotify watch starts. What a user sees
must not change: the same help, the same errors, the same versions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import runprobe
from clitools import invoke
from typer.testing import CliRunner

from recursive_cli.surfaces.cli import app as app_module

PYTHON = sys.executable

LAZY_MODULES = ("recursive_cli.surfaces.cli.chat_cmd", "recursive_cli.surfaces.fleet.fleet_cmd",
                "recursive_cli.surfaces.cli.mcp_cmd", "recursive_cli.surfaces.cli.loop_app",
                "recursive_cli.surfaces.cli.goal_app", "recursive_cli.surfaces.cli.checkpoints_app")


def _env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("RECURSIVE_")}
    return {**env, "RECURSIVE_HOME": str(home), "RECURSIVE_API_KEY": "sk-test"}


def python(code: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter (this one has imported everything already)."""
    return subprocess.run([PYTHON, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, env=env, check=False)


@runprobe.ONE_WORKER  # (the runs are shared with tests/providers/test_own_client.py and test_startup_pass2.py)
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_one_step_run_loads_neither_importlib_metadata_nor_the_other_commands(
        provider: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    import importlib.metadata

    run = runprobe.observed_run(provider, True, tmp_path_factory)  # a fresh interpreter's `recursive run`
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"{runprobe.ANSWER}\n" and run.requests == 1
    # the versions httpx2 and httpcore2 asked for are the installed ones
    versions = dict(run.versions)
    assert versions["httpx2"] == importlib.metadata.version("httpx2")
    assert versions["httpcore2"] == importlib.metadata.version("httpcore2")
    assert run.metadata == "_StandIn"  # the real module was never needed
    modules = run.modules
    assert not modules & {"zipfile", "csv", "importlib.metadata._adapters"}
    assert not modules & set(LAZY_MODULES)


def test_the_scan_of_a_workspace_imports_no_ctypes_until_a_watch_starts() -> None:
    proc = python("""
        import sys
        import recursive_cli.features.checkpoints.scan, recursive_cli.features.checkpoints.watch as watch
        print("ctypes" in sys.modules)
        try:
            watch._Inotify().close()
        except watch.WatchUnavailable:
            pass
        print("ctypes" in sys.modules)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True" if sys.platform.startswith("linux") else "False"]


def test_the_lazy_names_are_what_each_module_registers() -> None:
    import importlib

    import typer

    from recursive_cli.surfaces.cli.narrow import command_names

    for name, module in app_module.LAZY_COMMANDS.items():
        blank = typer.Typer()
        importlib.import_module(module).register(blank)
        assert list(command_names(blank) or {}) == [name], module
    # the whole tree has them all (its order is the one README, man and completions record:
    # tests/test_docs_sync.py)
    assert set(app_module.LAZY_COMMANDS) <= set(command_names(app_module.app) or {})


@pytest.mark.parametrize("args", [
    ["chat", "--help"],
    ["fleet", "--help"],
    ["fleet", "run", "--help"],
    ["fleet", "status", "--bogus"],
    ["mcp", "--help"],
    ["mcp"],
    ["hooks", "list", "--help"],
    ["loop", "--help"],
    ["loop", "--max-iterations", "0", "x"],
    ["goal", "--help"],
    ["goal", "--max-turns", "zero", "x"],
    ["checkpoints", "--help"],
    ["checkpoints", "diff"],
    ["run", "--help"],
    ["sessions", "lst"],
    ["--help"],
    ["bogus"],
    ["chta"],
], ids=lambda args: " ".join(args))
def test_the_tree_a_process_runs_answers_as_the_whole_one(args: list[str], workspace: Path) -> None:
    tree = app_module.app_for(args)
    if args[0] in app_module.LAZY_COMMANDS:
        assert len(tree.registered_commands) + len(tree.registered_groups) == 1
    whole = invoke(*args)  # the whole tree (built once for the session: see clitools)
    alone = CliRunner().invoke(tree, args, catch_exceptions=False)
    assert (alone.exit_code, alone.stdout, alone.stderr) == (whole.returncode, whole.stdout, whole.stderr)


def test_a_lazy_command_registered_alone_leaves_the_whole_tree_as_it_was() -> None:
    before = [info.name for info in app_module.app.registered_groups]
    app_module.app_for(["mcp", "list"])
    app_module.app_for(["chat"])
    assert [info.name for info in app_module.app.registered_groups] == before
    assert app_module.app is app_module.app  # built once


def test_recursive_help_still_lists_every_command(tmp_path: Path) -> None:
    proc = subprocess.run([PYTHON, "-m", "recursive_cli", "--help"], capture_output=True, text=True, timeout=60,
                          env=_env(tmp_path / "home"), stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, proc.stderr
    for name in ("run", "resume", "sessions", "tools", "config", *app_module.LAZY_COMMANDS):
        assert f" {name} " in proc.stdout, name


STAND_IN = """
    import json, sys
    from recursive_cli.surfaces.cli import light_metadata
    light_metadata.install()
    import importlib.metadata as metadata
    assert light_metadata.installed()
    names = json.loads(sys.argv[1])
    out = {"versions": {name: metadata.version(name) for name in names},
           "pydantic": [ep.value for ep in metadata.entry_points(group="pydantic")],
           "still_stand_in": light_metadata.installed()}
    out["console"] = sorted(ep.name for ep in metadata.entry_points(group="console_scripts"))
    try:
        metadata.version("no-such-distribution-here")
    except metadata.PackageNotFoundError as exc:
        out["missing"] = type(exc).__module__ + "." + type(exc).__name__
    out["real_now"] = not light_metadata.installed() and type(sys.modules["importlib.metadata"]).__name__
    print(json.dumps(out))
"""


def _stand_in(names: list[str], extra_path: Path | None = None) -> dict[str, Any]:
    env = dict(os.environ)
    if extra_path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(extra_path), env.get("PYTHONPATH", "")])
    proc = python(STAND_IN, json.dumps(names), env=env)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


REAL = """
import importlib.metadata as m, json
names = sorted({d.metadata["Name"] for d in m.distributions()})
print(json.dumps({"versions": {n: m.version(n) for n in names},
                  "pydantic": [ep.value for ep in m.entry_points(group="pydantic")],
                  "console": sorted(ep.name for ep in m.entry_points(group="console_scripts"))}))
"""


def test_the_stand_in_gives_every_installed_distribution_the_real_version() -> None:
    # The real module's answers from a fresh interpreter too: this one's sys.path may hold more
    # (Ray puts its vendored packages on it once imported by another test).
    proc = python(REAL)
    assert proc.returncode == 0, proc.stderr
    real = json.loads(proc.stdout)
    seen = _stand_in(sorted(real["versions"]))
    assert seen["versions"] == real["versions"]
    assert seen["pydantic"] == real["pydantic"]
    assert seen["still_stand_in"] is True  # those questions needed no real module
    # anything else is the real module's answer, and the real module takes the stand-in's place
    assert seen["console"] == real["console"]
    assert seen["missing"] == "importlib.metadata.PackageNotFoundError"
    assert seen["real_now"] == "module"


def _dist(root: Path, folder: str, version: str, entry_points: str = "") -> None:
    info = root / folder
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {folder.partition('-')[0]}\nVersion: {version}\n\n",
                                   encoding="utf-8")
    if entry_points:
        (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")


def test_a_pydantic_plugin_and_odd_folders_get_the_real_answers(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _dist(site, "fake_plugin-1.2.dist-info", "1.2", "[pydantic]\nmy_plugin = fake_plugin:plugin\n")
    _dist(site, "Twice.Named-1.0.dist-info", "1.0")
    _dist(site, "twice_named-2.0.dist-info", "2.0")  # two candidates in one folder
    (site / "eggy.egg-info").write_text("Metadata-Version: 1.0\nName: eggy\nVersion: 0.3\n", encoding="utf-8")
    seen = _stand_in(["fake-plugin", "twice-named", "eggy"], extra_path=site)
    proc = python("""
        import importlib.metadata as m, json, sys
        print(json.dumps({"versions": {n: m.version(n) for n in json.loads(sys.argv[1])},
                          "pydantic": [ep.value for ep in m.entry_points(group="pydantic")]}))
    """, json.dumps(["fake-plugin", "twice-named", "eggy"]), env={**os.environ, "PYTHONPATH": str(site)})
    real = json.loads(proc.stdout)
    assert seen["versions"] == real["versions"] and seen["versions"]["fake-plugin"] == "1.2"
    assert seen["pydantic"] == real["pydantic"] == ["fake_plugin:plugin"]
    assert seen["still_stand_in"] is False  # the plugin group was the real module's to answer


def test_the_stand_in_reads_a_distribution_in_a_zip_through_the_real_module(tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "dists.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("zipped_dist-4.5.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped-dist\nVersion: 4.5\n\n")
    seen = _stand_in(["zipped-dist"], extra_path=archive)
    assert seen["versions"] == {"zipped-dist": "4.5"}


def test_an_embedding_program_keeps_the_real_importlib_metadata() -> None:
    proc = python("""
        import sys
        from recursive_cli.surfaces.cli import app
        from recursive_cli.surfaces.cli.light_metadata import installed
        import httpx2
        print(installed(), type(sys.modules["importlib.metadata"]).__name__)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "module"]


def test_a_submodule_and_a_star_import_get_the_real_package() -> None:
    proc = python("""
        import sys
        from recursive_cli.surfaces.cli import light_metadata
        light_metadata.install()
        from importlib.metadata._meta import PackageMetadata
        print(PackageMetadata.__module__, light_metadata.installed())
        from importlib.metadata import *  # noqa: F403 (the real module's names)
        print(distributions.__module__, light_metadata.installed())  # noqa: F405
        light_metadata.install()  # the real module is there now: nothing to do
        import importlib.metadata
        print(importlib.metadata.PackageMetadata is PackageMetadata, light_metadata.installed())
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["importlib.metadata._meta", "True", "importlib.metadata", "False",
                                   "True", "False"]
