"""The `run_shell` tool: one shell command in the workspace, in its own process group.

The command runs in a new session so a timeout or an interrupt can kill everything it
started (background children included) with one `killpg`. Output is read as it comes into a
bounded head-and-tail buffer, so a command printing gigabytes costs constant memory.
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

from .base import BaseTool, ToolContext, ToolError, ToolResult

READ_CHUNK = 64 * 1024
KILL_GRACE_SECONDS = 2.0
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
        "120 s). Long output is cut in the middle, keeping its start and end."
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
        return report(buffer, run.returncode, run.elapsed, timeout if run.timed_out else None,
                      run.lingering)


@dataclass(frozen=True)
class CommandRun:
    """How a supervised command ended (its output is in the caller's buffer)."""

    returncode: int | None
    timed_out: bool
    lingering: bool
    elapsed: float


async def run_command(command: str, ctx: ToolContext, buffer: HeadTailBuffer,
                      timeout: float) -> CommandRun:
    """Run `command` in its own process group, output into `buffer`, killed at `timeout`.

    The group is registered in `ctx.processes` while it runs, so an interrupt stops it at once;
    cancelling the caller kills it too. OSError when the shell cannot be started.
    """
    started = time.monotonic()
    read_fd, write_fd = os.pipe()
    spawn = asyncio.ensure_future(start_shell(command, ctx, write_fd))
    try:
        proc = await asyncio.shield(spawn)
    except asyncio.CancelledError:  # interrupted while starting: let it start, then stop it
        os.close(read_fd)
        with contextlib.suppress(Exception):
            started_proc = await spawn
            kill_group(started_proc.pid, signal.SIGKILL)
            await reap(started_proc)
        raise
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    ctx.processes.groups.add(proc.pid)
    try:
        timed_out, lingering = await supervise(proc, read_fd, buffer, timeout)
    except asyncio.CancelledError:
        kill_group(proc.pid, signal.SIGKILL)
        await reap(proc)
        raise
    finally:
        ctx.processes.groups.discard(proc.pid)
    return CommandRun(proc.returncode, timed_out, lingering, time.monotonic() - started)


async def start_shell(command: str, ctx: ToolContext, output_fd: int) -> asyncio.subprocess.Process:
    """Start `command` under bash (or sh) as the leader of a new session, output to `output_fd`."""
    shell = shutil.which("bash") or shutil.which("sh") or "/bin/sh"
    env = {k: v for k, v in os.environ.items() if k not in ENV_HIDDEN} | ENV_OVERRIDES
    return await asyncio.create_subprocess_exec(
        shell, "-c", command, cwd=str(ctx.workspace), env=env,
        stdin=asyncio.subprocess.DEVNULL, stdout=output_fd, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True)


async def supervise(proc: asyncio.subprocess.Process, read_fd: int, buffer: HeadTailBuffer,
                    timeout: float) -> tuple[bool, bool]:
    """Wait for the command, killing its group on timeout; returns (timed_out, lingering).

    `lingering` means background processes still held the output open after the shell
    exited. Our end of the pipe is closed regardless, so they never block on a full pipe.
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
            await terminate_group(proc.pid)
            await proc.wait()
        done, _ = await asyncio.wait({reader}, timeout=DRAIN_SECONDS)
        return timed_out, not done
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


def report(buffer: HeadTailBuffer, returncode: int | None, elapsed: float,
           timed_out_after: float | None, lingering: bool) -> ToolResult:
    """Output, then notes, then `exit code: N (duration)` as the last line."""
    code = returncode if returncode is not None else -1
    parts = [buffer.text().rstrip("\n") or "(no output)"]
    if code < 0:  # killed by a signal: report it the way a shell's $? would
        parts.append(f"the shell was killed by {signal_name(-code)}")
        code = 128 - code
    if timed_out_after is not None:
        parts.append(f"command timed out after {timed_out_after:g} s; "
                     "it and every process it started were killed")
    if lingering:
        parts.append("background processes it started are still running and their further "
                     "output is lost; redirect it to a file (`cmd > log 2>&1 &`) to keep it")
    parts.append(f"exit code: {code} ({elapsed:.1f} s)")
    summary = (f"timed out after {timed_out_after:g} s" if timed_out_after is not None
               else f"exit {code}, {elapsed:.1f} s")
    return ToolResult("\n\n".join(parts), is_error=code != 0, summary=summary)


def signal_name(number: int) -> str:
    """`SIGTERM` for 15, or `signal N` when unknown."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
