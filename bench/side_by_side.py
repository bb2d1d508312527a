"""Side by side, in one run: the raw floor, `recursive` (both providers), Claude Code, Codex CLI, mini-swe-agent, llm.

Every agent works in the same 1,000-file workspace against the instant server, which answers
each step at once with a call of that agent's shell tool running `true`, then with the final
answer. Each agent runs twice per round: once for 1 step (the first reply is the final one)
and once for N + 1 steps, so

    start-up   = T(1 step), the whole process, and separately the time to its first request
    per step   = (T(N + 1 steps) − T(1 step)) / N      (start-up never hides in it)

with T the wall time of the process (CPU: user + sys, children included). The per-step figure
on the server's clock, (last request − first request) / N of the long run, is shown beside it:
the same steps without the noise of two whole processes' start and exit. On that clock the
per-step figure held against the raw floor is split in two: the first step (the first reply
read, the first tool call with its one-time imports, the second request sent) and a steady
step (the median of the intervals after the first). Medians over
`--rounds` rounds; the agents take turns within a round, so load from elsewhere on the
machine lands on all alike. Ratios are against `recursive` with the OpenAI provider and
against the raw floor.

The agents, each with its own scratch HOME (kept across runs: every run after the first is a
returning user's) and a dummy key:

    raw floor            bench/raw_loop.py --shell: h11 framing on one asyncio connection replaying a real
                         first request, a `bash -c true` per step, nothing else (no SDK, no client object)
    recursive openai /   `recursive run` with sessions, checkpoints and the command sandbox on (the
    recursive anthropic  defaults); once more with `--no-checkpoints`, since each shell call is a
                         checkpoint window (a snapshot before and after it) and the workspace has
                         1,000 files, and with `--no-checkpoints --sandbox off` too: what the raw
                         floor does, whose `bash -c true` runs in no sandbox
    Claude Code          the CLI inside the `claude-agent-sdk` wheel (`claude_agent_sdk/_bundled/claude`),
                         `-p … --allowedTools Bash --output-format json`, ANTHROPIC_BASE_URL on loopback,
                         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, DISABLE_TELEMETRY=1
    Codex CLI            the native binary `npm install @openai/codex` ships (`--codex DIR`, default /tmp/codex:
                         `npm install --prefix /tmp/codex @openai/codex`), `codex exec --skip-git-repo-check`
                         with its defaults otherwise: approval `never`, sandbox `read-only` (bubblewrap +
                         seccomp, through its `codex-linux-sandbox` helper), the `exec_command` tool in a PTY;
                         a `model_providers.bench` entry (`wire_api = "responses"`) on the instant server's
                         /v1/responses, `[analytics] enabled = false`. Its CODEX_HOME is in the checkout's
                         git-ignored build/, since Codex refuses to put its sandbox helper's alias under /tmp.
                         Once more with `--dangerously-bypass-approvals-and-sandbox`: what its sandbox costs
    mini-swe-agent       `mini -y --exit-immediately` (litellm, `openai/` model), stopped by its
                         `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`; LITELLM_LOCAL_MODEL_COST_MAP=True
                         keeps litellm off the network
    llm                  `llm -m bench --functions tools.py --cl 0`, an extra OpenAI-compatible model;
                         the tool runs `bash -c` like the others; prompts logged to its SQLite as usual

mini-swe-agent and llm come from a separate virtualenv (never the project's), `--peers DIR`
(default /tmp/peers): `python -m venv /tmp/peers && /tmp/peers/bin/pip install mini-swe-agent llm`.
An agent that is not installed is left out with a note.

    python bench/side_by_side.py [--steps 50] [--rounds 5] [--files 1000] [--peers DIR] [--codex DIR]
                                 [--before CHECKOUT] [--only PREFIXES] [--json FILE]

`--before CHECKOUT` adds the four `recursive` rows once more, run from another checkout's code
(PYTHONPATH=CHECKOUT, the same interpreter, a console script for the entry point its
pyproject.toml names) in the same rounds: a before and after that met the same load.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from first_step import make_workspace
from harness import (
    BENCH,
    PYTHON,
    RECURSIVE,
    ServerProcess,
    child_env,
    machine,
    median,
    model_flag,
    request_template,
    run_child,
    scratch_dir,
    table,
    write_json,
)

TASK = "run true until told to stop"
SUBMIT = {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}  # how mini-swe-agent says it is done
LLM_TOOLS = '''import subprocess


def run_shell(command: str) -> str:
    """Run a bash command in the workspace and return its output and exit code."""
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True)
    return f"{done.stdout}{done.stderr}exit code: {done.returncode}"
'''


@dataclass
class Agent:
    """How to run one agent: its argv for a server, its environment, the tool the server calls."""

    label: str
    argv: Callable[[ServerProcess], list[str]]
    env: dict[str, str]
    tool: str = "run_shell"
    arguments: dict[str, Any] | None = None
    final_arguments: dict[str, Any] | None = None
    prepare: Callable[[ServerProcess], None] = field(default=lambda server: None)


def claude_binary() -> str | None:
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.origin:
        return None
    path = Path(spec.origin).parent / "_bundled" / "claude"
    return str(path) if path.is_file() else None


CODEX_DEFAULT = "Codex CLI (default: read-only sandbox)"
BARE = "recursive openai --no-checkpoints --sandbox off"  # what the raw floor does: no sandbox, no snapshots


def codex_binary(folder: Path) -> str | None:
    """The native `codex` inside an npm install of @openai/codex (not its node launcher), if there is one."""
    found = sorted(folder.glob("node_modules/@openai/codex-*/vendor/*/bin/codex"))
    return str(found[0]) if found else None


def codex_home() -> Path:
    """A scratch CODEX_HOME outside any temporary folder (Codex will not alias its sandbox helper there)."""
    build = BENCH.parent / "build"
    build.mkdir(exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="bench-codex-home-", dir=build))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    return home


def codex_agents(binary: str) -> list[Agent]:
    """Codex CLI as it comes (read-only sandbox), and without its sandbox."""
    home = codex_home()
    env = child_env(HOME=scratch_dir("codex-home"), CODEX_HOME=str(home), BENCH_API_KEY="x")

    def point_codex(server: ServerProcess) -> None:
        (home / "config.toml").write_text(
            'model = "bench"\nmodel_provider = "bench"\n\n[model_providers.bench]\nname = "bench"\n'
            f'base_url = "{server.base_url}"\nwire_api = "responses"\nenv_key = "BENCH_API_KEY"\n\n'
            "[analytics]\nenabled = false\n", encoding="utf-8")

    exec_argv = [binary, "exec", "--skip-git-repo-check"]
    shell: dict[str, Any] = {"cmd": "true"}
    return [Agent(CODEX_DEFAULT, lambda s: [*exec_argv, TASK], env, "exec_command", shell, prepare=point_codex),
            Agent("Codex CLI --dangerously-bypass-approvals-and-sandbox", lambda s: [
                *exec_argv, "--dangerously-bypass-approvals-and-sandbox", TASK], env, "exec_command", shell,
                prepare=point_codex)]


def entry_point(checkout: str) -> str:
    """A console script like the one pip wrote for us, for the `recursive` entry point in the
    checkout's pyproject.toml (it may name another module than ours); ours if it has none."""
    pyproject = Path(checkout) / "pyproject.toml"
    if not pyproject.is_file():
        return RECURSIVE
    named = re.search(r'^recursive\s*=\s*"([\w.]+):(\w+)"', pyproject.read_text(encoding="utf-8"), re.MULTILINE)
    if not named:
        raise SystemExit(f"{pyproject}: no `recursive = \"module:function\"` entry point")
    module, function = named.groups()
    script = Path(scratch_dir("before-bin")) / "recursive"
    script.write_text(f"#!{PYTHON}\nimport sys\nfrom {module} import {function}\n\n"
                      f"if __name__ == '__main__':\n    sys.exit({function}())\n", encoding="utf-8")
    script.chmod(0o755)
    return str(script)


def recursive_agents(workspace: str, suffix: str, env: dict[str, str], binary: str = RECURSIVE) -> list[Agent]:
    """The four `recursive run` rows (see the module docstring), labelled with `suffix`."""
    def argv(provider: str, *extra: str) -> Callable[[ServerProcess], list[str]]:
        return lambda s: [binary, "run", "--provider", provider, "--api-base",
                          s.base_url if provider == "openai" else s.root_url, *model_flag(provider),
                          "-C", workspace, *extra, TASK]

    return [Agent(f"recursive openai{suffix}", argv("openai"), env),
            Agent(f"recursive anthropic{suffix}", argv("anthropic"), env),
            Agent(f"recursive openai --no-checkpoints{suffix}", argv("openai", "--no-checkpoints"), env),
            Agent(f"{BARE}{suffix}",
                  argv("openai", "--no-checkpoints", "--sandbox", "off"), env)]


def agents(workspace: str, peers: Path, codex: Path, before: str = "") -> tuple[list[Agent], list[str]]:
    """The agents that are installed here, and a note for each that is not."""
    found: list[Agent] = []
    missing: list[str] = []
    home = scratch_dir("recursive-home")
    ours = child_env(RECURSIVE_HOME=home, RECURSIVE_API_KEY="x")
    template = request_template(ours, workspace)
    found.append(Agent("raw floor (h11 + bash -c true)", lambda s: [
        PYTHON, str(BENCH / "raw_loop.py"), "--base-url", s.base_url, "--template", str(template), "--shell"],
        child_env()))
    found += recursive_agents(workspace, "", ours)
    if before:  # the same runs of another checkout's code, in the same rounds
        found += recursive_agents(workspace, f" (before: {before})", child_env(
            RECURSIVE_HOME=scratch_dir("recursive-home-before"), RECURSIVE_API_KEY="x", PYTHONPATH=before),
            entry_point(before))
    claude = claude_binary()
    if claude:
        env = child_env(HOME=scratch_dir("claude-home"), ANTHROPIC_API_KEY="x", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                        DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1")
        found.append(Agent("Claude Code", lambda s: [claude, "-p", TASK, "--allowedTools", "Bash",
                                                     "--output-format", "json"],
                           env, tool="Bash", prepare=lambda s: env.update(ANTHROPIC_BASE_URL=s.root_url)))
    else:
        missing.append("Claude Code: no claude_agent_sdk/_bundled/claude in this interpreter")
    binary = codex_binary(codex)
    if binary:
        found += codex_agents(binary)
    else:
        missing.append(f"Codex CLI: no {codex}/node_modules/@openai/codex-*/vendor/*/bin/codex")
    mini = peers / "bin" / "mini"
    if mini.is_file():
        trajectory = Path(scratch_dir("mini-out")) / "trajectory.json"
        found.append(Agent("mini-swe-agent", lambda s: [
            str(mini), "-y", "--exit-immediately", "-m", "openai/bench", "-t", TASK, "-c", "mini.yaml",
            "-c", f"model.model_kwargs.api_base={s.base_url}", "-o", str(trajectory)],
            child_env(HOME=scratch_dir("mini-home"), OPENAI_API_KEY="x", MSWEA_CONFIGURED="true",
                      MSWEA_COST_TRACKING="ignore_errors", LITELLM_LOCAL_MODEL_COST_MAP="True"),
            tool="bash", final_arguments=SUBMIT))
    else:
        missing.append(f"mini-swe-agent: no {mini}")
    llm = peers / "bin" / "llm"
    if llm.is_file():
        llm_home = Path(scratch_dir("llm-home"))
        tools = llm_home / "tools.py"
        tools.write_text(LLM_TOOLS, encoding="utf-8")

        def point_llm(server: ServerProcess) -> None:
            (llm_home / "extra-openai-models.yaml").write_text(
                f'- model_id: bench\n  model_name: bench\n  api_base: "{server.base_url}"\n  supports_tools: true\n',
                encoding="utf-8")

        found.append(Agent("llm", lambda s: [str(llm), "-m", "bench", "--functions", str(tools), "--cl", "0", TASK],
                           child_env(HOME=str(llm_home), LLM_USER_PATH=str(llm_home), OPENAI_API_KEY="x"),
                           prepare=point_llm))
    else:
        missing.append(f"llm: no {llm}")
    return found, missing


def timed(agent: Agent, steps: int, workspace: str) -> dict[str, float]:
    """One run of `steps` steps: wall and CPU seconds, time to the first request, peak RSS."""
    with ServerProcess(steps, agent.tool, agent.arguments, agent.final_arguments) as server:
        agent.prepare(server)
        run = run_child(agent.argv(server), env=agent.env, cwd=workspace)
        stats = server.stats()
    if run.returncode or stats["requests"] != steps:
        raise SystemExit(f"{agent.label}: exit {run.returncode} after {stats['requests']}/{steps} requests")
    arrivals = stats["arrivals"]
    gaps = [later - earlier for earlier, later in zip(arrivals, arrivals[1:])]
    return {"wall_s": run.wall, "cpu_s": run.cpu, "first_request_s": arrivals[0] - run.started,
            "span_s": arrivals[-1] - arrivals[0], "rss_mb": run.maxrss_mb,
            "first_step_s": gaps[0] if gaps else 0.0, "steady_step_s": median(gaps[1:] or [0.0])}


def measure(found: list[Agent], steps: int, rounds: int, workspace: str,
            load: list[float]) -> dict[str, dict[str, float]]:
    """Per agent: medians of the 1-step and (steps + 1)-step runs, and the per-step figures;
    `load` gets the machine's 1-minute load average after each round."""
    samples: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {a.label: [] for a in found}
    for agent in found:  # warm-up: bytecode caches, first-run setup in each scratch HOME
        timed(agent, 1, workspace)
    for _ in range(rounds):
        for agent in found:
            samples[agent.label].append((timed(agent, 1, workspace), timed(agent, steps + 1, workspace)))
        load.append(os.getloadavg()[0])
    results = {}
    for label, pairs in samples.items():
        ones, longs = [p[0] for p in pairs], [p[1] for p in pairs]
        results[label] = {
            "startup_s": median([r["wall_s"] for r in ones]),
            "first_request_s": median([r["first_request_s"] for r in ones]),
            "startup_cpu_s": median([r["cpu_s"] for r in ones]),
            "step_ms": median([(b["wall_s"] - a["wall_s"]) / steps * 1000 for a, b in pairs]),
            "step_cpu_ms": median([(b["cpu_s"] - a["cpu_s"]) / steps * 1000 for a, b in pairs]),
            "step_server_ms": median([b["span_s"] / steps * 1000 for b in longs]),
            "first_step_server_ms": median([b["first_step_s"] * 1000 for b in longs]),
            "steady_step_server_ms": median([b["steady_step_s"] * 1000 for b in longs]),
            "rss_mb": max(r["rss_mb"] for r in ones),
            "rss_long_mb": max(r["rss_mb"] for r in longs),
        }
    return results


def report(results: dict[str, dict[str, float]], steps: int) -> None:
    base = results.get("recursive openai")
    floor = next((r for label, r in results.items() if label.startswith("raw floor")), None)
    rows = []
    for label, r in results.items():
        rows.append([label, r["first_request_s"], r["startup_s"], r["startup_cpu_s"],
                     r["startup_s"] / base["startup_s"] if base else "", r["step_ms"], r["step_cpu_ms"],
                     r["step_server_ms"], r["step_ms"] / base["step_ms"] if base else "",
                     r["step_ms"] / floor["step_ms"] if floor else "", r["rss_mb"], r["rss_long_mb"]])
    print(table(["agent", "first request s", "start-up s", "start-up CPU s", "× recursive", f"ms/step (N={steps})",
                 "CPU ms/step", "server ms/step", "× recursive", "× floor", "RSS MB 1 step",
                 f"RSS MB {steps + 1} steps"], rows))
    peers = [label for label in ("Claude Code", CODEX_DEFAULT) if label in results]
    for label in ("recursive openai", "recursive anthropic"):
        if label not in results:
            continue
        ours = results[label]
        for peer in peers:
            theirs = results[peer]["startup_s"]
            print(f"one-step run ahead of {peer}: {label} {ours['startup_s']:.3f} s vs {theirs:.3f} s"
                  f" — {'met' if ours['startup_s'] < theirs else 'MISSED'}")
    # The floor runs its `bash -c true` in no sandbox and snapshots nothing: it is held against
    # the run that does the same; what the sandbox and the checkpoints add is shown beside it.
    bare = results.get(BARE)
    if floor and bare:
        over = bare["step_ms"] - floor["step_ms"]
        print(f"per step within 0.5 ms of the raw floor: {BARE} {over:+.2f} ms"
              f" (server clock {bare['step_server_ms'] - floor['step_server_ms']:+.2f} ms)"
              f" — {'met' if over <= 0.5 else 'MISSED'}")
        print(f"  on the server clock, the first step {bare['first_step_server_ms'] - floor['first_step_server_ms']:+.2f} ms"
              f" over the floor's first (the first tool call's one-time work), a steady step"
              f" {bare['steady_step_server_ms'] - floor['steady_step_server_ms']:+.2f} ms")
        if base:
            print(f"the command sandbox and checkpoints add {base['step_server_ms'] - bare['step_server_ms']:+.2f} ms"
                  " a step on the server clock (recursive openai, the defaults)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50, help="N: the long run has N + 1 steps")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--peers", default="/tmp/peers", help="virtualenv with mini-swe-agent and llm")
    parser.add_argument("--codex", default="/tmp/codex", help="folder of an `npm install @openai/codex`")
    parser.add_argument("--before", default="", help="another checkout: its `recursive` runs beside this one's "
                        "(PYTHONPATH=DIR), in the same rounds, so both meet the same load")
    parser.add_argument("--only", help="comma-separated label prefixes to run (e.g. 'recursive,Claude')")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    started = time.perf_counter()
    workspace = make_workspace(args.files)
    found, missing = agents(workspace, Path(args.peers), Path(args.codex), args.before)
    if args.only:
        prefixes = tuple(p.strip() for p in args.only.split(","))
        found = [a for a in found if a.label.startswith(prefixes)]
    for note in missing:
        print(f"(left out: {note})")
    if not shutil.which("bash"):
        raise SystemExit("bash is needed: every agent's tool runs it")
    load: list[float] = []
    results = measure(found, args.steps, args.rounds, workspace, load)
    report(results, args.steps)
    info = machine()
    print(f"({info['nproc']} × {info['cpu']}, Python {info['python']}, {info['date']}, commit {info['commit']}; "
          f"{args.rounds} rounds, {args.files}-file workspace, {time.perf_counter() - started:.0f} s; "
          f"1-minute load average after each round {min(load):.1f}–{max(load):.1f}, median {median(load):.1f})")
    write_json(args.json, {"steps": args.steps, "rounds": args.rounds, "files": args.files, "machine": info,
                           "load_average_1m": load, "results": results, "left_out": missing})


if __name__ == "__main__":
    main()
