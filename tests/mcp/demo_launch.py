"""Start the demo server (demo_server.py) fast: hand this process's stdin, stdout and stderr to
the demo zygote (demo_zygote.py, at the unix socket in $DEMO_ZYGOTE), which forks a server that
has imported the `mcp` SDK already. Run as `python -S -I demo_launch.py [demo_server args]`.

What `recursive` spawns stays one real process with the server's stdio on real pipes: this one
closes its copies of them (the server's exit is EOF to `recursive`), passes the signals it gets
on to the server, and exits as the server did (its code, or killed by the same signal). When it
dies, even by SIGKILL, the server dies at once: it watches this process (a pidfd sent along).
Without $DEMO_ZYGOTE it becomes the demo server itself (exec).
"""

import marshal
import os
import signal
import socket
import sys

RELAYED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)

server_pid = 0
pending: list[int] = []


def relay(signum: int, frame: object) -> None:
    if server_pid:
        try:
            os.kill(server_pid, signum)
        except ProcessLookupError:
            pass
    else:
        pending.append(signum)


def exit_as(status: int) -> None:
    """Exit the way a process with wait status `status` ended."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)
    os._exit(os.waitstatus_to_exitcode(status))


def main() -> None:
    global server_pid
    path = os.environ.get("DEMO_ZYGOTE")
    server = os.path.join(os.path.dirname(os.path.abspath(__file__)), "demo_server.py")
    if not path:
        os.execv(sys.executable, [sys.executable, server, *sys.argv[1:]])
    for signum in RELAYED:
        signal.signal(signum, relay)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    request = marshal.dumps({"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()})
    me = os.pidfd_open(os.getpid())
    socket.send_fds(sock, [len(request).to_bytes(8, "big")], [0, 1, 2, me])
    sock.sendall(request)
    null = os.open(os.devnull, os.O_RDWR)  # our copies of the pipes go: EOF and death reach `recursive`
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    os.close(me)
    buffer = b""
    while True:
        chunk = sock.recv(64)
        if not chunk:
            os._exit(70)  # the zygote went away without saying how the server ended
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            word, value = line.split()
            if word == b"pid":
                server_pid = int(value)
                for early in pending:
                    relay(early, None)
                pending.clear()
            else:
                exit_as(int(value))


main()
