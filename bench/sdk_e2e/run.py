"""Run claude-agent-sdk-python's own `e2e-tests/` and `examples/` with the SDK's CLI pointed at
`recursive` and at the real Claude Code it bundles, both against the same scripted loopback
model (model.py), and print one table: test -> Claude Code, recursive.

The suite is not ours and is not copied here: give a checkout of the SDK's repository (one
matching the installed `claude-agent-sdk` as closely as you can) with `--checkout DIR` or
`CLAUDE_AGENT_SDK_PYTHON=DIR`. Its tests run unchanged; `cli_patch.py` only makes the SDK's
CLI lookup return the CLI under test. Each CLI gets a fresh `$HOME` (so Claude Code's
`~/.claude` and our `RECURSIVE_HOME` start empty) and no real key.

    python bench/sdk_e2e/run.py --checkout /tmp/sdkpy [--only recursive] [-k EXPR]
        [--no-examples] [--json FILE] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
from model import ScriptedModel  # noqa: E402

# each example with the arguments it needs to run all of itself; ipython's needs IPython
EXAMPLES: list[tuple[str, list[str]]] = [
    ("quick_start.py", []), ("streaming_mode.py", ["all"]), ("streaming_mode_trio.py", []),
    ("hooks.py", ["all"]), ("setting_sources.py", ["all"]), ("agents.py", []),
    ("filesystem_agents.py", []), ("include_partial_messages.py", []), ("max_budget_usd.py", []),
    ("mcp_calculator.py", []), ("plugin_example.py", []), ("stderr_callback_example.py", []),
    ("system_prompt.py", []), ("tool_permission_callback.py", []), ("tools_option.py", []),
]
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
         "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1"}


def claude_code() -> str:
    import claude_agent_sdk

    return str(Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude")


def recursive_wrapper(where: Path) -> str:
    """`recursive` as the SDK runs it: our package from this tree, the Anthropic provider (the
    base URL and key come from ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY, as for Claude Code)."""
    path = where / "recursive-cli"
    path.write_text(f'#!/bin/sh\nexec {sys.executable} -m recursive_cli --provider anthropic "$@"\n',
                    encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def environment(cli: str, url: str, home: Path, tree: Path = REPO) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("ANTHROPIC_", "CLAUDE", "RECURSIVE_", "OPENAI_"))}
    home.mkdir(parents=True, exist_ok=True)
    env.update(QUIET, HOME=str(home), SDK_E2E_CLI=cli, ANTHROPIC_BASE_URL=url,
               ANTHROPIC_API_KEY="sk-ant-scripted", RECURSIVE_HOME=str(home / ".recursive"),
               PYTHONPATH=os.pathsep.join([str(tree), str(HERE)]))
    return env


def run_tests(checkout: Path, env: dict[str, str], work: Path, select: str | None) -> dict[str, dict[str, str]]:
    ini = work / "pytest.ini"
    ini.write_text("[pytest]\naddopts = -p anyio\nmarkers =\n    e2e: e2e\n", encoding="utf-8")
    report = work / "junit.xml"
    argv = [sys.executable, "-m", "pytest", "-c", str(ini), "--rootdir", str(checkout), "-p", "cli_patch",
            "-p", "no:cacheprovider", "-q", "--junitxml", str(report), str(checkout / "e2e-tests")]
    if select:
        argv += ["-k", select]
    with (work / "pytest.log").open("w") as log:
        subprocess.run(argv, cwd=checkout, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=3600, check=False)
    outcomes: dict[str, dict[str, str]] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{Path(case.get('classname', '').replace('.', '/')).name}::{case.get('name')}"
        failure = case.find("failure") if case.find("failure") is not None else case.find("error")
        skipped = case.find("skipped")
        if failure is not None:
            outcomes[name] = {"outcome": "fail", "why": (failure.get("message") or "")[:300]}
        elif skipped is not None:
            outcomes[name] = {"outcome": "skip", "why": (skipped.get("message") or "")[:300]}
        else:
            outcomes[name] = {"outcome": "pass", "why": ""}
    return outcomes


def run_examples(checkout: Path, env: dict[str, str], work: Path) -> dict[str, dict[str, str]]:
    outcomes: dict[str, dict[str, str]] = {}
    for script, args in EXAMPLES:
        code = ("import cli_patch, runpy, sys; sys.argv = [sys.argv[1], *sys.argv[2:]]; "
                "runpy.run_path(sys.argv[0], run_name='__main__')")
        argv = [sys.executable, "-c", code, str(checkout / "examples" / script), *args]
        try:
            done = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True, timeout=180,
                                  stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired:
            outcomes[f"examples/{script}"] = {"outcome": "fail", "why": "timed out after 180 s"}
            continue
        (work / f"{script}.log").write_text(done.stdout + "\n--- stderr\n" + done.stderr, encoding="utf-8")
        # an example fails by its exit, a traceback, or in its own words (its ❌ / WARNING lines)
        said = [line for line in done.stdout.splitlines() if line.lstrip().startswith(_FAILURE_WORDS)]
        broken = done.returncode != 0 or "Traceback" in done.stderr or bool(said)
        tail = (said or done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or [""])[-1]
        outcomes[f"examples/{script}"] = {"outcome": "fail" if broken else "pass",
                                          "why": tail[:300] if broken else "", "output": _normal(done.stdout)}
    return outcomes


def typescript_sdk() -> Path | None:
    """The folder holding node_modules/@anthropic-ai/claude-agent-sdk: $CLAUDE_AGENT_SDK_TS, else
    the one tests/sdk/test_typescript_sdk.py installs (run that test once to install it)."""
    given = os.environ.get("CLAUDE_AGENT_SDK_TS")
    if given:
        return Path(given)
    sys.path.insert(0, str(REPO / "tests"))
    from sdk.test_typescript_sdk import cache_folder, complete  # noqa: PLC0415

    folder = cache_folder()
    return folder if complete(folder) else None


def run_typescript(env: dict[str, str], work: Path, sdk: Path, select: str | None) -> dict[str, dict[str, str]]:
    """ts_checks.mjs, from a folder whose node_modules is the SDK's install."""
    here = work / "ts"
    here.mkdir()
    (here / "node_modules").symlink_to(sdk / "node_modules")
    (here / "package.json").write_text('{"type": "module"}', encoding="utf-8")
    shutil.copy(HERE / "ts_checks.mjs", here / "ts_checks.mjs")
    argv = ["node", str(here / "ts_checks.mjs"), str(here / "work"), *([select] if select else [])]
    done = subprocess.run(argv, cwd=here, env=env, capture_output=True, text=True, timeout=1800, check=False)
    (work / "ts.log").write_text(done.stdout + "\n--- stderr\n" + done.stderr, encoding="utf-8")
    try:
        report = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"ts/(the check set)": {"outcome": "fail", "why": (done.stderr.strip() or "no report")[-300:]}}
    return {f"ts/{name}": outcome for name, outcome in report.items()}


_FAILURE_WORDS = ("❌", "WARNING:", "Error:", "ERROR")


def _normal(text: str) -> str:
    """An example's stdout with what differs between any two runs (ids, numbers) blanked."""
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "ID", text)
    return re.sub(r"\d+(\.\d+)?", "N", text)


def table(results: dict[str, dict[str, dict[str, str]]]) -> str:
    names = sorted({name for outcomes in results.values() for name in outcomes},
                   key=lambda n: (n.startswith("ts/"), n.startswith("examples/"), n))
    targets = list(results)
    lines = ["| test | " + " | ".join(targets) + " |", "|---|" + "---|" * len(targets)]
    reference = results.get("claude-code", {})
    for name in names:
        cells = []
        for target in targets:
            got = results[target].get(name, {})
            cell = got.get("outcome", "-")
            if "output" in got and target != "claude-code" and name in reference:
                cell += " (same output)" if got["output"] == reference[name].get("output") else " (output differs)"
            cells.append(cell)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    totals = [sum(o["outcome"] == "pass" for o in results[t].values()) for t in targets]
    lines.append("| **passed** | " + " | ".join(f"**{n}/{len(names)}**" for n in totals) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", default=os.environ.get("CLAUDE_AGENT_SDK_PYTHON"),
                        help="a checkout of claude-agent-sdk-python (or CLAUDE_AGENT_SDK_PYTHON)")
    parser.add_argument("--only", choices=["claude-code", "recursive"])
    parser.add_argument("-k", dest="select", help="pytest -k expression for e2e-tests")
    parser.add_argument("--no-examples", action="store_true")
    parser.add_argument("--no-tests", action="store_true")
    parser.add_argument("--no-ts", action="store_true", help="leave out the TypeScript SDK check set")
    parser.add_argument("--ts-only", help="a regex of the TypeScript checks to run")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--pythonpath", type=Path, default=REPO,
                        help="the source tree whose recursive_cli runs (default: this one), e.g. to compare with main")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, homes)")
    args = parser.parse_args()
    if not args.checkout or not (Path(args.checkout) / "e2e-tests").is_dir():
        parser.error("give --checkout DIR (or CLAUDE_AGENT_SDK_PYTHON) naming a claude-agent-sdk-python checkout")
    checkout = Path(args.checkout).resolve()
    work = Path(tempfile.mkdtemp(prefix="sdk-e2e-"))
    results: dict[str, dict[str, dict[str, str]]] = {}
    with ScriptedModel(log=work / "model.jsonl") as model:
        targets = {"claude-code": claude_code(), "recursive": recursive_wrapper(work)}
        for target, cli in targets.items():
            if args.only and target != args.only:
                continue
            where = work / target
            where.mkdir()
            env = environment(cli, model.url, where / "home", args.pythonpath.resolve())
            outcomes: dict[str, dict[str, str]] = {}
            if not args.no_tests:
                outcomes.update(run_tests(checkout, env, where, args.select))
            if not args.no_examples:
                outcomes.update(run_examples(checkout, env, where))
            if not args.no_ts:
                sdk = typescript_sdk()
                if sdk is None:
                    print("no TypeScript SDK install: run tests/sdk/test_typescript_sdk.py once, or set "
                          "CLAUDE_AGENT_SDK_TS", file=sys.stderr)
                else:
                    outcomes.update(run_typescript(env, where, sdk, args.ts_only))
            results[target] = outcomes
            print(f"{target}: {sum(o['outcome'] == 'pass' for o in outcomes.values())}/{len(outcomes)} passed",
                  file=sys.stderr)
    text = table(results)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    if args.keep:
        print(f"work folder: {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
