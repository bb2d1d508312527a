"""The OS sandbox around every command the agent runs (`run_shell`, loop background jobs).

Modes (`--sandbox`, config `sandbox`, `RECURSIVE_SANDBOX`; by default `read-only` in the
read-only permission mode, `workspace-write` in every other):

    read-only        nothing may be written but a private temp folder ($TMPDIR inside)
    workspace-write  also the workspace and every --add-dir folder
    off              the command runs as the user, unconfined

On Linux the command runs under bubblewrap (`bwrap`, found on PATH): the whole filesystem
read-only, the writable folders bound back read-write, `$RECURSIVE_HOME` (sessions,
checkpoints, trust) and a repository's `.git/hooks` and `.git/config` (which run code when
the user next runs git) read-only again even inside them, a fresh /dev and /proc, a private
temp folder as $TMPDIR (the host's /tmp stays read-only: a command never writes where
another program would read), no capabilities (as root too: bubblewrap run by root would
otherwise keep them, and with them the power to remount / writable); its own pid namespace,
whose pid 1 (sandbox_init.py) stops what a command leaves behind and names it, so nothing
it starts outlives it, and it dies with us (`kill -9` of recursive included). Without `--sandbox-network` it has its own network namespace: no
network at all, loopback included. Inside bubblewrap, where the kernel has Landlock, the
command is restricted a second time by landlock_stage.py (writes beneath the same folders,
TCP refused) before it execs.

`run_shell`'s commands all start in one such sandbox kept for the run (`Zygote`: its pid 1,
sandbox_init.py's `zygote`, forks each command on request over a Unix socket and says when
it ends; a new one when the event loop or the git folders to protect change): a sandbox of
its own per command cost 20–40 ms on these machines, most of it the interpreter that applies
Landlock starting again, where the zygote's fork costs 1.5 ms (bench/sandbox_cost.py). No
library does this part; bubblewrap does the confining. A loop's background jobs, seldom and
long, get a sandbox of their own each (`wrap`).

A sandbox that cannot start (no bwrap, no user namespaces, not Linux) fails the run before it
starts (SandboxUnavailableError, exit 2) with how to fix it: a run never goes on unprotected.
The goal driver's `--check` commands and hooks are the user's own and run outside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.choices import SandboxMode
from ..core.errors import SandboxUnavailableError
from ..core.procs import process_alive

INIT = str(Path(__file__).with_name("sandbox_init.py"))
# sandbox_init imported, not run as a script, so that its compiled form is used (3 ms of every
# command); it imports only the standard library, so its folder first on the path shadows nothing.
_START_INIT = (f"import sys; sys.path.insert(0, {str(Path(INIT).parent)!r}); import sandbox_init; "
               "sandbox_init.main(sys.argv[1:])")
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: `apt install bubblewrap`, Fedora: `dnf install "
                "bubblewrap`, Arch: `pacman -S bubblewrap`) or pass --sandbox off")
GIT_PROTECTED = (".git/hooks", ".git/config")  # run code at the user's next git command
# Where a command writes that the sandbox refused, in the words the OS prints them: the
# tool result then says why, in words the model can act on.
REFUSED_WRITE = ("Read-only file system",)
REFUSED_NETWORK = ("Network is unreachable", "Temporary failure in name resolution",
                   "Could not resolve host", "Name or service not known", "getaddrinfo failed",
                   "No address associated with hostname", "Cannot assign requested address")
# What a refusal may also look like (Landlock answers EACCES; loopback has nothing listening).
MAYBE_REFUSED = ("Permission denied", "Connection refused")


@dataclass(slots=True)
class CommandSandbox:
    """How the agent's commands are confined; `wrap` turns a command line into a confined one."""

    mode: SandboxMode
    writable: tuple[Path, ...] = ()  # bound read-write (workspace-write)
    protected: tuple[Path, ...] = ()  # read-only, even inside a writable folder
    network: bool = False
    bwrap: str = ""
    landlock: bool = False  # the second line, when the kernel has it
    # without the network: loopback ports passed through to 127.0.0.1 outside (with it: none)
    ports: tuple[int, ...] = ()
    temp: Path | None = field(default=None, init=False, repr=False)  # the private temp folder, made at first use
    # the run's sandbox, kept running: run_shell's commands start in it
    _zygote: Zygote | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.network:
            self.ports = ()

    @property
    def confined(self) -> bool:
        return self.mode != "off"

    def wrap(self, argv: Sequence[str], cwd: str, report: int = -1) -> list[str]:
        """`argv` as bubblewrap runs it inside this sandbox, working in `cwd` (as it is); the
        names of what it leaves running are written to the file descriptor `report`, if any
        (sandbox_init.py, its pid 1)."""
        if not self.confined:
            return list(argv)
        temp = str(self._temp())
        outer = [self.bwrap, "--die-with-parent", "--unshare-pid", "--as-pid-1", "--cap-drop", "ALL",
                 "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", temp, temp]
        if not self.network:
            outer.append("--unshare-net")
        for path in self.writable:
            outer += ["--bind", str(path), str(path)]
        for path in self._protected_here():
            outer += ["--ro-bind", str(path), str(path)]
        for name in ("TMPDIR", "TMP", "TEMP"):
            outer += ["--setenv", name, temp]
        outer += ["--chdir", cwd, "--", sys.executable, "-I", "-S", "-c", _START_INIT, "--report", str(report)]
        if self.landlock:
            outer += ["--landlock", "--rw", "/dev", "--rw", temp]
            for path in self.writable:
                outer += ["--rw", str(path)]
            outer += [] if self.network else ["--no-net"]
        for port in self.ports:
            outer += ["--port", str(port)]
        return [*outer, "--", *argv]

    def spawn(self, argv: Sequence[str], cwd: str, env: Mapping[bytes, bytes], output_fd: int,
              loop: asyncio.AbstractEventLoop) -> ZygoteChild:
        """Start `argv` in this run's sandbox (its zygote, started at the first command and
        again should it end): a few milliseconds, where a sandbox of its own costs twenty."""
        protected = self._protected_here()  # (a `git init` since the zygote began: its hooks too)
        if self._zygote is None or not self._zygote.serves(loop) or self._zygote.protected != protected:
            if self._zygote is not None:
                self._zygote.close()
            self._zygote = Zygote(lambda fd: self.wrap(["--zygote", str(fd)], cwd), loop, protected)
        temp = os.fsencode(self._temp())
        private = {b"TMPDIR": temp, b"TMP": temp, b"TEMP": temp}  # (as --setenv gives a sandbox of its own)
        return self._zygote.spawn(argv, cwd, {**env, **private}, output_fd)

    def describe(self) -> str:
        """One line for the system prompt and `config show`: what commands may do."""
        if not self.confined:
            return "off: commands run unconfined, as the user"
        where = "nothing but a private temp folder ($TMPDIR)" if self.mode == "read-only" else (
            "only inside " + ", ".join(str(p) for p in self.writable) + " and a private temp folder ($TMPDIR)")
        net = "may reach the network" if self.network else "have no network (loopback included)" + (
            "" if not self.ports else " but 127.0.0.1 port " + ", ".join(map(str, self.ports)))
        return f"{self.mode}: commands may write {where}, and {net}"

    def refusal(self, output: str, exit_code: int | None) -> str:
        """What to tell the model when a command's output shows the sandbox refused it."""
        if not self.confined:
            return ""
        if any(text in output for text in REFUSED_WRITE):  # (even when the command went on and succeeded)
            allowed = "anything" if self.mode == "read-only" else "outside the workspace"
            return (f"blocked by the sandbox: writing {allowed} is not allowed ({self.mode}); "
                    "work inside the workspace (temporary files: $TMPDIR), or ask the user to add the "
                    "folder with --add-dir")
        if exit_code == 0:
            return ""
        if not self.network and any(text in output for text in REFUSED_NETWORK):
            return ("blocked by the sandbox: commands have no network access (loopback included); ask the "
                    "user to allow it with --sandbox-network")
        if any(text in output for text in MAYBE_REFUSED):
            where = "writes anywhere" if self.mode == "read-only" else "writes outside the workspace"
            net = "" if self.network else " and any network access (loopback included)"
            return (f"if this needed to write outside the allowed folders or reach the network: the sandbox "
                    f"({self.mode}) refuses {where}{net}; ask the user for --add-dir or --sandbox-network")
        return ""

    def _temp(self) -> Path:
        if self.temp is None:
            _sweep_temps()
            self.temp = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-"))
        return self.temp

    def _protected_here(self) -> list[Path]:
        """The protected folders that exist, and each writable folder's git hooks and config."""
        found = [path for path in self.protected if path.exists()]
        for root in self.writable:
            found += [root / name for name in GIT_PROTECTED if (root / name).exists()]
        return found

    def close(self) -> None:
        """Stop the zygote and remove the private temp folder (what commands left there is
        theirs alone)."""
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None
        if self.temp is not None:
            shutil.rmtree(self.temp, ignore_errors=True)
            self.temp = None


START_TIMEOUT = 10.0  # seconds for the zygote to say a command runs


class ZygoteChild:
    """A command started by the zygote: `pid` (as we see it), `exited`, a future that gets its
    exit code (negative for a signal, as Popen gives it) once the zygote has reaped it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.pid = 0
        self.exited: asyncio.Future[int] = loop.create_future()

    @property
    def returncode(self) -> int | None:
        return self.exited.result() if self.exited.done() else None

    async def wait(self) -> int:
        if not self.exited.done():
            await asyncio.shield(self.exited)
        return self.exited.result()

    def close(self) -> None:
        """(Nothing to release: the zygote reaps it.)"""

    def ended(self, code: int) -> None:
        if not self.exited.done():
            self.exited.set_result(code)


class Zygote:
    """One sandbox kept running for a run: bubblewrap around sandbox_init.py's `zygote`, which
    forks each command inside it on request (JSON and the output descriptor over a Unix
    SOCK_SEQPACKET socket). Same mounts, network and Landlock as a sandbox of its own; every
    command its own session; when the channel closes (we stop, or die) the zygote kills all
    and the namespace ends."""

    def __init__(self, argv: Callable[[int], list[str]], loop: asyncio.AbstractEventLoop,
                 protected: list[Path]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:  # (`argv(fd)`: the command line that tells the zygote its channel's number)
            self.proc = subprocess.Popen(argv(theirs.fileno()), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True,
                                         pass_fds=(theirs.fileno(),))
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.sock = ours
        self.loop = loop
        self.protected = protected
        self.children: dict[int, ZygoteChild] = {}
        self.forwards: set[asyncio.Future[None]] = set()  # connections to allowed ports, being joined
        self.next_id = 1
        self.host_pid = 0  # the zygote's own pid as we see it (found at the first command)
        self.dead = False
        ours.setblocking(False)
        loop.add_reader(ours.fileno(), self._readable)

    def serves(self, loop: asyncio.AbstractEventLoop) -> bool:
        return not self.dead and self.loop is loop and not loop.is_closed()

    def spawn(self, argv: Sequence[str], cwd: str, env: Mapping[bytes, bytes], output_fd: int) -> ZygoteChild:
        """Ask for `argv` to start; OSError when the zygote cannot start it."""
        request_id, self.next_id = self.next_id, self.next_id + 1
        child = ZygoteChild(self.loop)
        self.children[request_id] = child
        text = {key.decode(errors="surrogateescape"): value.decode(errors="surrogateescape")
                for key, value in env.items()}
        message = json.dumps({"id": request_id, "argv": list(argv), "cwd": cwd, "env": text}).encode()
        try:
            socket.send_fds(self.sock, [message], [output_fd])
            pid = self._await_start(request_id)
        except (OSError, TimeoutError) as exc:
            self.children.pop(request_id, None)
            self._died()
            raise OSError(f"the command sandbox did not start the command: {exc}") from None
        try:
            child.pid = self._host_pid(pid)
        except OSError:
            self._send({"go": request_id, "run": False})
            raise
        self._send({"go": request_id})  # (it waited to exec until we knew its pid: now it runs)
        return child

    def _send(self, message: dict[str, Any]) -> None:
        try:
            self.sock.send(json.dumps(message).encode())
        except OSError as exc:
            self._died()
            raise OSError(f"the command sandbox has gone: {exc}") from None

    def _await_start(self, request_id: int) -> int:
        """Read the zygote's messages until it says `request_id` runs; its pid there."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            for message in self._messages():
                if message.get("id") == request_id and "pid" in message:
                    return int(message["pid"])
            if self.dead:
                raise OSError("the sandbox ended")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer in {START_TIMEOUT:g} s")
            select.select([self.sock], [], [], left)

    def _readable(self) -> None:
        for _ in self._messages():
            pass

    def _messages(self) -> list[dict[str, Any]]:
        """The messages waiting, the ends among them delivered; EOF: the zygote has gone."""
        found: list[dict[str, Any]] = []
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(self.sock, 1 << 16, 1)
            except (BlockingIOError, InterruptedError):
                return found
            except OSError:
                data, fds = b"", []
            if not data:
                self._died()
                return found
            message = json.loads(data)
            if "port" in message and fds:
                self.forwards.add(asyncio.ensure_future(forward(fds[0], int(message["port"]))))
                self.forwards = {task for task in self.forwards if not task.done()}
                continue
            if "status" in message:
                child = self.children.pop(int(message["id"]), None)
                if child is not None:
                    child.ended(os.waitstatus_to_exitcode(int(message["status"])))
            found.append(message)

    def _host_pid(self, inner: int) -> int:
        """The pid we see of the zygote's child that is `inner` inside the sandbox."""
        if not self.host_pid:
            self.host_pid = next(iter(_children(self.proc.pid)), 0)  # (bubblewrap's one child: the zygote)
        for pid in _children(self.host_pid):
            if _inner_pid(pid) == inner:
                return pid
        raise OSError(f"cannot find the sandboxed command (pid {inner} inside)")

    def _died(self) -> None:
        if self.dead:
            return
        self.dead = True
        for task in self.forwards:
            task.cancel()
        with contextlib.suppress(Exception):
            self.loop.remove_reader(self.sock.fileno())
        for child in self.children.values():
            child.ended(-signal.SIGKILL)
        self.children.clear()

    def close(self) -> None:
        """End the zygote (it kills what still runs) and wait for it, briefly."""
        self._died()
        self.sock.close()
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def forward(fd: int, port: int) -> None:
    """Join a command's connection (`fd`, inside the sandbox) to 127.0.0.1:`port` outside,
    both ways, until either side ends; a port nobody listens on closes it at once."""
    inner = socket.socket(fileno=fd)
    try:
        inside = await asyncio.open_connection(sock=inner)
    except OSError:
        inner.close()
        return
    try:
        outside = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        inside[1].close()
        return
    pumps = [asyncio.ensure_future(_pump(inside[0], outside[1])), asyncio.ensure_future(_pump(outside[0], inside[1]))]
    try:
        await asyncio.gather(*pumps)
    finally:
        for pump in pumps:
            pump.cancel()
        inside[1].close()
        outside[1].close()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, ConnectionError):
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(part) for part in handle.read().split()]
    except (OSError, ValueError):
        return []


def _inner_pid(pid: int) -> int:
    """Process `pid`'s number in its own (innermost) pid namespace."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


TEMP_PREFIX = "recursive-sandbox-"  # then our pid: a run killed before its clean-up is swept by the next


@functools.lru_cache(maxsize=1)
def _sweep_temps() -> None:
    """Remove the private temp folders of runs that are gone (`kill -9`), once per process."""
    for path in Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*-*"):
        pid = path.name[len(TEMP_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def unconfined() -> CommandSandbox:
    """The sandbox of `--sandbox off`: commands run as the user."""
    return CommandSandbox("off")


def command_sandbox(mode: SandboxMode, workspace: Path, add_dirs: Sequence[Path] = (),
                    protected: Sequence[Path] = (), network: bool = False,
                    ports: Sequence[int] = ()) -> CommandSandbox:
    """The sandbox for `mode`; SandboxUnavailableError when it cannot start here."""
    if mode == "off":
        return unconfined()
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailableError(f"--sandbox {mode} needs Linux bubblewrap, which this system "
                                      f"({sys.platform}) does not have; pass --sandbox off to run unconfined")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailableError(f"--sandbox {mode} needs bubblewrap (bwrap), which is not on PATH: "
                                      + INSTALL_HINT)
    problem = _bwrap_problem(bwrap)
    if problem:
        raise SandboxUnavailableError(f"--sandbox {mode}: bubblewrap cannot start here ({problem}); where user "
                                      "namespaces are disabled, enable them (sysctl kernel.unprivileged_userns_clone=1"
                                      "), or pass --sandbox off")
    writable = () if mode == "read-only" else tuple(dict.fromkeys([workspace, *add_dirs]))
    return CommandSandbox(mode, writable, tuple(protected), network, bwrap, landlock_abi() >= 1,
                          tuple(dict.fromkeys(ports)))


_trials: dict[str, subprocess.Popen[bytes] | OSError] = {}  # bwrap → its trial run, begun early
_problems: dict[str, str] = {}  # bwrap → what its trial said: tried once per process


def try_bwrap_soon(mode: SandboxMode) -> None:
    """Begin the trial run `command_sandbox` asks of bubblewrap now, for the sandbox of
    `mode`, so that it runs beside the rest of a launch (a fork, namespaces and an exec:
    ≈ 5 ms here)."""
    bwrap = shutil.which("bwrap") if mode != "off" and sys.platform.startswith("linux") else None
    if bwrap is not None and bwrap not in _problems and bwrap not in _trials:
        _trials[bwrap] = _trial(bwrap)


def _trial(bwrap: str) -> subprocess.Popen[bytes] | OSError:
    true = shutil.which("true", path="/usr/bin:/bin") or sys.executable
    try:
        return subprocess.Popen([bwrap, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--cap-drop", "ALL",
                                 "--", true], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
    except OSError as exc:
        return exc


def _bwrap_problem(bwrap: str) -> str:
    """Why bubblewrap cannot make a sandbox here ("" when it can): tried once per process."""
    problem = _problems.get(bwrap)
    if problem is None:
        trial = _trials.pop(bwrap) if bwrap in _trials else _trial(bwrap)
        problem = _problems[bwrap] = _outcome(trial)
    return problem


def _outcome(trial: subprocess.Popen[bytes] | OSError) -> str:
    if isinstance(trial, OSError):
        return str(trial)
    try:
        _, stderr = trial.communicate(timeout=10)
    except subprocess.TimeoutExpired as exc:
        trial.kill()
        trial.communicate()
        return str(exc)
    if trial.returncode == 0:
        return ""
    lines = stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else f"exit {trial.returncode}"


@functools.lru_cache(maxsize=1)
def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: none, or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(abi), 0)


def environment_hint() -> str:
    """`sandbox: …` for diagnostics: what is installed (bwrap, Landlock)."""
    bwrap = shutil.which("bwrap")
    return f"bwrap {'at ' + bwrap if bwrap else 'missing'}, Landlock ABI {landlock_abi()}"
