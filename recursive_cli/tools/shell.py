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
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from .base import MARKER_VARIABLE, BaseTool, ToolContext, ToolError, ToolResult, live_processes, signal_each, start_time

READ_CHUNK = 64 * 1024
KILL_GRACE_SECONDS = 2.0
KILL_ROUNDS = 3  # SIGKILL sweeps: a process may fork between a scan and the kill
DRAIN_SECONDS = 1.0
RESULT_RESERVE = 300  # characters kept free for the status lines after the output
# Pagers would wait for a terminal that is not there; the run's own API key stays private.
ENV_OVERRIDES = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
ENV_HIDDEN = ("RECURSIVE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


class ShellArgs(BaseModel):
    command: str = Field(description="Shell command line, run with bash -c in the workspace.")
    timeout_seconds: float | None = Field(
        None, gt=0, description="Kill the command after this many seconds (default 120).")


@dataclass
class HeadTailBuffer:
    """Keeps the first and last `half` bytes of a stream and counts the rest."""

    half: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

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
        return report(buffer, run, timeout)


@dataclass(frozen=True)
class CommandRun:
    """How a supervised command ended (its output is in the caller's buffer).

    `stopped` names the processes it left running when the shell exited, which were stopped;
    `lingering` means something we could not find still held its output open after that.
    """

    returncode: int | None
    timed_out: bool
    lingering: bool
    elapsed: float
    stopped: tuple[str, ...] = ()


@dataclass(frozen=True)
class CommandProcesses:
    """How to find every process one command started: its group, its marker, when it began."""

    pgid: int
    marker: str
    since: int = 0  # the shell's start time (clock ticks since boot); nothing of it is older

    def alive(self) -> set[int]:
        """The command's live processes, zombies left out.

        Without /proc only the group can be found: then `{-pgid}`, which `os.kill` takes as
        the whole group.
        """
        if not os.path.isdir("/proc/self"):
            return {-self.pgid} if group_alive(self.pgid) else set()
        return live_processes(self.marker, self.pgid, self.since)

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
    """
    started = time.monotonic()
    before = boot_ticks()  # no process of the command can have started earlier
    marker = ctx.processes.new_marker()
    read_fd, write_fd = os.pipe()
    spawn = asyncio.ensure_future(start_shell(command, ctx, write_fd, marker))
    try:
        proc = await asyncio.shield(spawn)
    except asyncio.CancelledError:  # interrupted while starting: let it start, then stop it
        os.close(read_fd)
        with contextlib.suppress(Exception):
            started_proc = await spawn
            CommandProcesses(started_proc.pid, marker).kill_now()
            await reap(started_proc)
        raise
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    ctx.processes.groups.add(proc.pid)
    # (a quick shell may be gone already: then its start time is unknown, and `before` serves)
    procs = CommandProcesses(proc.pid, marker, start_time(proc.pid) or before)
    try:
        timed_out, stopped, lingering = await supervise(proc, procs, read_fd, buffer, timeout)
    except asyncio.CancelledError:
        procs.kill_now()
        await reap(proc)
        raise
    finally:
        ctx.processes.groups.discard(proc.pid)
    return CommandRun(proc.returncode, timed_out, lingering, time.monotonic() - started,
                      () if timed_out else stopped)


def boot_ticks() -> int:
    """Now, in the clock ticks since boot that /proc/PID/stat gives start times in (one tick
    early, so that no process started from now on reads as older); 0 where unknown."""
    try:
        return max(int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK")) - 1, 0)
    except (AttributeError, OSError, ValueError):
        return 0


async def start_shell(command: str, ctx: ToolContext, output_fd: int,
                      marker: str) -> asyncio.subprocess.Process:
    """Start `command` under bash (or sh) as the leader of a new session, output to `output_fd`,
    `marker` in its environment."""
    shell = shutil.which("bash") or shutil.which("sh") or "/bin/sh"
    env = ({k: v for k, v in os.environ.items() if k not in ENV_HIDDEN} | ENV_OVERRIDES
           | {MARKER_VARIABLE: marker})
    return await asyncio.create_subprocess_exec(
        shell, "-c", command, cwd=str(ctx.workspace), env=env,
        stdin=asyncio.subprocess.DEVNULL, stdout=output_fd, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True)


async def supervise(proc: asyncio.subprocess.Process, procs: CommandProcesses, read_fd: int,
                    buffer: HeadTailBuffer, timeout: float) -> tuple[bool, tuple[str, ...], bool]:
    """Wait for the shell (at most `timeout`), then stop every process of the command still
    alive; returns (timed_out, the names of the processes stopped, lingering).

    Only the shell is waited for, not the end of the output: a background child holding the
    pipe is stopped with the rest, and the output then ends. `lingering` means something still
    held it open after that; our end is closed regardless, so it never blocks on a full pipe.
    """
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stream), os.fdopen(read_fd, "rb", buffering=0))
    reader = asyncio.ensure_future(pump(stream, buffer))
    timed_out = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except asyncio.TimeoutError:
            timed_out = True
        stopped = await stop_processes(procs)
        await proc.wait()
        done, _ = await asyncio.wait({reader}, timeout=DRAIN_SECONDS)
        return timed_out, stopped, not done
    finally:
        reader.cancel()
        transport.close()


async def reap(proc: asyncio.subprocess.Process) -> None:
    """Collect a killed shell's exit status, briefly, even while being cancelled."""
    try:
        await asyncio.wait_for(proc.wait(), KILL_GRACE_SECONDS)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        pass  # the caller re-raises its own cancellation next


async def pump(stream: asyncio.StreamReader, buffer: HeadTailBuffer) -> None:
    """Copy the stream into the buffer until end of file."""
    while chunk := await stream.read(READ_CHUNK):
        buffer.write(chunk)


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


def report(buffer: HeadTailBuffer, run: CommandRun, timeout: float) -> ToolResult:
    """Output, then notes, then `exit code: N (duration)` as the last line."""
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
    if run.lingering:
        parts.append("a process that left the command's group and environment still holds its "
                     "output open; its further output is lost")
    parts.append(f"exit code: {code} ({run.elapsed:.1f} s)")
    summary = (f"timed out after {timeout:g} s" if run.timed_out
               else f"exit {code}, {run.elapsed:.1f} s")
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
