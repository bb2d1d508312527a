"""The first process inside a run's command sandbox (os_sandbox.py): its pid 1, its second line.

bubblewrap runs it as pid 1 of the sandbox's own pid namespace (`--as-pid-1`), with the
interpreter recursive runs on and `-I -S`, so it imports nothing but the standard library:

    python -I -S sandbox_init.py [--landlock] [--rw PATH]... [--no-net] [--port N]... -- --zygote FD

With `--landlock` it first makes the writing rights of the filesystem (write, truncate,
create, remove, rename, link) allowed only beneath each `--rw` PATH and, with `--no-net`
where the kernel can (Landlock ABI 4), refuses every TCP connect and bind but a connect to
each `--port` (and its own listening there): the same policy bubblewrap applies with mounts
and a network namespace of its own (bubblewrap also protects folders inside the writable
ones, which Landlock, whose rules only grant, cannot), held should that first line be
misconfigured. Then it serves the run (`zygote`): it forks each command asked for on the
channel FD, reaps whatever ends, and for each `--port` N listens on 127.0.0.1:N inside and
hands every connection to the run, which joins it to the port outside: the one way out of a
sandbox without network, for a service the user named (`--sandbox-allow-port`). When the
channel closes (the run is over, or gone) it kills everything; the namespace ends with it.
"""

import _signal as signal  # (the C module: `signal` imports enum, 6 ms of every sandbox's start)
import json
import os
import select
import socket
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


def restrict(writable: list[str], no_net: bool, ports: list[int] | None = None) -> int:
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
    for port in (ports or []) if net else []:
        # struct landlock_net_port_attr {u64 allowed_access; u64 port}
        rule = ctypes.create_string_buffer(struct.pack("=QQ", _NET_BIND_TCP | _NET_CONNECT_TCP, port))
        if libc.syscall(_ADD_RULE, ruleset, _RULE_NET_PORT, rule, ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule port {port}")
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


_RULE_NET_PORT = 2


def main(argv: list[str]) -> None:
    writable: list[str] = []
    ports: list[int] = []
    no_net = landlock = False
    while argv and argv[0] != "--":
        flag = argv.pop(0)
        if flag == "--rw":
            writable.append(argv.pop(0))
        elif flag == "--port":
            ports.append(int(argv.pop(0)))
        elif flag == "--no-net":
            no_net = True
        elif flag == "--landlock":
            landlock = True
    command = argv[1:]
    if landlock:
        try:
            restrict(writable, no_net, ports)
        except OSError as exc:  # fail closed: no command runs unprotected
            sys.stderr.write(f"recursive sandbox: cannot apply Landlock: {exc}\n")
            os._exit(126)
    if command[:1] != ["--zygote"] or os.getpid() != 1:  # (only as the init of a namespace of its own)
        sys.stderr.write("recursive sandbox: sandbox_init runs only as a sandbox's pid 1\n")
        os._exit(2)
    os._exit(zygote(int(command[1]), ports))


def zygote(channel: int, ports: list[int]) -> int:
    """As pid 1 of a run's sandbox: start each command asked for on `channel` (a Unix
    SOCK_SEQPACKET socket; a request is JSON `{"id", "argv", "cwd", "env"}` with the command's
    output file descriptor), answer `{"id", "pid"}` once it is forked, exec it when told `{"go":
    id}` and answer `{"id", "status"}` (a wait status) when it ends; reap whatever else ends;
    hand each connection to a listened port over as `{"port": N}` with its descriptor."""
    sock = socket.socket(fileno=channel)
    listeners = {_listen(port): port for port in ports}
    started: dict[int, int] = {}  # pid → request id
    gates: dict[int, int] = {}  # request id → the pipe its command waits on before it execs
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda number, frame: None)  # (its wake-up byte is what counts)
    while True:
        ready, _, _ = select.select([sock.fileno(), wake_read, *(s.fileno() for s in listeners)], [], [])
        if wake_read in ready:
            os.read(wake_read, 4096)
        _reap(sock, started)
        for listener, port in listeners.items():
            if listener.fileno() in ready:
                _hand_over(sock, listener, port)
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
            for listener in listeners:
                listener.close()
            _start(request, fds, hold)
        os.close(hold)
        for fd in fds:
            os.close(fd)
        started[pid], gates[request["id"]] = request["id"], gate
        _send(sock, {"id": request["id"], "pid": pid})
        _reap(sock, started)


def _listen(port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    return listener


def _hand_over(sock: socket.socket, listener: socket.socket, port: int) -> None:
    """A command connected to `port` inside: give the connection to the run, which joins it
    to the same port outside."""
    try:
        conn, _ = listener.accept()
    except OSError:
        return
    try:
        socket.send_fds(sock, [json.dumps({"port": port}).encode()], [conn.fileno()])
    except OSError:
        pass
    conn.close()


def _reap(sock: socket.socket, started: dict[int, int]) -> None:
    """Collect every process that has ended; tell the run about the commands among them."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in started:
            _send(sock, {"id": started.pop(pid), "status": status})


def _start(request: dict[str, object], fds: list[int], hold: int) -> None:
    """In the forked child: become the leader of a session of its own, output to the passed
    descriptor, stdin from /dev/null, then, once the run has seen its pid (`hold` readable:
    a command that ended at once would be gone before the run could know it), exec the
    command (127 if it cannot be)."""
    if os.read(hold, 1) != b"1":
        os._exit(126)  # (the run did not want it any more)
    os.close(hold)
    try:
        for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        os.setsid()
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[0], 2)
        os.closerange(3, 1 << 16)
        argv, given = request["argv"], request["env"]
        assert isinstance(argv, list) and isinstance(given, dict)
        os.chdir(str(request["cwd"]))
        os.execve(argv[0], argv, {os.fsencode(key): os.fsencode(value) for key, value in given.items()})
    except OSError as exc:
        os.write(2, f"recursive sandbox: cannot run the command: {exc.strerror}\n".encode())
    os._exit(127)


def _send(sock: socket.socket, message: dict[str, int]) -> None:
    try:
        sock.send(json.dumps(message).encode())
    except OSError:
        pass  # (the run has gone: the channel's end stops us next)


def _kill_all(signum: int) -> None:
    try:
        os.kill(-1, signum)  # every process of the namespace but this one (we are its pid 1)
    except OSError:
        pass


if __name__ == "__main__":
    main(sys.argv[1:])
