"""Local model servers without a key, the missing-key message, and base-URL mistakes that fail fast.

Everything goes through the CLI against servers on 127.0.0.1 started here (issue 14).
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from clitools import CliResult, invoke, json_lines
from fakeserver import FakeLLMServer

import recursive_cli
from recursive_cli.providers import local

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parent.parent


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- --api-base without -m: the server's own model -----------------------------------------------


def _posts(server: FakeLLMServer) -> list[Any]:
    return [request for request in server.requests if request.body is not None]


def _lists(server: FakeLLMServer) -> int:
    return sum(request.path == "/v1/models" for request in server.requests)


def test_a_server_that_serves_one_model_gets_it_and_says_so_once(workspace: Path) -> None:
    with FakeLLMServer([{"text": "hi from qwen"}, {"text": "again"}], served=["qwen2.5-coder:7b"]) as server:
        base = server.openai_base_url
        proc = invoke("run", "hi", "-C", str(workspace), "--api-base", base, "-o", "json")
        session = json.loads(proc.stdout)["session_id"]
        resumed = invoke("resume", session, "go on", "-C", str(workspace))
        posts, lists = _posts(server), _lists(server)
    assert proc.returncode == 0, proc.stderr
    assert [request.body["model"] for request in posts] == ["qwen2.5-coder:7b", "qwen2.5-coder:7b"]
    said = [line for line in proc.stderr.splitlines() if "qwen2.5-coder:7b" in line]
    assert said == [f"note: using qwen2.5-coder:7b, the one model {base} serves "
                    "(-m MODEL for another)"]
    assert json.loads(proc.stdout)["modelUsage"].keys() == {"qwen2.5-coder:7b"}
    assert resumed.returncode == 0 and resumed.stdout == "again\n", resumed.stderr
    assert lists == 1  # the session keeps its model: resume asks nothing


def _run_without_a_model(workspace: Path, served: list[str] | None) -> tuple[str, CliResult, list[Any]]:
    """`recursive run` on a server that serves `served` (None: no model list), no -m given:
    its base URL, what the user saw, and the chat requests the server got."""
    with FakeLLMServer([{"text": "never"}], served=served) as server:
        base = server.openai_base_url
        proc = invoke("run", "hi", "-C", str(workspace), "--api-base", base)
        return base, proc, _posts(server)


def test_a_server_that_serves_several_models_asks_which(workspace: Path) -> None:
    base, proc, posts = _run_without_a_model(workspace, ["llama3.2", "qwen2.5-coder", "mistral"])
    assert (proc.returncode, proc.stdout, posts) == (2, "", [])
    assert proc.stderr == (f"error: {base} serves 3 models (llama3.2, qwen2.5-coder, mistral): "
                           "pass -m MODEL to choose one\n")


def test_a_server_that_cannot_list_its_models_says_so(workspace: Path) -> None:
    base, proc, posts = _run_without_a_model(workspace, None)
    assert (proc.returncode, proc.stdout, posts) == (1, "", [])
    assert proc.stderr == (f"error: cannot list the models of {base} to pick one "
                           "(no -m MODEL given): GET /models answered HTTP 404; pass -m MODEL\n")
    port = closed_port()
    started = time.monotonic()
    refused = invoke("run", "hi", "-C", str(workspace), "--api-base", f"http://127.0.0.1:{port}/v1")
    assert time.monotonic() - started < 5
    assert refused.returncode == 75  # told as the run would tell it (unavailable: try again later); -m would not help
    assert refused.stderr == (f"error: connection to http://127.0.0.1:{port}/v1 refused: is the server running "
                              f"at http://127.0.0.1:{port}?\n")


def test_a_model_given_anywhere_is_used_without_asking(workspace: Path) -> None:
    with FakeLLMServer([{"text": "a"}, {"text": "b"}, {"text": "c"}], served=["one", "two"]) as server:
        base = server.openai_base_url
        by_flag = invoke("run", "hi", "-C", str(workspace), "--api-base", base, "-m", "mine")
        by_env = invoke("run", "hi", "-C", str(workspace), "--api-base", base, env={"RECURSIVE_MODEL": "env-model"})
        (workspace / ".recursive").mkdir()
        (workspace / ".recursive" / "config.toml").write_text('model = "config-model"\n')
        by_config = invoke("run", "hi", "-C", str(workspace), "--api-base", base, "--trust-workspace")
        posts, lists = _posts(server), _lists(server)
    assert [proc.returncode for proc in (by_flag, by_env, by_config)] == [0, 0, 0], by_config.stderr
    assert [request.body["model"] for request in posts] == ["mine", "env-model", "config-model"]
    assert lists == 0 and "note: using" not in by_flag.stderr + by_env.stderr + by_config.stderr


def test_config_show_says_the_server_picks_the_model() -> None:
    local_base = invoke("config", "show", "--api-base", "http://127.0.0.1:11434/v1")
    assert "model\t(the one the server serves, asked at start)\tdefault (the server's /v1/models)\n" in local_base.stdout
    for args in (["--api-base", "https://api.openai.com/v1"], ["--api-base", "http://127.0.0.1:11434/v1", "-m", "x"],
                 ["--provider", "anthropic", "--api-base", "http://127.0.0.1:8080"]):
        proc = invoke("config", "show", *args)
        assert proc.returncode == 0 and "asked at start" not in proc.stdout, args


# -- a keyless local server ------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_keyless_local_server_is_sent_no_key(provider: str, workspace: Path) -> None:
    # Credentials an SDK would pick up from the environment on its own must not travel either.
    env = {"ANTHROPIC_AUTH_TOKEN": "tok-env-SHOULD-NOT-TRAVEL", "OPENAI_ADMIN_KEY": "admin-SHOULD-NOT-TRAVEL"}
    with FakeLLMServer([{"text": "hello from qwen"}]) as server:
        base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
        proc = invoke("run", "hi", "-C", str(workspace), "--provider", provider, "--api-base", base,
                      "-m", "qwen", env=env)
        requests = list(server.requests)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello from qwen\n"
    assert len(requests) == 1
    headers = requests[0].headers
    assert "authorization" not in headers and "x-api-key" not in headers
    assert not any("SHOULD-NOT-TRAVEL" in value for value in headers.values())


def test_a_base_url_from_the_environment_or_config_needs_no_key(workspace: Path) -> None:
    with FakeLLMServer([{"text": "from env"}, {"text": "from config"}]) as server:
        by_env = invoke("run", "hi", "-C", str(workspace), "-m", "qwen",
                        env={"RECURSIVE_API_BASE": server.openai_base_url})
        (workspace / ".recursive").mkdir()
        (workspace / ".recursive" / "config.toml").write_text(f'api-base = "{server.openai_base_url}"\n')
        by_config = invoke("run", "hi", "-C", str(workspace), "-m", "qwen", "--trust-workspace")
        requests = list(server.requests)
    assert (by_env.returncode, by_env.stdout) == (0, "from env\n"), by_env.stderr
    assert (by_config.returncode, by_config.stdout) == (0, "from config\n"), by_config.stderr
    assert all("authorization" not in request.headers for request in requests)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_401_from_a_keyless_server_says_how_to_give_a_key(provider: str, workspace: Path) -> None:
    with FakeLLMServer([{"error": {"status": 401, "message": "missing bearer token"}}]) as server:
        base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
        proc = invoke("run", "hi", "-C", str(workspace), "--provider", provider, "--api-base", base, "-m", "m")
        assert len(server.requests) == 1  # not retried
    assert proc.returncode == 1
    own = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
    [line] = error_lines(proc.stderr)
    assert "401" in line and "the server wants an API key" in line
    assert "RECURSIVE_API_KEY" in line and own in line


# -- neither a key nor a base URL: the three ways on -------------------------------------------------


class _ModelsHandler(BaseHTTPRequestHandler):
    """A local model server's `/v1/models`; records every request it gets."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self) -> None:
        self.server.seen.append((self.command, self.path))  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        self._record()
        status, body = self.server.answer  # type: ignore[attr-defined]
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        self._record()
        self.send_error(500, "a chat request reached the probed server")


@contextlib.contextmanager
def models_server(status: int = 200, body: Any = None) -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _ModelsHandler)
    httpd.daemon_threads = True
    httpd.seen = []  # type: ignore[attr-defined]
    httpd.answer = (status, body if body is not None else  # type: ignore[attr-defined]
                    {"object": "list", "data": [{"id": "qwen2.5-coder", "object": "model"},
                                                {"id": "llama3.2", "object": "model"}]})
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_no_key_and_no_base_offers_the_local_server_that_answers(workspace: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with models_server() as ollama:
        port = int(ollama.server_address[1])
        monkeypatch.setattr(local, "PORTS", ((port, "Ollama"), (closed_port(), "vLLM")))
        started = time.monotonic()
        proc = invoke("run", "hi", "-C", str(workspace))
        elapsed = time.monotonic() - started
        seen = list(ollama.seen)  # type: ignore[attr-defined]
    assert proc.returncode == 1, proc.stderr
    [line] = error_lines(proc.stderr)
    assert "set RECURSIVE_API_KEY (or OPENAI_API_KEY)" in line
    assert f"Ollama answers at http://127.0.0.1:{port}/v1 (models: qwen2.5-coder, llama3.2)" in line
    assert f"--api-base http://127.0.0.1:{port}/v1 -m qwen2.5-coder" in line
    assert "--provider scripted" in line
    assert seen == [("GET", "/v1/models")]  # offered, never used
    assert elapsed < 10


def test_no_key_and_no_local_server_still_names_the_three_ways(workspace: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as silent:  # listens but never answers: the probe must not wait for it
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        ports = ((closed_port(), "Ollama"), (int(silent.getsockname()[1]), "llama.cpp"))
        monkeypatch.setattr(local, "PORTS", ports)
        started = time.monotonic()
        proc = invoke("run", "hi", "-C", str(workspace), "--provider", "anthropic")
        elapsed = time.monotonic() - started
    assert proc.returncode == 1
    [line] = error_lines(proc.stderr)
    assert "set RECURSIVE_API_KEY (or ANTHROPIC_API_KEY)" in line
    assert "--provider openai --api-base http://127.0.0.1:PORT/v1" in line
    assert f"none answers on the usual ports: Ollama {ports[0][0]}, llama.cpp {ports[1][0]}" in line
    assert "--provider scripted --script FILE" in line
    assert elapsed < 5  # the probe's budget is well under a second


def test_a_server_that_wants_a_key_is_named_as_such(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with models_server(401, {"error": "unauthorized"}) as vllm:
        port = int(vllm.server_address[1])
        monkeypatch.setattr(local, "PORTS", ((port, "vLLM"),))
        proc = invoke("run", "hi", "-C", str(workspace), "-m", "mine")
    [line] = error_lines(proc.stderr)
    assert f"vLLM answers at http://127.0.0.1:{port}/v1 (it wants an API key)" in line
    assert f"add --api-base http://127.0.0.1:{port}/v1;" in line  # -m given: no model suggested


def test_a_port_that_is_not_a_model_server_is_not_offered(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with models_server(200, {"hello": "this is some other web app"}) as other:
        monkeypatch.setattr(local, "PORTS", ((int(other.server_address[1]), "llama.cpp"),))
        proc = invoke("run", "hi", "-C", str(workspace))
    assert "none answers on the usual ports" in proc.stderr and "answers at" not in proc.stderr


# -- base-URL mistakes fail fast -----------------------------------------------------------------------


@pytest.mark.parametrize(("value", "fix"), [
    ("127.0.0.1:8000/v1", "has no scheme; add http:// (http://127.0.0.1:8000/v1)"),
    ("localhost:11434/v1", "has no scheme; add http:// (http://localhost:11434/v1)"),
    ("http://127.0.0.1:99999/v1", "has a bad port"),
    ("http://127.0.0.1:80a/v1", "has a bad port"),
    ("http://127.0.0.1:8000 /v1", "contains whitespace"),
    ("http:/127.0.0.1:8000/v1", "needs two slashes"),
    ("ftp://127.0.0.1/v1", "has the scheme ftp://; use http:// or https://"),
    ("http:///v1", "names no host"),
])
def test_a_malformed_base_url_is_a_usage_error_at_once(value: str, fix: str, workspace: Path) -> None:
    started = time.monotonic()
    proc = invoke("run", "hi", "-C", str(workspace), "--api-base", value, env={"RECURSIVE_API_KEY": "x"})
    assert time.monotonic() - started < 10
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: invalid value for api-base (flag): {value!r} {fix}")
    assert proc.stderr.count("\n") == 1 and "retrying" not in proc.stderr


def test_a_malformed_base_url_from_env_or_config_names_its_source(workspace: Path) -> None:
    by_env = invoke("run", "hi", "-C", str(workspace), env={"OPENAI_BASE_URL": "127.0.0.1:8000/v1"})
    assert by_env.returncode == 1  # (as any bad value of a variable; a flag's is 2)
    assert by_env.stderr.startswith("error: invalid value for api-base (env OPENAI_BASE_URL): '127.0.0.1:8000/v1'")
    config = workspace / ".recursive" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "qwen"\napi-base = "localhost:1234/v1"\n')
    by_config = invoke("run", "hi", "-C", str(workspace), "--trust-workspace")
    assert by_config.returncode == 1  # a bad config file found on disk
    assert by_config.stderr.startswith(f"error: invalid value for api-base (project config {config}:2): "
                                       "'localhost:1234/v1' has no scheme; add http://")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_refused_local_connection_fails_within_seconds(host: str, workspace: Path) -> None:
    port = closed_port()
    started = time.monotonic()
    proc = invoke("run", "hi", "-C", str(workspace), "--api-base", f"http://{host}:{port}/v1", "-m", "qwen",
                  "-o", "stream-json", env={"RECURSIVE_API_KEY": "x", "RECURSIVE_RETRY_BASE_DELAY": "1"})
    elapsed = time.monotonic() - started  # (a base delay of 1 s is the real default)
    assert proc.returncode == 75  # unavailable (issue 31)
    [line] = error_lines(proc.stderr)
    assert f"is the server running at http://{host}:{port}?" in line
    retries = [event for event in json_lines(proc.stdout) if event.get("subtype") == "api_retry"]
    assert [event["max_retries"] for event in retries] == [2, 2]  # a brief retry only
    assert sum(event["retry_delay_ms"] for event in retries) <= 1000
    assert elapsed < 10  # today: 26 s of backoff


@pytest.mark.parametrize("model", [["-m", "qwen"], []], ids=["the chat request", "the model list"])
def test_a_name_that_does_not_resolve_fails_at_once(model: list[str], workspace: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    started = time.monotonic()
    proc = invoke("run", "hi", "-C", str(workspace), "--api-base", "http://llm.example.invalid/v1", *model,
                  env={"RECURSIVE_API_KEY": "x", "RECURSIVE_RETRY_BASE_DELAY": "1"})
    assert time.monotonic() - started < 10
    assert proc.returncode == 1 and "retrying" not in proc.stderr
    [line] = error_lines(proc.stderr)
    assert "cannot resolve llm.example.invalid" in line and "check its spelling" in line
    # said once: not "cannot resolve X, …: cannot resolve X: [Errno -2] Name or service not known"
    assert line.count("cannot resolve") == 1 and line.count("Name or service not known") == 1
    assert "[Errno" not in line and line.count("llm.example.invalid/v1") == 1


def _answer_once_then_close(listener: socket.socket, body: bytes) -> None:
    """Serve one HTTP request with `body`, closing the connection, then stop listening."""
    conn, _ = listener.accept()
    with conn:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
        while len(rest) < length:
            rest += conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    listener.close()


def test_a_server_that_answered_then_went_away_gets_the_full_backoff(workspace: Path) -> None:
    reply = {"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
             "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                 "role": "assistant", "content": None, "tool_calls": [{
                     "id": "call_1", "type": "function",
                     "function": {"name": "run_shell", "arguments": json.dumps({"command": "true"})}}]}}],
             "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = int(listener.getsockname()[1])
    server = threading.Thread(target=_answer_once_then_close, args=(listener, json.dumps(reply).encode()),
                              daemon=True)
    server.start()
    proc = invoke("run", "hi", "-C", str(workspace), "--api-base", f"http://127.0.0.1:{port}/v1",
                  "-m", "qwen", "--no-stream", env={"RECURSIVE_API_KEY": "x"})
    server.join(5)
    assert proc.returncode == 75  # unavailable after the retries (issue 31)
    assert "(attempt 5/5)" in proc.stderr  # a restarting server mid-run is waited for, as before
    assert "is the server running" not in proc.stderr


# -- a short key is not masked inside words ------------------------------------------------------------


def test_a_short_key_is_masked_only_where_it_stands_alone(workspace: Path) -> None:
    replies = [{"error": {"status": 404, "message": "model 'qwen' does not exist"}},
               {"error": {"status": 401, "message": "Incorrect API key provided: x. Check your key."}}]
    with FakeLLMServer(replies) as server:
        args = ["run", "hi", "-C", str(workspace), "--api-base", server.openai_base_url, "-m", "qwen", "-v"]
        missing = invoke(*args, env={"RECURSIVE_API_KEY": "x"})
        echoed = invoke(*args, env={"RECURSIVE_API_KEY": "x"})
    [line] = error_lines(missing.stderr)
    assert "model 'qwen' does not exist" in line and "***" not in missing.stderr  # also the -v cause
    [line] = error_lines(echoed.stderr)
    assert "Incorrect API key provided: ***. Check your key." in line


def test_a_long_key_is_masked_even_inside_other_text(workspace: Path) -> None:
    key = "sk-local-0123456789abcdef"
    replies = [{"error": {"status": 401, "message": f"bad credential key={key}&user=me"}}]
    with FakeLLMServer(replies) as server:
        proc = invoke("run", "hi", "-C", str(workspace), "--api-base", server.openai_base_url, "-v",
                      env={"RECURSIVE_API_KEY": key})
    assert key not in proc.stderr and "key=***&user=me" in proc.stderr


# -- packaging: declared dependencies are exactly the imported ones -------------------------------------


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement in `body` and in the blocks nested in it (an import is a statement, so
    no expression needs a look), the `except ImportError:` fallbacks included: what a fallback
    imports must be installed too (click, when typer has no copy of its own)."""
    for node in body:
        yield node
        for block in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(node, block, None) or [])
        for handler in getattr(node, "handlers", None) or []:
            yield from _statements(handler.body)
        for case in getattr(node, "cases", None) or []:
            yield from _statements(case.body)


def _third_party_imports() -> set[str]:
    """Top-level modules the package imports, fallbacks included."""
    names: set[str] = set()
    for path in Path(recursive_cli.__file__).parent.rglob("*.py"):
        for node in _statements(ast.parse(path.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {name for name in names if name not in sys.stdlib_module_names and name != "recursive_cli"}


def test_pyproject_declares_what_the_code_imports() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    # The extras' packages are imported by one command each: Ray by `recursive fleet`
    # (surfaces/fleet), the ACP package by `recursive acp`, OpenTelemetry under --otel.
    extras = project["optional-dependencies"]
    declared = project["dependencies"] + extras["fleet"] + extras["acp"] + extras["otel"]
    def normal(name: str) -> str:  # PEP 503: pydantic_core and pydantic-core are one project
        return re.sub(r"[-_.]+", "-", name).lower()

    def names(specs: list[str]) -> set[str]:
        return {normal(re.split(r"[<>=!~; \[]", spec, maxsplit=1)[0]) for spec in specs}

    distributions = metadata.packages_distributions()
    imported = {normal(name): {normal(dist) for dist in distributions.get(name, [name])}
                for name in _third_party_imports()}
    # Each import is declared (by one of the distributions that provides it: `opentelemetry`
    # is several), and each required dependency is imported.
    assert [name for name, dists in imported.items() if not dists & names(declared)] == []
    assert names(project["dependencies"]) <= set().union(*imported.values())
    imported = set().union(*imported.values())
    assert "httpx" not in imported  # one HTTP client stack: the SDKs' httpx2
