"""What `--otel` costs a run, with a collector that works, refuses or hangs.

    python bench/otel_collector.py [--runs 5] [--json FILE]

Each run is one `recursive run` process with the scripted provider (one tool call, then the
answer), wall seconds from start to exit, median of --runs. Rows: without --otel; --otel
against a loopback collector that answers every export at once; against a port nobody listens
on (refused); against one that takes the request and never answers (hangs). The run's end
waits for its last export at most 2 s (features/telemetry/otlp.py, FINISH_WAIT), and not at
all once the exporter says it failed.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from harness import PYTHON, child_env, machine, run_child, table, write_json

SCRIPT = '[{"tool_calls": [{"name": "list_dir", "arguments": {}}]}, {"text": "done"}]'


class _Collector(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.server.hangs:  # type: ignore[attr-defined]
            threading.Event().wait(60)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()


def collector(hangs: bool) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    server.daemon_threads = True
    server.hangs = hangs  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def command(folder: Path, otel: bool, endpoint: str) -> tuple[list[str], dict[str, str]]:
    script = folder / "script.json"
    script.write_text(SCRIPT, encoding="utf-8")
    argv = [PYTHON, "-m", "recursive_cli", "run", "list", "-C", str(folder), "--provider", "scripted",
            "--script", str(script), "--no-session", *(["--otel"] if otel else [])]
    return argv, child_env(RECURSIVE_HOME=str(folder / "home"), OTEL_EXPORTER_OTLP_ENDPOINT=endpoint)


def timed(commands: list[tuple[list[str], dict[str, str]]], runs: int) -> list[float]:
    """The median wall time of each command, run in rounds (one of each per round) so that the
    machine's load falls on every row alike."""
    for argv, env in commands:
        run_child(argv, env)  # (bytecode written)
    walls: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for index, (argv, env) in enumerate(commands):
            done = run_child(argv, env)
            assert done.returncode == 0, done
            walls[index].append(done.wall)
    return [statistics.median(values) for values in walls]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    working, hanging = collector(False), collector(True)
    cases = [("without --otel", False, f"http://127.0.0.1:{working.server_address[1]}"),
             ("--otel, collector answers", True, f"http://127.0.0.1:{working.server_address[1]}"),
             ("--otel, connection refused", True, f"http://127.0.0.1:{closed_port()}"),
             ("--otel, collector hangs", True, f"http://127.0.0.1:{hanging.server_address[1]}")]
    with tempfile.TemporaryDirectory() as root:
        commands = []
        for index, (_, otel, endpoint) in enumerate(cases):
            folder = Path(root) / str(index)
            folder.mkdir()
            commands.append(command(folder, otel, endpoint))
        walls = timed(commands, args.runs)
    rows = [[name, f"{wall:.2f}", "" if index == 0 else f"{wall - walls[0]:+.2f}"]
            for index, ((name, _, _), wall) in enumerate(zip(cases, walls))]
    results = {name: wall for (name, _, _), wall in zip(cases, walls)}
    print(table(["run", "wall s (median)", "added"], rows))
    write_json(args.json, {"machine": machine(), "runs": args.runs, "wall_s": results})


if __name__ == "__main__":
    main()
