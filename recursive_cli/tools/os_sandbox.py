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

A sandbox that cannot start (no bwrap, no user namespaces, not Linux) fails the run before it
starts (SandboxUnavailableError, exit 2) with how to fix it: a run never goes on unprotected.
The goal driver's `--check` commands and hooks are the user's own and run outside it.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..core.choices import SandboxMode
from ..core.errors import SandboxUnavailableError
from ..core.procs import process_alive
from ..core.slotted import Slotted

INIT = str(Path(__file__).with_name("sandbox_init.py"))
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


class CommandSandbox(Slotted):
    """How the agent's commands are confined; `wrap` turns a command line into a confined one."""

    __slots__ = ("mode", "writable", "protected", "network", "bwrap", "landlock", "temp")
    unshown = frozenset({"temp"})
    mode: SandboxMode
    writable: tuple[Path, ...]  # bound read-write (workspace-write)
    protected: tuple[Path, ...]  # read-only, even inside a writable folder
    network: bool
    bwrap: str
    landlock: bool  # the second line, when the kernel has it
    temp: Path | None  # the private temp folder, made at first use

    def __init__(self, mode: SandboxMode, writable: tuple[Path, ...] = (), protected: tuple[Path, ...] = (),
                 network: bool = False, bwrap: str = "", landlock: bool = False) -> None:
        self.mode = mode
        self.writable = writable
        self.protected = protected
        self.network = network
        self.bwrap = bwrap
        self.landlock = landlock
        self.temp = None

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
        outer += ["--chdir", cwd, "--", sys.executable, "-I", "-S", INIT, "--report", str(report)]
        if self.landlock:
            outer += ["--landlock", "--rw", "/dev", "--rw", temp]
            for path in self.writable:
                outer += ["--rw", str(path)]
            outer += [] if self.network else ["--no-net"]
        return [*outer, "--", *argv]

    def describe(self) -> str:
        """One line for the system prompt and `config show`: what commands may do."""
        if not self.confined:
            return "off: commands run unconfined, as the user"
        where = "nothing but a private temp folder ($TMPDIR)" if self.mode == "read-only" else (
            "only inside " + ", ".join(str(p) for p in self.writable) + " and a private temp folder ($TMPDIR)")
        net = "may reach the network" if self.network else "have no network (loopback included)"
        return f"{self.mode}: commands may write {where}, and {net}"

    def refusal(self, output: str, exit_code: int | None) -> str:
        """What to tell the model when a failed command's output shows the sandbox refused it."""
        if not self.confined or exit_code == 0:
            return ""
        if any(text in output for text in REFUSED_WRITE):
            allowed = "anything" if self.mode == "read-only" else "outside the workspace"
            return (f"blocked by the sandbox: writing {allowed} is not allowed ({self.mode}); "
                    "work inside the workspace (temporary files: $TMPDIR), or ask the user to add the "
                    "folder with --add-dir")
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
        """Remove the private /tmp (what commands left there is theirs alone)."""
        if self.temp is not None:
            shutil.rmtree(self.temp, ignore_errors=True)
            self.temp = None


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
                    protected: Sequence[Path] = (), network: bool = False) -> CommandSandbox:
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
    return CommandSandbox(mode, writable, tuple(protected), network, bwrap, landlock_abi() >= 1)


@functools.lru_cache(maxsize=4)
def _bwrap_problem(bwrap: str) -> str:
    """Why bubblewrap cannot make a sandbox here ("" when it can): tried once per process."""
    true = shutil.which("true", path="/usr/bin:/bin") or sys.executable
    try:
        done = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--cap-drop", "ALL",
                               "--", true], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return ""
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else f"exit {done.returncode}"


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
