"""The first process inside the command sandbox (os_sandbox.py): its pid 1, its second line.

bubblewrap runs it as pid 1 of the sandbox's own pid namespace (`--as-pid-1`), with the
interpreter recursive runs on and `-I -S`, so it imports nothing but the standard library:

    python -I -S sandbox_init.py [--landlock] [--rw PATH]... [--no-net] [--report FD] -- ARGV...

With `--landlock` it first makes the writing rights of the filesystem (write, truncate,
create, remove, rename, link) allowed only beneath each `--rw` PATH and, with `--no-net`
where the kernel can (Landlock ABI 4), refuses every TCP connect and bind: the same policy
bubblewrap applies with mounts (which also protects folders inside the writable ones, as
Landlock, whose rules only grant, cannot), held should that first line be misconfigured.
It then starts ARGV and, as an init must, reaps whatever ends. When ARGV's process ends, what
it left running (`server &`) is sent SIGTERM, then SIGKILL after a grace, and their names
are written to FD, a line each, for the tool result; its exit is ARGV's (128 + N for a
signal). SIGTERM, SIGINT and SIGHUP sent to it are passed on to every process inside. When it
ends, the kernel kills whatever is left in the namespace: nothing a command starts outlives it.
"""

import os
import sys

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the syscall numbers, alike on x86_64 and arm64
_PR_SET_NO_NEW_PRIVS = 38
_RULE_PATH_BENEATH = 1
_VERSION = 1  # landlock_create_ruleset flag: ask the ABI version

# The rights that change the filesystem, by the ABI that brought them.
_WRITE_FILE, _REMOVE_DIR, _REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_MAKE = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_REFER, _TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4


def _write_rights(abi: int) -> int:
    rights = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    return rights


def restrict(writable: list[str], no_net: bool) -> int:
    """Restrict this process as the module docstring says; the Landlock ABI used (0: none).
    (ctypes only here: a kernel without Landlock, or a run without it, never loads it.)"""
    import ctypes
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    if abi < 1:
        return 0
    rights = _write_rights(abi)
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if no_net and abi >= 4 else 0
    # struct landlock_ruleset_attr {u64 handled_access_fs; u64 handled_access_net (ABI 4)}
    packed = struct.pack("=QQ", rights, net) if abi >= 4 else struct.pack("=Q", rights)
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.create_string_buffer(packed), ctypes.c_size_t(len(packed)),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    for path in writable:
        _allow_beneath(libc, ctypes, struct, ruleset, path, rights)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.syscall(_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    os.close(ruleset)
    return int(abi)


def _allow_beneath(libc, ctypes, struct, ruleset: int, path: str, rights: int) -> None:  # type: ignore[no-untyped-def]
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # (gone, or never there: nothing beneath it to allow)
    try:
        allowed = rights if os.path.isdir(path) else rights & (_WRITE_FILE | _TRUNCATE)
        # struct landlock_path_beneath_attr {u64 allowed_access; s32 parent_fd} __attribute__((packed))
        rule = ctypes.create_string_buffer(struct.pack("=Qi", allowed, fd))
        if libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, rule, ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
    finally:
        os.close(fd)


GRACE_SECONDS = 2.0  # as run_shell gives the processes of a command it stops (shell.py)


def main(argv: list[str]) -> None:
    writable: list[str] = []
    no_net = landlock = False
    report = -1
    while argv and argv[0] != "--":
        flag = argv.pop(0)
        if flag == "--rw":
            writable.append(argv.pop(0))
        elif flag == "--report":
            report = int(argv.pop(0))
        elif flag == "--no-net":
            no_net = True
        elif flag == "--landlock":
            landlock = True
    command = argv[1:]
    if report >= 0:
        os.set_inheritable(report, False)  # (ours: the command never gets it)
    if landlock:
        try:
            restrict(writable, no_net)
        except OSError as exc:  # fail closed: the command does not run unprotected
            sys.stderr.write(f"recursive sandbox: cannot apply Landlock: {exc}\n")
            os._exit(126)
    if command[:1] == ["--zygote"]:
        os._exit(zygote(int(command[1])))
    if os.getpid() != 1:  # not the init of a namespace of its own: never signal what is not ours
        _exec(command)
    os._exit(supervise(command, report))


def _exec(command: list[str]) -> None:
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"recursive sandbox: cannot run {command[0]}: {exc.strerror}\n")
    os._exit(127)


def supervise(command: list[str], report: int) -> int:
    """As pid 1 of the sandbox's namespace: run `command`, reap everything, stop what it
    left; its exit code."""
    import _signal as signal  # (the C module: `signal` imports enum, 6 ms of every command's start)

    child = os.fork()
    if child == 0:
        _exec(command)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda number, frame: _kill_all(number))
    status = _wait_for(child)
    left = _others()
    if left:
        _report(report, [_name(pid) for pid in left])
        _kill_all(signal.SIGTERM)
        _kill_all(signal.SIGCONT)  # (a stopped process only sees SIGTERM once resumed)
        _reap_until_none(GRACE_SECONDS)
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def zygote(channel: int) -> int:
    """As pid 1 of a run's sandbox: start each command asked for on `channel` (a Unix
    SOCK_SEQPACKET socket; a request is JSON `{"id", "argv", "cwd", "env"}` with the command's
    output file descriptor), answer `{"id", "pid"}` once it is forked, exec it when told `{"go":
    id}` and answer `{"id", "status"}` (a wait status) when it ends; reap whatever else ends. When the channel closes (the run is over, or
    gone), stop everything: the namespace ends with this process."""
    import _signal as signal
    import json
    import select
    import socket

    sock = socket.socket(fileno=channel)
    started: dict[int, int] = {}  # pid → request id
    gates: dict[int, int] = {}  # request id → the pipe its command waits on before it execs
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda number, frame: None)  # (its wake-up byte is what counts)
    while True:
        ready, _, _ = select.select([sock.fileno(), wake_read], [], [])
        if wake_read in ready:
            os.read(wake_read, 4096)
        _reap(sock, json, started)
        if sock.fileno() not in ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 2)
        except OSError:
            data, fds = b"", []
        if not data:
            _kill_all(signal.SIGKILL)
            return 0
        request = json.loads(data)
        if "go" in request:  # the run has seen the command's pid: let it run (or, "run": false, not)
            gate = gates.pop(int(request["go"]), -1)
            if gate >= 0:
                if request.get("run", True):
                    os.write(gate, b"1")
                os.close(gate)
            continue
        hold, gate = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(gate)
            _start(request, fds, hold)
        os.close(hold)
        for fd in fds:
            os.close(fd)
        started[pid], gates[request["id"]] = request["id"], gate
        _send(sock, json, {"id": request["id"], "pid": pid})
        _reap(sock, json, started)


def _reap(sock: object, json: object, started: dict[int, int]) -> None:
    """Collect every process that has ended; tell the run about the commands among them."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in started:
            _send(sock, json, {"id": started.pop(pid), "status": status})


def _start(request: dict, fds: list[int], hold: int) -> None:  # type: ignore[type-arg]
    """In the forked child: become the leader of a session of its own, output to the passed
    descriptor, stdin from /dev/null, then, once the run has seen its pid (`hold` readable:
    a command that ended at once would be gone before the run could know it), exec the
    command (127 if it cannot be)."""
    import _signal as signal

    if os.read(hold, 1) != b"1":
        os._exit(126)  # (the run did not want it any more)
    os.close(hold)
    try:
        for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, signal.SIG_DFL)
        os.setsid()
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[0], 2)
        os.closerange(3, 1 << 16)
        os.chdir(request["cwd"])
        env = {os.fsencode(key): os.fsencode(value) for key, value in request["env"].items()}
        os.execve(request["argv"][0], request["argv"], env)
    except OSError as exc:
        os.write(2, f"recursive sandbox: cannot run {request['argv'][0]}: {exc.strerror}\n".encode())
    os._exit(127)


def _send(sock: object, json: object, message: dict) -> None:  # type: ignore[type-arg]
    try:
        sock.send(json.dumps(message).encode())  # type: ignore[attr-defined]
    except OSError:
        pass  # (the run has gone: the channel's end stops us next)


def _wait_for(child: int) -> int:
    """Reap until `child` has ended; its wait status."""
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if pid == child:
            return status


def _others() -> list[int]:
    """The live processes of this namespace but this one (zombies are reaped, not listed)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and name != "1":
            try:
                with open(f"/proc/{name}/stat") as handle:
                    if handle.read().rsplit(")", 1)[1].split()[0] != "Z":
                        found.append(int(name))
            except (OSError, IndexError):
                continue
    return found


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip() or "process"
    except OSError:
        return "process"


def _report(fd: int, names: list[str]) -> None:
    if fd < 0:
        return
    try:
        os.write(fd, "".join(name + "\n" for name in names).encode())
    except OSError:
        pass  # (no one listens any more: nothing to tell)


def _kill_all(signum: int) -> None:
    if os.getpid() != 1:
        return  # (-1 would be every process the user may signal)
    try:
        os.kill(-1, signum)  # every process of the namespace but this one
    except OSError:
        pass


def _reap_until_none(grace: float) -> None:
    """Reap the stopped processes for up to `grace` seconds, or until there are none."""
    import time

    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if not _others():
                return
            time.sleep(0.02)


if __name__ == "__main__":
    main(sys.argv[1:])
