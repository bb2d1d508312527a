"""Start-up and exit (issue 16): no CA certificates for plain http, the lazy core tools, the fast exit.

What must not change for a user: the same requests reach the server, every exit leaves its
session whole with the lock released and its output flushed (a pipe or a file), and atexit
handlers still run. (That no SDK is imported on the run path: tests/providers.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from clitools import json_lines, run_cli, write_script

from recursive_cli.features.sessions.lock import LOCK_FILE
from recursive_cli.features.sessions.reader import load_session
from recursive_cli.net.http_client import ApiClient

PYTHON = sys.executable


def python(code: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter (this one has imported everything already)."""
    return subprocess.run([PYTHON, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60,
                          check=False, **kwargs)  # type: ignore[call-overload]


def test_a_client_loads_the_system_certificates_only_for_its_first_https_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading them costs 20–25 ms of start-up, and a local server's run never needs them."""
    import asyncio

    from recursive_cli.net import http1

    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    loaded: list[str] = []
    real = http1.default_tls_context
    monkeypatch.setattr(http1, "default_tls_context", lambda: loaded.append("system") or real())
    client = ApiClient("http://127.0.0.1:8080/v1", {}, 5.0)
    assert isinstance(client._http, http1.Client) and loaded == []

    async def connect_tls() -> None:  # (nothing listens on port 9 of loopback: refused after the TLS set-up)
        try:
            await client._http.post("https://127.0.0.1:9/v1/x", b"{}")
        except http1.ConnectError:
            pass
        await client.aclose()

    asyncio.run(connect_tls())
    assert loaded == ["system"]


# -- the lazy core tools ---------------------------------------------------------------------------


def test_the_generated_core_specs_match_the_tool_classes() -> None:
    from recursive_cli.tools import catalog
    from recursive_cli.tools.core_specs import SPECS

    live = catalog.live_specs()
    # order matters: the schema's key order is the request's byte order
    assert json.dumps(SPECS) == json.dumps(live), "run `python -m recursive_cli.tools.catalog`"
    assert catalog.SPECS_FILE.read_text(encoding="utf-8") == catalog.specs_source(live)


# -- the fast exit -----------------------------------------------------------------------------------


def scripted(tmp_path: Path, replies: list[dict]) -> list[str]:
    return ["--provider", "scripted", "--script", str(write_script(tmp_path / "script.json", replies))]


def only_session(home: Path) -> Path:
    (folder,) = (home / "sessions").iterdir()
    return folder


def test_a_finished_run_leaves_its_session_whole_and_unlocked(tmp_path: Path, workspace: Path,
                                                              isolated_home: Path) -> None:
    args = scripted(tmp_path, [{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
                               {"text": "all done"}])
    proc = run_cli("run", "write it", "-C", str(workspace), *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "all done\n"
    folder = only_session(isolated_home)
    assert not (folder / LOCK_FILE).exists()
    session = load_session(folder)
    assert session.meta.status != "running" and session.meta.finish_reason == "completed"
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert session.warnings == []


@pytest.mark.parametrize(("replies", "flags", "code"), [
    ([{"text": "fine"}], [], 0),
    ([{"tool_calls": [{"name": "run_shell", "arguments": {"command": "true"}}]}] * 3, ["--max-steps", "1"], 3),
    ([{"error": {"status": 400, "message": "bad request"}}], [], 1),
])
def test_every_exit_code_reaches_the_shell_with_the_result_line_flushed_to_a_file(
        tmp_path: Path, workspace: Path, isolated_home: Path, replies: list[dict], flags: list[str], code: int) -> None:
    out = tmp_path / "out.jsonl"
    with out.open("w") as handle:  # a file, not a pipe: block-buffered until the exit flushes it
        proc = subprocess.run([PYTHON, "-m", "recursive_cli", "run", "go", "-C", str(workspace), "-o", "stream-json",
                               *scripted(tmp_path, replies), *flags], stdout=handle, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, timeout=60, check=False)
    assert proc.returncode == code, proc.stderr
    lines = json_lines(out.read_text())
    assert lines[-1]["type"] == "result" and lines[-1]["is_error"] is (code != 0)
    assert not (only_session(isolated_home) / LOCK_FILE).exists()


def test_a_usage_error_still_exits_2_with_its_line(workspace: Path) -> None:
    proc = run_cli("run", "go", "-C", str(workspace), "--max-steps", "many")
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and proc.stdout == ""


def test_atexit_handlers_run_and_output_is_flushed_before_the_fast_exit() -> None:
    proc = python("""
        import atexit, sys
        atexit.register(lambda: print("atexit ran", flush=True))
        from recursive_cli.surfaces.cli.app import main
        sys.argv = ["recursive", "--version"]
        main()
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("recursive ") and proc.stdout.splitlines()[-1] == "atexit ran"


def test_a_program_running_the_cli_inside_it_gets_its_system_exit_back() -> None:
    proc = python("""
        import runpy, sys
        sys.argv = ["recursive", "--version"]
        try:
            runpy.run_module("recursive_cli", run_name="__main__")
        except SystemExit as exc:
            print("SystemExit", exc.code)
    """)
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "SystemExit 0", proc.stderr
