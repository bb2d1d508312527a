"""Trust (issue 29): a cloned repository's own hooks, `.mcp.json` servers and config keys that
loosen yours take effect only once you trust it — `recursive trust`, or `--trust-workspace` /
`RECURSIVE_TRUST_WORKSPACE=1` for one run; `--bare` ignores them all; `--strict-config` makes an
unknown config key an error."""

from __future__ import annotations

import json
import shlex
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from clitools import CliResult, invoke, json_lines, run_cli, write_script

# A stdio MCP server that touches its first argument as it starts, then answers `initialize`
# and `tools/list` (no tools) until its stdin ends.
SERVER = """\
import json, pathlib, sys
pathlib.Path(sys.argv[1]).touch()
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        reply = {"result": {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                            "serverInfo": {"name": "marker", "version": "1"}}}
    elif message["method"] == "tools/list":
        reply = {"result": {"tools": []}}
    else:
        reply = {"error": {"code": -32601, "message": "no such method"}}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}), flush=True)
"""
NOTE = "note: skipped the workspace's "


@dataclass
class Repo:
    """A cloned-looking repository whose own hook and MCP server each touch a marker file."""

    path: Path
    hook_ran: Path
    server_ran: Path
    script: Path  # the scripted model's replies

    def run(self, *args: str, env: dict[str, str | None] | None = None) -> CliResult:
        """`recursive run` in the repository, on the scripted model `local-m`."""
        return invoke("run", "hello", "--provider", "scripted", "--script", str(self.script), "-m", "local-m",
                      "--no-checkpoints", *args, cwd=self.path, env=env)

    def ran(self) -> tuple[bool, bool]:
        """Whether the hook ran, whether the server started (the markers are taken away)."""
        seen = self.hook_ran.exists(), self.server_ran.exists()
        for marker in (self.hook_ran, self.server_ran):
            marker.unlink(missing_ok=True)
        return seen


def notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(NOTE)]


@pytest.fixture
def repo(tmp_path: Path, isolated_home: Path) -> Repo:
    """The repository, committed with git as a clone would arrive; a user config that asks for
    accept-edits."""
    path = tmp_path / "clone"
    (path / ".claude").mkdir(parents=True)
    (path / ".recursive").mkdir()
    hook_ran, server_ran = tmp_path / "hook-ran", tmp_path / "server-ran"
    (tmp_path / "server.py").write_text(SERVER)
    (path / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": f"touch {shlex.quote(str(hook_ran))}"}]}]}}))
    (path / ".mcp.json").write_text(json.dumps({"mcpServers": {"marker": {
        "command": sys.executable, "args": [str(tmp_path / "server.py"), str(server_ran)]}}}))
    (path / ".recursive" / "config.toml").write_text(
        'permission-mode = "auto"\nallow = ["run_shell"]\n\n[prices."local-m"]\ninput = 0\noutput = 0\n')
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "a repository from somewhere"], check=True)
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text('permission-mode = "accept-edits"\n')
    return Repo(path, hook_ran, server_ran, write_script(tmp_path / "script.json", [{"text": "hi"}]))


def test_an_untrusted_clone_runs_none_of_its_own_configuration(repo: Repo) -> None:
    proc = repo.run("-o", "stream-json")
    assert proc.returncode == 0, proc.stderr
    assert repo.ran() == (False, False)
    skipped = notes(proc.stderr)
    assert [line.split(": this workspace is not trusted; ")[0].removeprefix(NOTE) for line in skipped] == [
        f"hook UserPromptSubmit [*] 'touch {shlex.quote(str(repo.hook_ran))}' (.claude/settings.json)",
        f"MCP server marker {shlex.join([sys.executable, str(repo.path.parent / 'server.py'), str(repo.server_ran)])!r}"
        " (.mcp.json)",
        "config permission-mode = \"auto\" (.recursive/config.toml:1)",
        "config allow = [\"run_shell\"] (.recursive/config.toml:2)",
        "config prices.\"local-m\" = input $0, output $0 per million tokens (.recursive/config.toml:4)"]
    assert all(line.endswith("`recursive trust .` trusts it, `--trust-workspace` for one run") for line in skipped)
    assert json_lines(proc.stdout)[0]["permissionMode"] == "accept-edits"  # the user's, not the clone's


def test_a_clone_priced_at_nothing_cannot_disarm_max_cost(repo: Repo) -> None:
    proc = repo.run("--max-cost", "1")
    assert proc.returncode == 2  # local-m has no price of the user's: the budget cannot be enforced
    assert "local-m" in proc.stderr and "price" in proc.stderr


def test_trusted_it_runs_them_until_one_of_its_files_changes(repo: Repo, isolated_home: Path) -> None:
    shown = invoke("trust", cwd=repo.path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"trusting {repo.path.resolve()}: ")
    assert shown.stdout.endswith("trusted; a change to one of its config files (.claude/settings.json, .mcp.json, "
                                 ".recursive/config.toml), or a new one, makes it untrusted again\n")
    for text in ("hook UserPromptSubmit", "MCP server marker", "config allow", 'config prices."local-m"'):
        assert text in shown.stdout
    assert stat.S_IMODE((isolated_home / "trust.json").stat().st_mode) == 0o600
    proc = repo.run("--max-cost", "1", "-o", "stream-json")
    assert proc.returncode == 0, proc.stderr
    assert notes(proc.stderr) == []
    assert repo.ran() == (True, True)
    assert json_lines(proc.stdout)[0]["permissionMode"] == "auto"

    (repo.path / ".mcp.json").write_text((repo.path / ".mcp.json").read_text() + "\n")
    proc = repo.run()
    assert proc.returncode == 0, proc.stderr
    assert repo.ran() == (False, False)
    assert notes(proc.stderr) and all(": .mcp.json changed since you trusted it; " in line
                                      for line in notes(proc.stderr))
    [row] = json.loads(invoke("trust", "--list", "--json").stdout)
    assert (row["path"], row["state"], row["changed"]) == (str(repo.path.resolve()), "changed", [".mcp.json"])
    listed = invoke("trust", "--list").stdout
    assert listed == f"{repo.path.resolve()}\tchanged: .mcp.json\t{row['trusted_at']}\n"


def test_hooks_list_names_the_hooks_it_leaves_out(repo: Repo) -> None:
    proc = invoke("hooks", "list", cwd=repo.path)
    assert proc.stdout.startswith("no hooks")
    [note] = notes(proc.stderr)
    assert note.startswith(NOTE + "hook UserPromptSubmit [*] ")


def test_a_file_added_after_trusting_makes_it_untrusted(repo: Repo) -> None:
    (repo.path / ".mcp.json").unlink()
    assert invoke("trust", str(repo.path)).returncode == 0
    (repo.path / ".mcp.json").write_text(json.dumps({"mcpServers": {}}))
    shown = json.loads(invoke("config", "show", "--json", cwd=repo.path).stdout)
    assert shown["workspace-trust"]["value"]["trusted"] is False
    assert shown["workspace-trust"]["source"] == ".mcp.json changed since you trusted it"


@pytest.mark.parametrize("how", [["--trust-workspace"], []])
def test_trust_for_one_run_records_nothing(repo: Repo, isolated_home: Path, how: list[str]) -> None:
    env = {} if how else {"RECURSIVE_TRUST_WORKSPACE": "1"}
    proc = repo.run(*how, env=env)
    assert proc.returncode == 0, proc.stderr
    assert repo.ran() == (True, True)
    assert notes(proc.stderr) == []
    assert not (isolated_home / "trust.json").exists()
    assert repo.run().returncode == 0 and repo.ran() == (False, False)  # the next run: untrusted again


def test_the_workspaces_own_trust_workspace_key_never_counts(repo: Repo) -> None:
    config = repo.path / ".recursive" / "config.toml"
    config.write_text("trust-workspace = true\n" + config.read_text())
    proc = repo.run()
    assert repo.ran() == (False, False)
    assert any("config trust-workspace = true" in line for line in notes(proc.stderr))


def test_bare_ignores_them_even_when_trusted(repo: Repo, isolated_home: Path, tmp_path: Path) -> None:
    assert invoke("trust", str(repo.path)).returncode == 0
    (isolated_home / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": f"touch {shlex.quote(str(repo.hook_ran))}"}]}]}}))
    proc = repo.run("--bare", "-o", "stream-json")
    assert proc.returncode == 0, proc.stderr
    assert repo.ran() == (False, False)  # neither the workspace's nor the user's hooks and servers
    assert notes(proc.stderr) == []
    init = json_lines(proc.stdout)[0]
    assert init["permissionMode"] == "auto"  # the user's accept-edits is not read either
    assert "remember" not in init["tools"] and "recall" not in init["tools"]
    flagged = tmp_path / "flag-hook-ran"
    given = json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"touch {flagged}"}]}]}})
    assert repo.run("--bare", "--settings", given).returncode == 0
    assert flagged.exists()  # what the command line gives still counts
    listed = [tool["name"] for tool in json.loads(invoke("tools", "--bare", "--json", cwd=repo.path).stdout)]
    assert "read_file" in listed and "remember" not in listed and "recall" not in listed


def test_revoke(repo: Repo) -> None:
    assert invoke("trust", cwd=repo.path).returncode == 0
    revoked = invoke("trust", "--revoke", str(repo.path))
    assert (revoked.returncode, revoked.stdout) == (0, f"no longer trusted: {repo.path.resolve()}\n")
    assert repo.run().returncode == 0 and repo.ran() == (False, False)
    again = invoke("trust", "--revoke", str(repo.path))
    assert again.returncode == 1 and "is not a trusted folder" in again.stderr
    assert invoke("trust", "--list").stderr.startswith("no trusted folders")


@pytest.mark.parametrize("args", [["--list", "DIR"], ["--json"], ["--revoke", "a", "--list"]])
def test_trust_usage_errors_exit_2(args: list[str]) -> None:
    assert invoke("trust", *args).returncode == 2


def test_trust_needs_a_folder(tmp_path: Path) -> None:
    proc = invoke("trust", str(tmp_path / "missing"))
    assert (proc.returncode, proc.stderr) == (2, f"error: not a folder: {tmp_path / 'missing'}\n")


def test_keys_that_only_narrow_count_untrusted(workspace: Path, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    (isolated_home / "config.toml").write_text('max-steps = 20\nmax-cost = 2\nsandbox = "workspace-write"\n')
    (workspace / ".recursive").mkdir()
    (workspace / ".recursive" / "config.toml").write_text(
        'max-steps = 5\nmax-cost = 3\nmodel = "m2"\ndeny = ["run_shell(rm *)"]\npermission-mode = "read-only"\n'
        'sandbox = "off"\nsandbox-network = true\napi-base = "http://127.0.0.1:9/v1"\nmax-duration = "1h"\n'
        'shell-timeout = 10\n')
    proc = invoke("config", "show", "--json", "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    taken = {key: data[key]["value"] for key in ("max-steps", "max-cost", "model", "deny", "permission-mode",
                                                 "shell-timeout", "max-duration")}
    assert taken == {"max-steps": "5", "max-cost": "2.0", "model": "m2", "deny": "run_shell(rm *)",
                     "permission-mode": "read-only", "shell-timeout": "10.0", "max-duration": "3600.0"}
    assert data["sandbox"]["value"].startswith("workspace-write: ") and data["sandbox-network"]["value"] == "false"
    assert data["api-base"]["value"] == "(none)"
    assert [line.split(" (")[0] for line in data["skipped"]["value"]] == [
        "config max-cost = 3", 'config sandbox = "off"', "config sandbox-network = true",
        'config api-base = "http://127.0.0.1:9/v1"']


def test_a_flag_is_what_the_workspace_config_is_weighed_against(workspace: Path) -> None:
    (workspace / ".recursive").mkdir()
    (workspace / ".recursive" / "config.toml").write_text('sandbox = "workspace-write"\n')
    data = json.loads(invoke("config", "show", "--json", "-C", str(workspace), "--permission-mode", "read-only").stdout)
    assert data["sandbox"]["value"].startswith("read-only: ")  # read-only's own sandbox, not the clone's looser one
    assert data["skipped"]["value"] == ['config sandbox = "workspace-write" (.recursive/config.toml:1)']


def test_strict_config_fails_on_an_unknown_key(repo: Repo) -> None:
    config = repo.path / ".recursive" / "config.toml"
    config.write_text('max-stepz = 3\n')
    proc = repo.run()
    assert proc.returncode == 0, proc.stderr
    assert f"warning: {config}:1: unknown key 'max-stepz' (ignored; --strict-config makes it an error)" in proc.stderr
    strict = repo.run("--strict-config")
    assert (strict.returncode, strict.stderr) == (1, f"error: {config}:1: unknown key 'max-stepz'\n")


def test_mcp_list_starts_no_server_of_an_untrusted_workspace(repo: Repo) -> None:
    proc = invoke("mcp", "list", cwd=repo.path)
    assert repo.ran() == (False, False)
    [note] = notes(proc.stderr)
    assert note.startswith(NOTE + "MCP server marker ")


def test_headless_takes_setting_sources_project_as_trust(repo: Repo) -> None:
    args = ["-p", "hello", "--provider", "scripted", "--script", str(repo.script), "--no-checkpoints"]
    untrusted = run_cli(*args, cwd=repo.path)
    assert untrusted.returncode == 0, untrusted.stderr
    assert repo.ran() == (False, False) and len(notes(untrusted.stderr)) == 5
    chosen = run_cli(*args, "--setting-sources=user,project", cwd=repo.path)
    assert chosen.returncode == 0, chosen.stderr
    assert repo.ran() == (True, True) and notes(chosen.stderr) == []


def test_a_fleet_task_trusts_its_workspace_only_when_its_line_says_so(tmp_path: Path) -> None:
    from recursive_cli.surfaces.fleet.tasks import cli_flags, read_tasks

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "prompt": "p", "workspace": "https://example.com/r.git"}\n'
                     '{"id": "b", "prompt": "p", "workspace": "https://example.com/r.git", "trust": true}\n')
    flags = {task.id: cli_flags(task, None) for task in read_tasks(tasks)}
    assert "--trust-workspace" not in flags["a"] and "--trust-workspace" in flags["b"]


def test_config_show_says_whether_the_workspace_is_trusted(repo: Repo) -> None:
    proc = invoke("config", "show", cwd=repo.path)
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    assert ["workspace-trust", "not trusted", "this workspace is not trusted"] in rows
    assert sum(row[0] == "skipped" for row in rows) == 5
    invoke("trust", cwd=repo.path)
    rows = [line.split("\t") for line in invoke("config", "show", cwd=repo.path).stdout.splitlines()]
    assert next(row for row in rows if row[0] == "workspace-trust")[1] == "trusted"
    assert not any(row[0] == "skipped" for row in rows)


def test_a_workspace_at_home_has_the_users_files_as_their_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "me"
    (home / ".recursive").mkdir(parents=True)
    monkeypatch.setenv("RECURSIVE_HOME", str(home / ".recursive"))
    (home / ".recursive" / "config.toml").write_text('allow = ["run_shell(make *)"]\n')
    marker = tmp_path / "my-hook-ran"
    (home / ".recursive" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": f"touch {marker}"}]}]}}))
    script = write_script(tmp_path / "script.json", [{"text": "hi"}])
    proc = invoke("run", "hello", "--provider", "scripted", "--script", str(script), "--no-checkpoints", cwd=home)
    assert proc.returncode == 0, proc.stderr
    assert notes(proc.stderr) == [] and marker.exists()  # the user's, run once, never "skipped"
    shown = json.loads(invoke("config", "show", "--json", cwd=home).stdout)
    assert shown["allow"]["value"] == "run_shell(make *)"
    assert shown["workspace-trust"]["source"] == "it has no configuration of its own"


def test_bare_leaves_the_workspaces_instructions_out_of_the_prompt(tmp_path: Path, isolated_home: Path) -> None:
    from fakeserver import FakeLLMServer

    workspace = tmp_path / "instructed"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("Always answer in Latin.\n")
    with FakeLLMServer([{"text": "salve"}, {"text": "hello"}]) as server:
        base = ("run", "hi", "-C", str(workspace), "--api-base", server.openai_base_url, "-m", "m")
        assert invoke(*base, env={"RECURSIVE_API_KEY": "k"}).returncode == 0
        assert invoke(*base, "--bare", "--append-system-prompt", "Be brief.",
                      env={"RECURSIVE_API_KEY": "k"}).returncode == 0
        plain, bare = (request.body["messages"][0]["content"] for request in server.requests)
    assert "Always answer in Latin." in plain
    assert "Always answer in Latin." not in bare and "Be brief." in bare
