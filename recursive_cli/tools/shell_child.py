"""Starting a command's shell, hearing it end and reading its output without a thread or a task.

asyncio's own subprocess support on Python 3.10–3.11 hears a child end through the
ThreadedChildWatcher — a new thread per child, blocked in `waitpid`, that wakes the loop
through its self-pipe — and reads a pipe through a transport, a protocol and a StreamReader
emptied by a task of its own. Per `run_shell` call that is a thread started (the caller
waits for it to run), a GIL hand-over when it wakes, and several loop iterations.

Here the shell is started with `subprocess.Popen` from the loop's thread (vfork + exec, as
asyncio does), and where Linux gives process file descriptors (`pidfd_open`, 5.3+) its end
is heard on the loop itself: the pidfd turns readable when the process exits, and a reader
callback reaps it (`Popen.poll`). Where there is no pidfd (other systems, old kernels, a
sandbox refusing the call), a daemon thread waits for it instead, as asyncio's watcher would.
The output pipe is read by a reader callback straight into the caller's buffer.

`last_pid` says which process id this pid namespace gave out last, so that a command after
which no process was created at all needs no search for its leftovers (shell.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import Protocol

READ_SIZE = 256 * 1024  # bytes read per reader callback (asyncio's pipe transport reads as much)
_REAP_RETRY_SECONDS = 0.001


class Output(Protocol):
    def write(self, data: bytes) -> None: ...


class Child:
    """A started shell: `pid`, and `exited`, a future that gets its exit code once it has been
    reaped (`returncode` then says the same: negative for a signal, as Popen gives it)."""

    def __init__(self, popen: subprocess.Popen[bytes], loop: asyncio.AbstractEventLoop) -> None:
        self.pid = popen.pid
        self.exited: asyncio.Future[int] = loop.create_future()
        self._popen = popen
        self._loop = loop
        self._pidfd: int | None = None
        try:
            self._pidfd = os.pidfd_open(popen.pid)
            loop.add_reader(self._pidfd, self._on_exit)
        except (AttributeError, OSError, NotImplementedError, RuntimeError):
            self._close_pidfd()
            threading.Thread(target=self._wait_in_thread, name=f"wait {popen.pid}", daemon=True).start()

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> int:
        """The exit code, once the shell has ended; a cancelled wait leaves it watched."""
        if not self.exited.done():
            await asyncio.shield(self.exited)
        return self.exited.result()

    def close(self) -> None:
        """Stop watching (the loop is going away): a shell still running is then reaped by
        `subprocess`'s own clean-up of its Popen objects."""
        self._close_pidfd()

    def _on_exit(self) -> None:
        if self._pidfd is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._pidfd)
        code = self._popen.poll()
        if code is None:  # (readable a moment before it can be reaped: look again)
            self._loop.call_later(_REAP_RETRY_SECONDS, self._on_exit)
            return
        self._close_pidfd()
        if not self.exited.done():
            self.exited.set_result(code)

    def _close_pidfd(self) -> None:
        fd, self._pidfd = self._pidfd, None
        _unwatch(self._loop, fd)

    def _wait_in_thread(self) -> None:
        code = self._popen.wait()
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            self._loop.call_soon_threadsafe(_set_unless_done, self.exited, code)


def _set_unless_done(future: asyncio.Future[int], code: int) -> None:
    if not future.done():
        future.set_result(code)


def spawn(argv: Sequence[str], cwd: str, env: Mapping[bytes, bytes], output_fd: int,
          loop: asyncio.AbstractEventLoop, pass_fds: Sequence[int] = ()) -> Child:
    """Start `argv` as the leader of a new session: stdin from /dev/null, stdout and stderr
    into `output_fd`, `pass_fds` left open in it. OSError (FileNotFoundError, …) when it
    cannot be started."""
    popen = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=output_fd,
                             stderr=subprocess.STDOUT, start_new_session=True, pass_fds=tuple(pass_fds))
    return Child(popen, loop)


class PipeReader:
    """Reads a pipe into `output` as data comes; `ended` is done at end of file (or when the
    pipe cannot be read any more). `close` stops reading and closes our end."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, output: Output) -> None:
        self.ended: asyncio.Future[None] = loop.create_future()
        self._loop = loop
        self._fd: int | None = fd
        self._output = output
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._readable)  # (every event loop on a POSIX system can)

    def _readable(self) -> None:
        fd = self._fd
        if fd is None:
            return
        try:
            data = os.read(fd, READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if data:
            self._output.write(data)
            return
        with contextlib.suppress(Exception):
            self._loop.remove_reader(fd)
        if not self.ended.done():
            self.ended.set_result(None)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        _unwatch(self._loop, fd)


def _unwatch(loop: asyncio.AbstractEventLoop, fd: int | None) -> None:
    """Stop watching `fd` on `loop` and close it (None: nothing to do)."""
    if fd is not None:
        with contextlib.suppress(Exception):
            loop.remove_reader(fd)
        with contextlib.suppress(OSError):
            os.close(fd)


def last_pid() -> int | None:
    """The process id this pid namespace gave out last (threads count too), from the kernel's
    /proc/loadavg; None where it cannot be read, or where that file is not procfs's own (lxcfs
    mounts one over it whose figures come from elsewhere, some seconds old)."""
    try:
        fd = os.open("/proc/loadavg", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_dev != _procfs_device():
            return None
        data = os.read(fd, 256)
    except OSError:
        return None
    finally:
        os.close(fd)
    fields = data.split()  # "0.52 0.58 0.59 2/318 20807": loads, running/total, last pid
    try:
        return int(fields[4]) if len(fields) == 5 and b"/" in fields[3] else None
    except ValueError:
        return None


_PROCFS: list[int] = []


def _procfs_device() -> int:
    """The device of the /proc mount (-1 where it cannot be told)."""
    if not _PROCFS:
        try:
            _PROCFS.append(os.stat("/proc/self/stat").st_dev)
        except OSError:
            _PROCFS.append(-1)
    return _PROCFS[0]
