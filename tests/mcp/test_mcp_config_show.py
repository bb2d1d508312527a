"""`recursive config show` lists the MCP servers in force with their origin, without starting
any and without printing a secret; the `mcp-timeout` setting (config files, env, precedence,
bad values) and that the servers are given that long to start, in `run` and `mcp list`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clitools import invoke, wait_gone, write_script
from mcphelpers import demo_entry, servers_json, started_pids

SECRET = "sk-live-from-the-environment-0042"


@pytest.fixture(autouse=True)
def no_timeout_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own MCP timeouts must not change what these tests see."""
    for name in ("MCP_TIMEOUT", "RECURSIVE_MCP_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)


def show(workspace: Path, *args: str, env: dict[str, str | None] | None = None) -> dict[str, Any]:
    result = invoke("config", "show", "--json", "-C", str(workspace), *args, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def servers(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {server["name"]: server for server in data["mcp-servers"]["value"]}


def text_rows(workspace: Path, *args: str, env: dict[str, str | None] | None = None) -> dict[str, list[str]]:
    result = invoke("config", "show", "-C", str(workspace), *args, env=env)
    assert result.returncode == 0, result.stderr
    return {key: rest for key, *rest in (line.split("\t") for line in result.stdout.splitlines())}


def user_file(home: Path, name: str, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / name
    path.write_text(text)
    return path


def project_config(workspace: Path, text: str) -> Path:
    folder = workspace / ".recursive"
    folder.mkdir(exist_ok=True)
    path = folder / "config.toml"
    path.write_text(text)
    return path


# --- the servers in force and where each comes from --------------------------------------------


def test_every_source_with_its_origin_and_the_precedence(workspace: Path, isolated_home: Path, demo_dir: Path) -> None:
    mine = user_file(isolated_home, "mcp.json", servers_json(mine={"command": "user-cmd"},
                                                               shared={"command": "user-cmd"}))
    project = workspace / ".mcp.json"
    project.write_text(servers_json(shared={"command": "project-cmd", "args": ["--x", "two words"]},
                                    proj={"type": "http", "url": "http://127.0.0.1:9/mcp"}))
    extra = workspace.parent / "extra.json"
    extra.write_text(servers_json(old={"type": "sse", "url": "http://127.0.0.1:9/sse"}))
    flag = servers_json(proj={"command": "flag-cmd"})
    data = show(workspace, "--mcp-config", str(extra), "--mcp-config", flag)
    listed = servers(data)
    assert list(listed) == ["mine", "shared", "proj", "old"]
    assert listed["mine"] == {"name": "mine", "transport": "stdio", "command": "user-cmd", "origin": f"user {mine}"}
    where = f"project {project.resolve()}"
    assert listed["shared"] == {"name": "shared", "transport": "stdio", "command": "project-cmd",
                                "args": ["--x", "two words"], "origin": where}
    assert listed["proj"] == {"name": "proj", "transport": "stdio", "command": "flag-cmd",
                              "origin": "--mcp-config (JSON)"}  # the later source wins on a name
    assert listed["old"] == {"name": "old", "transport": "sse", "url": "http://127.0.0.1:9/sse",
                             "origin": f"--mcp-config {extra}"}
    assert data["mcp-servers"]["source"] == f"user {mine}, {where}, --mcp-config (JSON), --mcp-config {extra}"
    rows = text_rows(workspace, "--mcp-config", str(extra), "--mcp-config", flag)
    assert rows["mcp.mine"] == ["stdio: user-cmd", f"user {mine}"]
    assert rows["mcp.shared"] == ["stdio: project-cmd --x 'two words'", where]
    assert rows["mcp.proj"] == ["stdio: flag-cmd", "--mcp-config (JSON)"]
    assert rows["mcp.old"] == ["sse: http://127.0.0.1:9/sse", f"--mcp-config {extra}"]
    assert "mcp-servers" not in rows


def test_strict_keeps_only_the_flags_servers(workspace: Path, isolated_home: Path) -> None:
    user_file(isolated_home, "mcp.json", servers_json(mine={"command": "user-cmd"}))
    (workspace / ".mcp.json").write_text(servers_json(proj={"command": "project-cmd"}))
    flag = servers_json(only={"command": "flag-cmd"})
    assert list(servers(show(workspace, "--mcp-config", flag, "--strict-mcp-config"))) == ["only"]
    data = show(workspace, "--strict-mcp-config")
    assert data["mcp-servers"] == {"value": [], "source": "-"}
    assert text_rows(workspace, "--strict-mcp-config")["mcp-servers"] == ["(none)", "-"]


def test_no_server_is_started(workspace: Path, demo_dir: Path) -> None:
    (workspace / ".mcp.json").write_text(servers_json(demo=demo_entry(), late=demo_entry("--delay", "30")))
    data = show(workspace)
    assert list(servers(data)) == ["demo", "late"]
    assert servers(data)["late"]["args"][-2:] == ["--delay", "30"]
    assert text_rows(workspace)["mcp.demo"][0].startswith("stdio: ")
    assert started_pids(demo_dir) == []  # a demo server writes its pid first thing


def test_secrets_from_the_environment_are_not_printed(workspace: Path) -> None:
    (workspace / ".mcp.json").write_text(servers_json(
        api={"type": "http", "url": "https://example.com/mcp?key=${API_TOKEN}",
             "headers": {"Authorization": "Bearer ${API_TOKEN}", "X-Literal": "literal-token-abcdef9876"}},
        git={"command": "uvx", "args": ["mcp-server-git", "--token", "${API_TOKEN}"],
             "env": {"TOKEN": "${API_TOKEN}", "LEVEL": "${LOG_LEVEL:-info}", "PAT": "ghp_writtenliterally1234"}}))
    env: dict[str, str | None] = {"API_TOKEN": SECRET}
    for result in (invoke("config", "show", "-C", str(workspace), env=env),
                   invoke("config", "show", "--json", "-C", str(workspace), env=env)):
        assert result.returncode == 0, result.stderr
        assert SECRET not in result.stdout
        assert "literal-token-abcdef9876" not in result.stdout and "ghp_writtenliterally1234" not in result.stdout
    listed = servers(show(workspace, env=env))
    assert listed["api"]["url"] == "https://example.com/mcp?key=${API_TOKEN}"
    assert listed["api"]["headers"] == {"Authorization": "Bearer ${API_TOKEN}", "X-Literal": "lit…9876"}
    assert listed["git"]["args"] == ["mcp-server-git", "--token", "${API_TOKEN}"]
    assert listed["git"]["env"] == {"TOKEN": "${API_TOKEN}", "LEVEL": "${LOG_LEVEL:-info}", "PAT": "ghp…1234"}
    rows = text_rows(workspace, env=env)
    assert rows["mcp.api"][0] == ("http: https://example.com/mcp?key=${API_TOKEN}; "
                                  "headers: Authorization=Bearer ${API_TOKEN}, X-Literal=lit…9876")
    assert rows["mcp.git"][0] == ("stdio: uvx mcp-server-git --token '${API_TOKEN}'; "
                                  "env: TOKEN=${API_TOKEN}, LEVEL=${LOG_LEVEL:-info}, PAT=ghp…1234")


def test_a_server_that_cannot_start_says_why(workspace: Path) -> None:
    (workspace / ".mcp.json").write_text(servers_json(
        api={"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${UNSET_TOKEN_XYZ}"}},
        inproc={"type": "sdk", "name": "inproc"}))
    listed = servers(show(workspace, env={"UNSET_TOKEN_XYZ": None}))
    assert listed["api"]["transport"] == "http"
    assert listed["api"]["problem"].startswith("environment variable UNSET_TOKEN_XYZ is not set")
    assert listed["inproc"]["transport"] == "sdk" and "problem" not in listed["inproc"]  # (an Agent SDK's own)
    rows = text_rows(workspace, env={"UNSET_TOKEN_XYZ": None})
    assert "; cannot start: environment variable UNSET_TOKEN_XYZ is not set" in rows["mcp.api"][0]
    assert rows["mcp.inproc"][0].startswith("sdk")


def test_a_malformed_mcp_file_names_file_and_key_exit_1_on_disk_2_by_flag(workspace: Path) -> None:
    config = workspace / ".mcp.json"
    config.write_text(servers_json(bad={"command": "x", "args": "not-a-list"}))
    result = invoke("config", "show", "-C", str(workspace))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"error: {config.resolve()}: mcpServers.bad.args: expected a list of strings\n"
    result = invoke("config", "show", "--json", "-C", str(workspace), "--strict-mcp-config",
                    "--mcp-config", "{not json")
    assert result.returncode == 2 and result.stderr.startswith("error: --mcp-config (JSON): not valid JSON")


# --- mcp-timeout --------------------------------------------------------------------------------


def test_mcp_timeout_default_files_env_and_claudes_variable(workspace: Path, isolated_home: Path) -> None:
    assert show(workspace)["mcp-timeout"] == {"value": "30.0", "source": "default"}
    assert show(workspace, env={"MCP_TIMEOUT": "45000"})["mcp-timeout"] == {
        "value": "45.0", "source": "env MCP_TIMEOUT (ms)"}
    user = user_file(isolated_home, "config.toml", 'mcp-timeout = "2m"\n')
    assert show(workspace)["mcp-timeout"] == {"value": "120.0", "source": f"user config {user}:1"}
    project = project_config(workspace, '# slow servers here\nmcp_timeout = 90\n')
    expected = {"value": "90.0", "source": f"project config {project}:2"}
    assert show(workspace)["mcp-timeout"] == expected
    assert show(workspace, env={"MCP_TIMEOUT": "5000"})["mcp-timeout"] == expected  # ours wins over Claude's
    assert show(workspace, env={"RECURSIVE_MCP_TIMEOUT": "1m30s"})["mcp-timeout"] == {
        "value": "90.0", "source": "env RECURSIVE_MCP_TIMEOUT"}
    assert text_rows(workspace)["mcp-timeout"] == ["90.0", f"project config {project}:2"]


@pytest.mark.parametrize(("value", "accepts"), [
    ('"soon"', "expected a duration like 90 (seconds), 90s, 20m, 2h or 1h30m (got 'soon')"),
    ('"0s"', "expected a duration of more than 0, like 90s, 20m or 2h (got '0s')"),
    ("-5", "expected a duration of more than 0, like 90s, 20m or 2h (got -5)"),
    ("true", "expected a duration like 90 (seconds), 90s, 20m, 2h or 1h30m (got True)"),
])
def test_a_bad_mcp_timeout_in_config_names_the_file_and_key(value: str, accepts: str, workspace: Path) -> None:
    config = project_config(workspace, f"mcp-timeout = {value}\n")
    for command in (["config", "show"], ["mcp", "list"], ["run", "hi", "--provider", "scripted"]):
        result = invoke(*command, "-C", str(workspace))
        assert (result.returncode, result.stdout) == (1, ""), (command, result.stderr)
        assert result.stderr == f"error: invalid value for mcp-timeout (project config {config}:1): {accepts}\n"


def test_a_bad_mcp_timeout_in_the_environment_names_the_variable(workspace: Path) -> None:
    result = invoke("config", "show", "-C", str(workspace), env={"RECURSIVE_MCP_TIMEOUT": "soon"})
    assert result.returncode == 1
    assert result.stderr == ("error: invalid value for mcp-timeout (env RECURSIVE_MCP_TIMEOUT): expected a "
                             "duration like 90 (seconds), 90s, 20m, 2h or 1h30m (got 'soon')\n")
    result = invoke("config", "show", "-C", str(workspace), env={"MCP_TIMEOUT": "-1"})
    assert result.returncode == 1  # a variable's, as RECURSIVE_MCP_TIMEOUT's
    assert result.stderr == "error: MCP_TIMEOUT: the MCP start-up timeout must be more than 0 (got '-1')\n"


def late_servers(workspace: Path) -> None:
    """A server that takes 30 s to start, deaf to its stdin meanwhile (it must be killed);
    `mcp-timeout = "1s"` in the project config."""
    (workspace / ".mcp.json").write_text(servers_json(late=demo_entry("--delay", "30")))
    project_config(workspace, 'mcp-timeout = "1s"\n')


def assert_stopped(demo_dir: Path) -> None:
    pids = started_pids(demo_dir)
    assert len(pids) == 1 and wait_gone(pids[0], timeout=10), pids


def test_run_gives_servers_the_configured_time_to_start(workspace: Path, demo_dir: Path) -> None:
    late_servers(workspace)
    script = write_script(workspace.parent / "script.json", [{"text": "done"}])
    result = invoke("run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                    "-o", "stream-json", env={"MCP_TIMEOUT": "600000"})
    assert result.returncode == 0, result.stderr
    assert "warning: MCP server 'late' failed to start: did not start within 1 s" in result.stderr
    init = json.loads(result.stdout.splitlines()[0])
    assert init["mcp_servers"] == [{"name": "late", "status": "failed"}]
    assert_stopped(demo_dir)


def test_mcp_list_gives_servers_the_configured_time_to_start(workspace: Path, demo_dir: Path) -> None:
    late_servers(workspace)
    result = invoke("mcp", "list", "--json", "-C", str(workspace), env={"MCP_TIMEOUT": "600000"})
    assert result.returncode == 1
    (late,) = json.loads(result.stdout)
    assert late["status"] == "failed" and "did not start within 1 s" in late["error"]
    assert_stopped(demo_dir)

