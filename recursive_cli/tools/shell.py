"""The `run_shell` tool: one shell command in the workspace, in its own process group.

The command runs in a new session, with a marker in its environment that every process it
starts inherits. When the shell exits (or times out, or the run is interrupted) whatever is
still alive in its group or carries its marker is stopped, so nothing a command starts
outlives it, not even a child that left the group with `setsid` or `nohup`. Output is read as
it comes into a bounded head-and-tail buffer, so a command printing gigabytes costs constant
memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from dataclasses import dataclass
from typing import Annotated, Any, NamedTuple

from msgspec import Meta

from ..core.tool import (
    MARKER_VARIABLE,
    BaseTool,
    RunningCommand,
    ToolContext,
    ToolError,
    ToolResult,
    live_processes,
    signal_each,
)
from .shell_child import PipeReader, last_pid, spawn

KILL_GRACE_SECONDS = 2.0
KILL_ROUNDS = 3  # SIGKILL sweeps: a process may fork between a scan and the kill
DRAIN_SECONDS = 1.0
QUICK_SECONDS = 0.1  # a command this quick after which no pid was given out left nothing behind
RESULT_RESERVE = 300  # characters kept free for the status lines after the output
# Pagers would wait for a terminal that is not there; the run's own API key stays private:
# every variable a key is read from (core/settings.py's key_source), Claude Code's token too.
ENV_OVERRIDES = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
ENV_HIDDEN = ("RECURSIVE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


@dataclass(slots=True, kw_only=True)
class ShellArgs:
    command: Annotated[str, Meta(description="Shell command line, run with bash -c in the workspace.")]
    timeout_seconds: Annotated[Annotated[float, Meta(gt=0)] | None,
                               Meta(description="Kill the command after this many seconds (default 120).")] = None


class HeadTailBuffer:
    """Keeps the first and last `half` bytes of a stream and counts the rest."""

    __slots__ = ("half", "head", "tail", "total")

    def __init__(self, half: int) -> None:
        self.half = half
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def write(self, data: bytes) -> None:
        """Take in a chunk, keeping memory bounded by about 4 × half."""
        self.total += len(data)
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        if len(self.tail) > 2 * self.half:
            del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        """The kept output as text, with a marker saying how many bytes were left out."""
        tail = bytes(self.tail[-self.half:]) if self.half else b""
        omitted = self.total - len(self.head) - len(tail)
        head_text = self.head.decode("utf-8", "replace")
        if omitted <= 0:
            return head_text + tail.decode("utf-8", "replace")
        return (f"{head_text}\n… [{omitted} bytes of output omitted] …\n"
                f"{tail.decode('utf-8', 'replace')}")


class RunShellTool(BaseTool[ShellArgs]):
    name = "run_shell"
    description = (
        "Run a shell command (bash -c) in the workspace and return its combined stdout and "
        "stderr followed by the exit code. Use it to run tests, builds, linters, git and other "
        "programs. There is no terminal and no input: avoid interactive commands and editors. "
        "The command and everything it started are killed after timeout_seconds (default "
        "120 s). When the shell exits, whatever it left running in the background (`server &`, "
        "even with nohup or setsid) is stopped: start, use and stop a server within one "
        "command; long-lived work belongs to run_background (loop mode). Long output is cut in "
        "the middle, keeping its start and end."
    )
    kind = "shell"
    Args = ShellArgs
    subject_field = "command"

    async def run(self, args: ShellArgs, ctx: ToolContext) -> ToolResult:
        if "\x00" in args.command:
            raise ToolError("invalid command: it contains a NUL byte, which no command line can hold")
        timeout = args.timeout_seconds or ctx.shell_timeout
        buffer = HeadTailBuffer(max((ctx.output_limit - RESULT_RESERVE) // 2, 100))
        run = await run_command(args.command, ctx, buffer, timeout)
        refused = ctx.commands.refusal(buffer.text(), run.returncode) if ctx.commands is not None else ""
        return report(buffer, run, timeout, refused)


class CommandRun(NamedTuple):
    """How a supervised command ended (its output is in the caller's buffer).

    `stopped` names the processes it left running when the shell exited, which were stopped;
    `lingering` means something we could not find still held its output open after that.
    """

    returncode: int | None
    timed_out: bool
    lingering: bool
    elapsed: float
    stopped: tuple[str, ...] = ()


class CommandProcesses(NamedTuple):
    """How to find every process one command started: its group, its marker, when it began."""

    pgid: int
    marker: str
    since: int = 0  # just before the shell started (clock ticks since boot); nothing of it is older

    def alive(self) -> set[int]:
        """The command's live processes, zombies left out.

        Without /proc only the group can be found: then `{-pgid}`, which `os.kill` takes as
        the whole group.
        """
        if not os.path.isdir("/proc/self"):
            return {-self.pgid} if group_alive(self.pgid) else set()
        return live_processes(self.marker, self.pgid, self.since)

    def none_left(self, elapsed: float) -> bool:
        """Whether the command is known to have left nothing, without a search: the shell has
        been reaped, its group is empty, and no process (or thread) at all was created in this
        pid namespace since the shell was — the last pid given out is still the shell's. Only
        for a command that took less than QUICK_SECONDS: pids are reused in a cycle, and a
        long command could in principle have gone round it."""
        return elapsed < QUICK_SECONDS and last_pid() == self.pgid and not group_alive(self.pgid)

    def kill_now(self) -> None:
        """SIGKILL the group and every process carrying the marker, without waiting."""
        kill_group(self.pgid, signal.SIGKILL)
        signal_each(self.alive(), signal.SIGKILL)


async def run_command(command: str, ctx: ToolContext, buffer: HeadTailBuffer,
                      timeout: float) -> CommandRun:
    """Run `command` in its own process group, output into `buffer`, killed at `timeout`.

    Whatever the command leaves running is stopped when the shell exits. The group is
    registered in `ctx.processes` until then, so an interrupt stops it at once; cancelling the
    caller kills it too. OSError when the shell cannot be started.

    The shell is started from this thread, and its end and its output are heard by the event
    loop itself (shell_child.py: a pidfd and reader callbacks, no thread, no extra task).
    """
    started = time.monotonic()
    since = boot_ticks()  # no process of the command can have started earlier
    marker = ctx.processes.new_marker()
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    try:
        reader = PipeReader(loop, read_fd, buffer)  # (it owns our end from here on)
    except BaseException:
        os.close(read_fd)
        os.close(write_fd)
        raise
    try:
        child = start_shell(command, ctx, write_fd, marker, loop)
    except BaseException:
        reader.close()
        raise
    finally:
        os.close(write_fd)
    ctx.processes.groups.add(child.pid)
    procs = CommandProcesses(child.pid, marker, since)
    try:
        timed_out, stopped, lingering = await supervise(child, procs, reader, timeout, started)
    except asyncio.CancelledError:
        procs.kill_now()
        await reap(child)
        raise
    finally:
        ctx.processes.groups.discard(child.pid)
        reader.close()
        child.close()
    return CommandRun(child.returncode, timed_out, lingering, time.monotonic() - started,
                      () if timed_out else stopped)


def boot_ticks() -> int:
    """Now, in the clock ticks since boot that /proc/PID/stat gives start times in (one tick
    early, so that no process started from now on reads as older); 0 where unknown."""
    try:
        return max(int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK")) - 1, 0)
    except (AttributeError, OSError, ValueError):
        return 0


def start_shell(command: str, ctx: ToolContext, output_fd: int, marker: str,
                loop: asyncio.AbstractEventLoop) -> RunningCommand:
    """Start `command` under bash (or sh) as the leader of a new session, output to `output_fd`,
    `marker` in its environment; in the command sandbox when there is one."""
    shell = shell_path()
    cwd = str(ctx.workspace)
    try:
        if ctx.commands is not None and ctx.commands.confined:
            return ctx.commands.spawn((shell, "-c", command), cwd, shell_environment(marker), output_fd, loop)
        return spawn((shell, "-c", command), cwd, shell_environment(marker), output_fd, loop)
    except OSError:
        _SHELL.clear()  # (gone from where it was found? the next command looks again)
        raise


_SHELL: dict[str | None, str] = {}  # PATH → the shell found on it
_HIDDEN = tuple(os.fsencode(name) for name in ENV_HIDDEN)
_OVERRIDES = {os.fsencode(key): os.fsencode(value) for key, value in ENV_OVERRIDES.items()}
_MARKER = os.fsencode(MARKER_VARIABLE)


def shell_path() -> str:
    """bash on PATH, else sh, else /bin/sh (looked up once per PATH)."""
    path = os.environ.get("PATH")
    found = _SHELL.get(path)
    if found is None:
        found = _SHELL[path] = shutil.which("bash") or shutil.which("sh") or "/bin/sh"
    return found


def shell_environment(marker: str) -> dict[bytes, bytes]:
    """Our environment without the API keys, with ENV_OVERRIDES and the command's `marker`."""
    data = getattr(os.environ, "_data", None)  # (POSIX: the bytes the environment is kept as)
    if isinstance(data, dict) and os.supports_bytes_environ:
        env = dict(data)
    else:  # (os.environ replaced by a plain mapping)
        env = {os.fsencode(key): os.fsencode(value) for key, value in os.environ.items()}
    for name in _HIDDEN:
        env.pop(name, None)
    env.update(_OVERRIDES)
    env[_MARKER] = os.fsencode(marker)
    return env


async def supervise(child: RunningCommand, procs: CommandProcesses, reader: PipeReader, timeout: float,
                    started: float) -> tuple[bool, tuple[str, ...], bool]:
    """Wait for the shell (at most `timeout`), then stop every process of the command still
    alive; returns (timed_out, the names of the processes stopped, lingering).

    Only the shell is waited for, not the end of the output: a background child holding the
    pipe is stopped with the rest, and the output then ends. `lingering` means something still
    held it open after that; our end is closed regardless, so it never blocks on a full pipe.
    `started`: when the shell was about to be started (time.monotonic).
    """
    timed_out = not await _within(child.exited, timeout)
    nothing = not timed_out and procs.none_left(time.monotonic() - started)
    stopped = () if nothing else await stop_processes(procs)
    await child.wait()
    return timed_out, stopped, not await _within(reader.ended, DRAIN_SECONDS)


async def _within(future: asyncio.Future[Any], timeout: float) -> bool:
    """Whether `future` is done within `timeout` seconds (it is never cancelled here)."""
    if not future.done():
        await asyncio.wait((future,), timeout=timeout)
    return future.done()


async def reap(child: RunningCommand) -> None:
    """Collect a killed shell's exit status, briefly, even while being cancelled."""
    with contextlib.suppress(asyncio.CancelledError):  # the caller re-raises its own cancellation next
        await _within(child.exited, KILL_GRACE_SECONDS)


async def stop_processes(procs: CommandProcesses) -> tuple[str, ...]:
    """SIGTERM every live process of the command, SIGKILL those still alive after the grace
    period; returns the names of those found at first (none when nothing was left)."""
    found = procs.alive()
    if not found:
        return ()
    names = tuple(process_name(pid) for pid in sorted(found))
    signal_each(found, signal.SIGTERM)
    signal_each(found, signal.SIGCONT)  # a stopped process only sees SIGTERM once resumed
    deadline = time.monotonic() + KILL_GRACE_SECONDS
    while (alive := procs.alive()) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    for _ in range(KILL_ROUNDS):
        if not alive:
            break
        signal_each(alive, signal.SIGKILL)
        await asyncio.sleep(0.02)
        alive = procs.alive()
    return names


def process_name(pid: int) -> str:
    """The command name of process `pid` (`sleep`), or `process` when it cannot be read."""
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip() or "process"
    except OSError:
        return "process"


async def terminate_group(pgid: int) -> None:
    """SIGTERM the whole process group, then SIGKILL whatever is left after a grace period."""
    kill_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_SECONDS
    while group_alive(pgid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    kill_group(pgid, signal.SIGKILL)


def kill_group(pgid: int, sig: int) -> None:
    """Send `sig` to every process in the group; a group already gone is fine."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_alive(pgid: int) -> bool:
    """Whether any process of the group still exists (zombies count until reaped)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def report(buffer: HeadTailBuffer, run: CommandRun, timeout: float, refused: str = "") -> ToolResult:
    """Output, then notes (`refused`: what the sandbox did not allow), then `exit code: N
    (duration)` as the last line."""
    code = run.returncode if run.returncode is not None else -1
    parts = [buffer.text().rstrip("\n") or "(no output)"]
    if code < 0:  # killed by a signal: report it the way a shell's $? would
        parts.append(f"the shell was killed by {signal_name(-code)}")
        code = 128 - code
    if run.timed_out:
        parts.append(f"command timed out after {timeout:g} s; "
                     "it and every process it started were killed")
    if run.stopped:
        parts.append(stopped_note(run.stopped))
    if refused:
        parts.append(refused)
    if run.lingering:
        parts.append("a process that left the command's group and environment still holds its "
                     "output open; its further output is lost")
    parts.append(f"exit code: {code} ({run.elapsed:.1f} s)")
    summary = (f"timed out after {timeout:g} s" if run.timed_out
               else f"exit {code}, {run.elapsed:.1f} s" + (", blocked by the sandbox" if refused else ""))
    return ToolResult("\n\n".join(parts), is_error=code != 0, summary=summary)


def stopped_note(names: tuple[str, ...]) -> str:
    """What the model is told about the processes a command left running."""
    count = len(names)
    shown = ", ".join(dict.fromkeys(names[:5]))
    return (f"the shell left {count} process{'es' if count != 1 else ''} running ({shown}); "
            f"{'they were' if count != 1 else 'it was'} stopped when it exited. Nothing a "
            "command starts outlives it: start, use and stop a server in one command "
            "(`srv & pid=$!; …; kill $pid`); long-lived work belongs to run_background (loop mode)")


def signal_name(number: int) -> str:
    """`SIGTERM` for 15, or `signal N` when unknown."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
