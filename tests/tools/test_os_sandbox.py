"""The OS sandbox around the agent's commands (issue 29), through the CLI with real bubblewrap,
real Landlock and real processes: a scripted model calls `run_shell` (and, in a loop,
`run_background`) to write outside the workspace, into $HOME, into RECURSIVE_HOME, into a
repository's git hooks, and to connect to a loopback listener the test holds open."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clitools import host_pid, invoke, json_lines, run_cli, wait_gone, wait_until, write_script

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None and not os.environ.get("CI"),
                                reason="bubblewrap is not installed (CI installs it)")


def shell(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_shell", "arguments": {"command": command}}]}


def run(tmp_path: Path, workspace: Path, replies: list[dict[str, Any]], *flags: str,
        env: dict[str, str | None] | None = None) -> tuple[int, list[dict[str, Any]], str]:
    """One scripted `recursive run`: exit code, stream-json lines, stderr."""
    script = write_script(tmp_path / "script.json", [*replies, {"text": "done"}])
    proc = invoke("run", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                  "-o", "stream-json", *flags, env=env)
    return proc.returncode, json_lines(proc.stdout), proc.stderr


def results(lines: list[dict[str, Any]]) -> list[str]:
    return [block["content"] for line in lines if line["type"] == "user"
            for block in line["message"]["content"] if block["type"] == "tool_result"]


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback TCP listener; what each connection sent is appended to the list."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    received: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                received.append(conn.recv(100))

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1], received
    server.close()


def connect(port: int) -> str:
    return (f"{sys.executable} -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), 2); "
            "s.sendall(b'hello'); s.close(); print('connected')\"")


def test_workspace_write_keeps_writes_in_the_workspace_and_off_the_network(
        tmp_path: Path, workspace: Path, isolated_home: Path, listener: tuple[int, list[bytes]]) -> None:
    port, received = listener
    home = tmp_path / "home"
    home.mkdir()
    outside = tmp_path / "outside.txt"
    code, lines, stderr = run(tmp_path, workspace, [
        shell("echo in > inside.txt && cat inside.txt"),
        shell(f"echo out > {outside}"),
        shell("echo key > ~/.ssh_planted"),
        shell(f"echo x > {isolated_home}/planted"),
        shell(connect(port)),
        shell('echo t > "$TMPDIR/scratch" && cat "$TMPDIR/scratch" && echo "$TMPDIR"'),
    ], env={"HOME": str(home)})
    assert code == 0, stderr
    inside, out, in_home, in_rhome, net, temp = results(lines)
    assert inside.startswith("in\n") and (workspace / "inside.txt").read_text() == "in\n"
    for refused, what in ((out, outside), (in_home, home / ".ssh_planted"), (in_rhome, isolated_home / "planted")):
        assert "Read-only file system" in refused
        assert "blocked by the sandbox: writing outside the workspace is not allowed (workspace-write)" in refused
        assert not what.exists()
    assert "connected" not in net and "the sandbox" in net, net
    assert received == []
    assert temp.startswith("t\n") and temp.split("\n")[1] != os.environ.get("TMPDIR", "/tmp")  # a private one
    init = lines[0]
    assert init["type"] == "system" and init["subtype"] == "init"


def test_sandbox_off_and_network_flags_let_commands_out(tmp_path: Path, workspace: Path, isolated_home: Path,
                                                       listener: tuple[int, list[bytes]]) -> None:
    port, received = listener
    outside = tmp_path / "outside.txt"
    code, lines, stderr = run(tmp_path, workspace, [shell(f"echo out > {outside}"), shell(connect(port))],
                              "--sandbox", "off")
    assert code == 0, stderr
    assert outside.read_text() == "out\n" and received == [b"hello"]
    outside.unlink()
    code, lines, stderr = run(tmp_path, workspace, [shell(f"echo out > {outside}"), shell(connect(port))],
                              "--sandbox-network")
    assert code == 0, stderr
    write, net = results(lines)
    assert "Read-only file system" in write and not outside.exists()  # the network only
    assert net.startswith("connected") and received == [b"hello", b"hello"]
    code, lines, stderr = run(tmp_path, workspace, [shell(f"echo out > {outside}")],
                              env={"RECURSIVE_SANDBOX": "off"})
    assert code == 0 and outside.exists()


def test_read_only_refuses_writes_in_the_workspace_too(tmp_path: Path, workspace: Path,
                                                       isolated_home: Path) -> None:
    code, lines, stderr = run(tmp_path, workspace, [
        shell("echo in > inside.txt"),
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "tool.txt", "content": "x"}}]},
        shell("ls /"),
    ], "--sandbox", "read-only")
    assert code == 0, stderr
    shell_write, tool_write, reading = results(lines)
    assert "blocked by the sandbox: writing anything is not allowed (read-only)" in shell_write
    assert "blocked by the sandbox" in tool_write and "read-only" in tool_write
    assert "usr" in reading
    assert not (workspace / "inside.txt").exists() and not (workspace / "tool.txt").exists()
    # The read-only permission mode chooses the read-only sandbox by default.
    system = json.dumps(lines[0])
    assert "read-only" in system or lines[0]["permissionMode"] == "auto"


def test_a_repositorys_git_hooks_and_config_stay_read_only(tmp_path: Path, workspace: Path,
                                                           isolated_home: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    code, lines, stderr = run(tmp_path, workspace, [
        shell("echo 'touch /tmp/pwned' > .git/hooks/pre-commit"),
        shell("git config user.name planted"),
        shell("git -c user.name=a -c user.email=a@b commit -q --allow-empty -m one && echo committed"),
    ])
    assert code == 0, stderr
    hook, config, commit = results(lines)
    assert "Read-only file system" in hook and not (workspace / ".git/hooks/pre-commit").exists()
    assert "planted" not in (workspace / ".git/config").read_text()
    assert commit.startswith("committed")  # the rest of .git works: commits, refs, the index


def test_the_system_prompt_says_what_commands_may_do(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    from fakeserver import FakeLLMServer

    with FakeLLMServer([{"text": "ok"}]) as server:
        proc = invoke("run", "hi", "-C", str(workspace), "--api-base", server.openai_base_url, "-m", "m",
                      env={"RECURSIVE_API_KEY": "k"})
        assert proc.returncode == 0, proc.stderr
        system = server.requests[0].body["messages"][0]["content"]
    assert (f"Sandbox: workspace-write: commands may write only inside {workspace.resolve()} and a private "
            "temp folder ($TMPDIR), and have no network (loopback included)") in system


def test_a_background_job_is_contained_the_same_way(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    outside = tmp_path / "outside.txt"
    replies = [{"tool_calls": [{"name": "run_background",
                                "arguments": {"command": f"echo in > in.txt; echo out > {outside}; echo finished"}}]},
               {"text": "waiting"}, {"text": "seen it"}]
    script = write_script(tmp_path / "loop.json", replies)
    proc = invoke("loop", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script))
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "in.txt").read_text() == "in\n" and not outside.exists()


def test_without_bubblewrap_the_run_refuses_to_start(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    (empty / "bash").symlink_to(shutil.which("bash") or "/bin/bash")
    outside = tmp_path / "outside.txt"
    code, lines, stderr = run(tmp_path, workspace, [shell(f"echo out > {outside}")], env={"PATH": str(empty)})
    assert code == 2 and lines == []
    assert stderr.splitlines() == [
        "error: --sandbox workspace-write needs bubblewrap (bwrap), which is not on PATH: install bubblewrap "
        "(Debian/Ubuntu: `apt install bubblewrap`, Fedora: `dnf install bubblewrap`, Arch: `pacman -S "
        "bubblewrap`) or pass --sandbox off"]
    code, lines, stderr = run(tmp_path, workspace, [shell(f"echo out > {outside}")], "--sandbox", "off",
                              env={"PATH": str(empty)})
    assert code == 0 and outside.exists(), stderr


def test_the_second_line_holds_alone(tmp_path: Path, workspace: Path, listener: tuple[int, list[bytes]]) -> None:
    """Landlock by itself (sandbox_init.restrict, no bubblewrap): writes beneath the writable
    folders only, no TCP but the ports allowed."""
    from recursive_cli.tools.os_sandbox import INIT, landlock_abi

    if landlock_abi() < 4:
        pytest.skip("this kernel has no Landlock with TCP rules")
    port, received = listener
    outside = tmp_path / "outside.txt"
    command = (f"echo in > {workspace}/in.txt; echo out > {outside}; {connect(port)}; "
               f"{connect(port + 1 if port < 65535 else port - 1)}; echo done")
    stage = (f"import os, sys; sys.path.insert(0, {str(Path(INIT).parent)!r}); import sandbox_init; "
             f"sandbox_init.restrict([{str(workspace)!r}], True, [{port}]); os.execvp('bash', ['bash', '-c', sys.argv[1]])")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", stage, command], capture_output=True, text=True, timeout=30)
    assert "Permission denied" in done.stderr and done.stdout.splitlines() == ["connected", "done"], done
    assert (workspace / "in.txt").exists() and not outside.exists()
    assert received == [b"hello"]  # the allowed port, and only it


def test_an_allowed_port_is_the_one_way_out(tmp_path: Path, workspace: Path, isolated_home: Path,
                                          listener: tuple[int, list[bytes]]) -> None:
    port, received = listener
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        code, lines, stderr = run(tmp_path, workspace, [shell(connect(port)), shell(connect(other.getsockname()[1]))],
                                  "--sandbox-allow-port", str(port))
    assert code == 0, stderr
    allowed, refused = results(lines)
    assert allowed.startswith("connected") and received == [b"hello"]
    assert "connected" not in refused and "the sandbox" in refused
    replies = [{"tool_calls": [{"name": "run_background", "arguments": {"command": connect(port)}}]},
               {"text": "waiting"}, {"text": "seen it"}]
    script = write_script(tmp_path / "loop.json", replies)
    proc = invoke("loop", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
                  "--sandbox-allow-port", str(port))
    assert proc.returncode == 0, proc.stderr
    assert received == [b"hello", b"hello"]  # a background job goes the same way


def test_kill_9_of_the_run_takes_its_command_with_it(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "s.json", [shell("sleep 300 & echo $! > child.pid; echo $$ > shell.pid; wait"),
                                                {"text": "never"}])
    agent = subprocess.Popen([sys.executable, "-m", "recursive_cli", "run", "go", "-C", str(workspace),
                              "--provider", "scripted", "--script", str(script), "--session-id", "k9"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, "RECURSIVE_HOME": str(isolated_home)})
    try:
        wait_until(lambda: all((workspace / name).is_file() and (workspace / name).read_text().strip()
                               for name in ("shell.pid", "child.pid")), proc=agent)
        shell_pid, child = host_pid(workspace / "shell.pid"), host_pid(workspace / "child.pid")
        assert not wait_gone(child, timeout=0)
        agent.send_signal(signal.SIGKILL)
        agent.wait(timeout=10)
        assert wait_gone(shell_pid) and wait_gone(child), "the command outlived `kill -9` of the run"
    finally:
        if agent.poll() is None:
            agent.kill()


def test_resume_keeps_the_sessions_sandbox_unless_a_flag_changes_it(tmp_path: Path, workspace: Path,
                                                                    isolated_home: Path) -> None:
    code, lines, stderr = run(tmp_path, workspace, [shell("echo 1 > one.txt")], "--sandbox", "read-only",
                              "--session-id", "ro")
    assert code == 0 and not (workspace / "one.txt").exists(), stderr
    replayed = [{"text": "(replayed)"}] * 2  # (the replies the conversation holds are skipped)
    script = write_script(tmp_path / "again.json", [*replayed, shell("echo 2 > two.txt"), {"text": "ok"}])
    again = invoke("resume", "ro", "again", "--script", str(script), "-o", "stream-json")
    assert again.returncode == 0, again.stderr
    assert "blocked by the sandbox: writing anything is not allowed (read-only)" in results(json_lines(again.stdout))[0]
    assert not (workspace / "two.txt").exists()  # still read-only: a resume never widens it silently
    script = write_script(tmp_path / "wider.json", [*replayed * 2, shell("echo 3 > three.txt"), {"text": "ok"}])
    wider = invoke("resume", "ro", "wider", "--script", str(script), "--sandbox", "workspace-write")
    assert wider.returncode == 0, wider.stderr
    assert "note: --sandbox given: permissions change from read-only to workspace-write" in wider.stderr
    assert (workspace / "three.txt").exists()


def test_the_claude_entry_takes_the_sandbox_flags_too(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    script = write_script(tmp_path / "p.json", [shell("echo in > inside.txt"), {"text": "done"}])
    base = ["-p", "go", "-C", str(workspace), "--provider", "scripted", "--script", str(script),
            "--permission-mode", "bypassPermissions", "--output-format", "stream-json"]
    proc = run_cli(*base, "--sandbox", "read-only")
    assert proc.returncode == 0, proc.stderr
    assert "blocked by the sandbox" in results(json_lines(proc.stdout))[0]
    assert not (workspace / "inside.txt").exists()
    proc = run_cli(*base)  # workspace-write by default
    assert proc.returncode == 0 and (workspace / "inside.txt").exists(), proc.stderr
    bad = run_cli("-p", "go", "--sandbox", "sideways")
    assert bad.returncode == 2 and "--sandbox" in bad.stderr
