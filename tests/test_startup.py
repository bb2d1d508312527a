"""Start-up and exit (issue 16): the narrow SDK import, the lazy core tools, the fast exit.

What must not change for a user: the same requests reach the server, every exit leaves its
session whole with the lock released and its output flushed (a pipe or a file), atexit
handlers still run, and an SDK imported later by anyone is the whole SDK.
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
from recursive_cli.providers.sdk_base import plain_http_client

PYTHON = sys.executable


def python(code: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter (this one has imported everything already)."""
    return subprocess.run([PYTHON, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60,
                          check=False, **kwargs)  # type: ignore[call-overload]


def sdk_modules(code: str, package: str) -> set[str]:
    proc = python(code + f"\nimport sys\nprint(json.dumps([m for m in sys.modules if m.split('.')[0] == '{package}']))")
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.splitlines()[-1]))


# -- the narrow SDK import ------------------------------------------------------------------------


@pytest.mark.parametrize(("package", "provider"), [("openai", "OpenAIProvider"), ("anthropic", "AnthropicProvider")])
def test_a_provider_imports_a_fraction_of_its_sdk(package: str, provider: str) -> None:
    narrow = sdk_modules(f"import json\nfrom recursive_cli.providers.{package}_provider import {provider}\n"
                         f"{provider}('m', 'k', 'http://127.0.0.1:9')", package)
    whole = sdk_modules(f"import json, {package}", package)
    assert narrow < whole and len(narrow) < 0.4 * len(whole), (len(narrow), len(whole))


def test_the_sdk_imported_later_is_the_whole_sdk_with_the_same_classes() -> None:
    proc = python("""
        from recursive_cli.providers import anthropic_provider, openai_provider
        import anthropic, openai
        from openai.types.chat import ChatCompletion
        from anthropic.types import *  # noqa: F403  (needs the real __init__ body)
        assert openai_provider.AsyncOpenAI is openai.AsyncOpenAI
        assert openai_provider.APIStatusError is openai.APIStatusError
        assert anthropic_provider.AsyncAnthropic is anthropic.AsyncAnthropic
        assert anthropic_provider.AsyncStream is anthropic.AsyncStream
        assert openai.OpenAI and anthropic.Anthropic and ChatCompletion and MessageParam  # noqa: F405
        print(openai.__version__, anthropic.__version__, sorted(openai.__all__)[:1])
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0][0].isdigit()


def fake_package(root: Path, client: str) -> None:
    """`pkg`: a top package whose body sets a name, a `types` package of re-exports only, a `_client`."""
    (root / "pkg" / "types").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("BODY_RAN = True\nfrom ._client import Client as Client\n")
    (root / "pkg" / "types" / "__init__.py").write_text('"""Re-exports only."""\n\nfrom .t import (\n'
                                                       '    T as T,  # a comment, with a comma\n)\n\n__all__ = ["T"]\n')
    (root / "pkg" / "types" / "t.py").write_text("class T: pass\n")
    (root / "pkg" / "_client.py").write_text(client)


def test_load_names_defers_package_bodies_until_a_name_needs_them(tmp_path: Path) -> None:
    fake_package(tmp_path, "from .types import T\nclass Client:\n    t = T\n")
    proc = python("""
        import sys
        from recursive_cli.providers.sdk_loader import load_names
        (Client,) = load_names("pkg", "_client.Client")
        pkg, types = sys.modules["pkg"], sys.modules["pkg.types"]
        print("BODY_RAN" in vars(pkg), "__all__" in vars(types))
        print(types.__all__, pkg.BODY_RAN, pkg.Client is Client, types.T is Client.t)
    """, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["False False", "['T'] True True True"]


def test_a_narrow_import_that_fails_falls_back_to_the_whole_package(tmp_path: Path) -> None:
    fake_package(tmp_path, "import sys\nassert 'BODY_RAN' in vars(sys.modules['pkg']), 'needs the body'\n"
                           "class Client: pass\n")
    proc = python("""
        import sys
        from recursive_cli.providers.sdk_loader import load_names
        (Client,) = load_names("pkg", "_client.Client")
        print(sys.modules["pkg"].BODY_RAN, sys.modules["pkg"].Client is Client)
    """, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]


def test_a_plain_http_base_url_gets_a_client_without_the_system_certificates(monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx2

    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(plain_http_client(httpx2.AsyncClient, "http://127.0.0.1:8080/v1", 5.0), httpx2.AsyncClient)
    assert plain_http_client(httpx2.AsyncClient, "https://api.openai.com/v1", 5.0) is None
    assert plain_http_client(httpx2.AsyncClient, None, 5.0) is None
    monkeypatch.setenv("HTTPS_PROXY", "https://proxy.example:3128")  # the proxy may need TLS: as usual
    assert plain_http_client(httpx2.AsyncClient, "http://127.0.0.1:8080/v1", 5.0) is None


# -- the lazy core tools ---------------------------------------------------------------------------


def test_the_generated_core_specs_match_the_tool_classes() -> None:
    from recursive_cli.tools import catalog
    from recursive_cli.tools.core_specs import SPECS

    live = catalog.live_specs()
    # order matters: the schema's key order is the request's byte order
    assert json.dumps(SPECS) == json.dumps(live), "run `python -m recursive_cli.tools.catalog`"
    assert catalog.SPECS_FILE.read_text(encoding="utf-8") == catalog.specs_source(live)


def test_the_core_tools_import_no_tool_module_until_one_is_called(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    proc = python(f"""
        import asyncio, sys
        from pathlib import Path
        from recursive_cli.core.messages import ToolCall
        from recursive_cli.tools.base import ToolContext, ToolRegistry
        from recursive_cli.tools.catalog import core_tools
        from recursive_cli.tools.sandbox import WorkspaceSandbox

        def loaded():
            return sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("recursive_cli.tools."))

        registry = ToolRegistry(core_tools())
        specs = registry.specs()
        print(loaded(), len(specs), [t.kind for t in core_tools()][:4])
        ctx = ToolContext(sandbox=WorkspaceSandbox(Path({str(tmp_path)!r})), home=Path({str(tmp_path / 'h')!r}))
        result = asyncio.run(registry.execute(ToolCall(id="c", name="read_file", arguments='{{"path": "a.txt"}}'), ctx))
        print(loaded(), repr(result.content))
    """)
    assert proc.returncode == 0, proc.stderr
    before, after = proc.stdout.splitlines()
    assert before == "['base', 'catalog', 'core_specs', 'sandbox'] 12 ['read', 'edit', 'edit', 'edit']"
    assert after.startswith("['base', 'catalog', 'core_specs', 'files', 'sandbox'] ") and "hello" in after


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
