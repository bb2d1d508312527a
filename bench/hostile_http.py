"""Hostile model servers (issue 36): `recursive run` beside the official SDKs on httpx2, each a
real process against the same loopback server, with peak RSS and wall time side by side.

The servers are tests/providers/hostile.py's; each case sends the same bytes to both:

    trickle     a 200 event stream of `: ping` every 0.5 s, never an answer; ours with
                --max-duration 10s, both with a 5 s request timeout
    cut         a chunked stream cut off 48 MiB into its first line, every time (ours retries
                a broken stream; the SDK's retries end once the head has come)
    gzip-bomb   200 KB of gzip that inflate to 200 MiB of newlines, as a stream
    huge-line   an event-stream line that never ends (the server stops at 512 MiB)
    redirect    307 to another origin (another port): does the other one get `x-api-key` and a
                configured header (`X-Team-Token`)?
    downgrade   an https server's 307 to plain http: followed?

The SDK side: `openai.OpenAI(...).chat.completions.create(stream=True)` (the redirect cases:
`anthropic.Anthropic(...).messages.create()` with `x-api-key` and `X-Team-Token` as default
headers, as ours gets them from ANTHROPIC_CUSTOM_HEADERS), 5 retries, a 5 s timeout, its own
backoff; ours: `recursive run` with the same provider, its defaults otherwise.
Every process is measured from a small one in between (tests/providers/hostile.py `measured`),
so that its peak RSS is its own. A process still running after `--limit` seconds is killed.

    python bench/hostile_http.py [--limit 120] [--only trickle,cut] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import ssl
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from providers.hostile import (  # noqa: E402 (tests/ is put on the path just above)
    MIB,
    Behaviour,
    HostileServer,
    Measured,
    answer,
    cut_line,
    endless_line,
    gzip_bomb,
    measured,
    measured_run,
    model_args,
    redirect,
    trickle,
)

KEY = "sk-bench-hostile-0123456789"
SECRETS = ("sk-bench-hostile", "team-secret")
ANTHROPIC_OK = b'{"content":[{"type":"text","text":"fine"}],"stop_reason":"end_turn"}'

# The SDK client in a process of its own: argv = provider, base URL, stream (1/0).
SDK = r"""
import sys
kind, url, stream = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
messages = [{"role": "user", "content": "hi"}]
try:
    if kind == "openai":
        import openai
        client = openai.OpenAI(base_url=url + "/v1", api_key=sys.argv[4], max_retries=5, timeout=5.0)
        for _ in client.chat.completions.create(model="fake-model", messages=messages, stream=True):
            pass
    else:
        import anthropic
        client = anthropic.Anthropic(base_url=url, api_key=sys.argv[4], max_retries=5, timeout=5.0,
                                     default_headers={"x-api-key": sys.argv[4] + "-custom",
                                                      "X-Team-Token": "team-secret"})
        client.messages.create(model="fake-model", max_tokens=16, messages=messages)
    print("answered")
except Exception as exc:
    print(" ".join(f"{type(exc).__name__}: {exc}".split())[:160])
    sys.exit(1)
"""


@dataclass
class Side:
    """One client's run of one case."""

    exit: int
    attempts: int
    peak_mib: float
    wall_s: float
    outcome: str


@dataclass
class Case:
    """A hostile server and the flags our run gets for it."""

    name: str
    provider: str
    start: Callable[[ExitStack], list[HostileServer]]  # starts the servers: the client's first
    ours_flags: tuple[str, ...] = ()
    ours_env: tuple[tuple[str, str], ...] = ()
    stream: bool = True


def serve(stack: ExitStack, behaviour: Behaviour, tls: ssl.SSLContext | None = None) -> HostileServer:
    return stack.enter_context(HostileServer(behaviour, tls=tls))


def cases(tls: ssl.SSLContext) -> list[Case]:
    def simple(behaviour: Behaviour) -> Callable[[ExitStack], list[HostileServer]]:
        return lambda stack: [serve(stack, behaviour)]

    def two_origins(stack: ExitStack) -> list[HostileServer]:
        other = serve(stack, answer("200 OK", ANTHROPIC_OK, "Content-Type: application/json"))
        return [serve(stack, redirect("307 Temporary Redirect", f"{other.url}/v1/messages")), other]

    def downgrade(stack: ExitStack) -> list[HostileServer]:
        plain = serve(stack, answer("200 OK", ANTHROPIC_OK, "Content-Type: application/json"))
        return [serve(stack, redirect("307 Temporary Redirect", f"{plain.url}/v1/messages"), tls), plain]

    timeout = (("RECURSIVE_REQUEST_TIMEOUT", "5"),)
    return [
        Case("trickle", "openai", simple(trickle(0.5)), ("--max-duration", "10s"), timeout),
        Case("cut", "openai", simple(cut_line(48 * MIB))),
        Case("gzip-bomb", "openai", simple(gzip_bomb(200 * MIB))),
        Case("huge-line", "openai", simple(endless_line(512 * MIB))),
        Case("redirect", "anthropic", two_origins, stream=False),
        Case("downgrade", "anthropic", downgrade, stream=False),
    ]


def attempts_and_leaks(servers: list[HostileServer]) -> tuple[int, str]:
    """Requests to the first server, and what the others were sent of our secrets."""
    first, *others = servers
    leaked = sorted({secret for server in others for request in server.requests for secret in SECRETS
                     if secret in json.dumps(request.headers)})
    reached = sum(len(server.requests) for server in others)
    note = f"; other origin: {reached} request(s), got {', '.join(leaked) or 'no secret'}" if others else ""
    return len(first.requests), note


def outcome_of_ours(run: Measured) -> str:
    """The result's subtype and first error, from `-o json`."""
    try:
        record = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return (run.stderr.strip().splitlines() or ["?"])[-1][:160]
    errors = record.get("errors") or []
    return f"{record['subtype']}: {errors[0][:240]}" if errors else record["subtype"]


def run_case(case: Case, limit: float, bundle: Path) -> tuple[Side, Side]:
    """The case run by `recursive run`, then by the SDK, each against servers of its own."""
    env = {"RECURSIVE_API_KEY": KEY, "SSL_CERT_FILE": str(bundle),
           "ANTHROPIC_CUSTOM_HEADERS": "x-api-key: sk-bench-hostile-custom\nX-Team-Token: team-secret"}
    sides = []
    for which in ("ours", "sdk"):
        with ExitStack() as stack, tempfile.TemporaryDirectory() as home:
            servers = case.start(stack)
            url = servers[0].url
            if which == "ours":
                run = measured_run("run", "hi", *model_args(case.provider, url, stream=case.stream), "-o", "json",
                                   *case.ours_flags, env={**env, **dict(case.ours_env), "RECURSIVE_HOME": home},
                                   timeout=limit)
                outcome = outcome_of_ours(run)
            else:
                run = measured([sys.executable, "-c", SDK, case.provider, url, "1" if case.stream else "0", KEY],
                               env={"SSL_CERT_FILE": str(bundle)}, timeout=limit)
                outcome = run.stdout.strip() or run.stderr.strip()[-160:]
            attempts, note = attempts_and_leaks(servers)
        if run.returncode == -9:
            outcome = f"still running after {limit:g} s: killed"
        sides.append(Side(run.returncode, attempts, round(run.peak_mib, 1), round(run.wall, 1), outcome + note))
    return sides[0], sides[1]


def tls_material(folder: Path) -> tuple[ssl.SSLContext, Path]:
    import trustme

    ca = trustme.CA()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("localhost").configure_cert(context)
    bundle = folder / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    return context, bundle


def table(rows: list[tuple[str, Side, Side]]) -> str:
    lines = ["| case | client | exit | attempts | peak RSS MiB | wall s | outcome |", "|---|---|---|---|---|---|---|"]
    for name, ours, sdk in rows:
        for label, side in (("recursive", ours), ("SDK on httpx2", sdk)):
            lines.append(f"| {name} | {label} | {side.exit} | {side.attempts} | {side.peak_mib:g} | {side.wall_s:g} | "
                         f"{side.outcome.replace('|', '/')} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=float, default=120.0, help="seconds before a process is killed")
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    wanted = {name for name in args.only.split(",") if name}
    with tempfile.TemporaryDirectory() as folder:
        context, bundle = tls_material(Path(folder))
        rows = []
        for case in cases(context):
            if wanted and case.name not in wanted:
                continue
            ours, sdk = run_case(case, args.limit, bundle)
            rows.append((case.name, ours, sdk))
            print(f"{case.name}: ours {ours.peak_mib:g} MiB {ours.wall_s:g} s; sdk {sdk.peak_mib:g} MiB "
                  f"{sdk.wall_s:g} s", file=sys.stderr, flush=True)
    print(table(rows))
    if args.json:
        figures: dict[str, Any] = {name: {"ours": asdict(ours), "sdk": asdict(sdk)} for name, ours, sdk in rows}
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
