"""A header that would be two on the wire is refused before a byte is sent (issue 28).

"Bearer t\\r\\nX-Injected: 1" written after `Authorization: ` ends that line and starts a header
of its writer's choosing. Such a value can come from an `.mcp.json` entry's `headers` (a file
anyone with write access to the workspace wrote, or a `${VAR}` expanded into it) or from an API
key in the environment. Each is refused with one line naming where it came from; the loopback
servers here count what reached them: nothing.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from clitools import invoke, write_script
from providers.hostile import HostileServer, model_args, raw, response
from providers.test_http1 import RawServer, answer, fixed

from recursive_cli.core.errors import HeaderRefused
from recursive_cli.net import http1

INJECTED = "1\r\nX-Injected: 1"


@pytest.mark.parametrize("value", [INJECTED, "1\nX-Injected: 1", "1\rX", "a\x00b"])
def test_the_transport_refuses_a_header_value_with_a_line_break_or_nul(value: str) -> None:
    async def send(fixed_headers: dict[str, str], extra: dict[str, str] | None) -> None:
        client = http1.Client(fixed_headers, 5.0)
        try:
            await client.request("POST", url, b"{}", extra)
        finally:
            await client.aclose()

    with RawServer(fixed(answer(b"never"))) as server:
        url = server.url
        with pytest.raises(HeaderRefused) as fixed_one:
            asyncio.run(send({"X-Team": value}, None))
        with pytest.raises(HeaderRefused) as per_request:
            asyncio.run(send({}, {"X-Team": value}))
        with pytest.raises(HeaderRefused, match="refused to send the header 'X\\\\nY'"):
            asyncio.run(send({"X\nY": "1"}, None))
        assert server.connections == 0 and server.requests == []
    assert str(fixed_one.value) == str(per_request.value)
    assert str(fixed_one.value).startswith("refused to send the header 'X-Team': its value holds a line break or NUL")
    assert "\n" not in str(fixed_one.value)


def mcp_entry(url: str, header: str) -> dict[str, object]:
    return {"mcpServers": {"api": {"type": "http", "url": f"{url}/mcp", "headers": {"X-Team": header}}}}


@pytest.mark.parametrize("source", ["user-file", "flag-file", "variable"])
def test_an_mcp_header_with_a_line_break_is_a_config_error_naming_server_and_header(
        source: str, tmp_path: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "script.json", [{"text": "done"}])
    with RawServer(fixed(answer(b"{}", "Content-Type: application/json"))) as server:
        written = "${TEAM}" if source == "variable" else INJECTED
        config = json.dumps(mcp_entry(server.url, written))
        flags: list[str] = []
        if source == "flag-file":
            (tmp_path / "servers.json").write_text(config)
            flags = ["--mcp-config", str(tmp_path / "servers.json")]
        else:
            isolated_home.mkdir(parents=True, exist_ok=True)
            (isolated_home / "mcp.json").write_text(config)
        result = invoke("run", "hi", "--provider", "scripted", "--script", str(script), *flags,
                        env={"TEAM": INJECTED})
        reached = server.requests
    assert reached == []  # nothing was sent: no injected header, nor any other
    # a file found on disk (the user's mcp.json): exit 1; named on the command line: exit 2 (SPEC §13)
    assert result.returncode == (2 if source == "flag-file" else 1), result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.strip()]
    assert "mcpServers.api.headers.'X-Team': refused: its value holds a line break or NUL" in line, line
    assert "Traceback" not in result.stderr and "X-Injected" not in result.stderr


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_api_key_with_a_line_break_is_refused_before_any_request(provider: str) -> None:
    with HostileServer(raw(response("200 OK", b"{}", "Content-Type: application/json"))) as server:
        result = invoke("run", "hi", *model_args(provider, server.url),
                        env={"RECURSIVE_API_KEY": f"sk-abc{INJECTED}"})
        reached = server.requests
    assert reached == []
    assert result.returncode == 1, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.strip()]
    assert "the API key (RECURSIVE_API_KEY or " in line and "holds a line break or NUL" in line, line
    assert "sk-abc" not in result.stderr and "Traceback" not in result.stderr
