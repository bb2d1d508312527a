"""What the SDKs would cost to import, next to what the providers cost now (our own client on
httpx2, issue 16): the imports, and building a provider for a plain-http local server (no CA
certificates loaded) and for https (with them).

Each figure is a fresh interpreter (`python -c …`, bytecode cached) timing one statement
inside itself, so interpreter start-up is left out; medians and minimums over `--runs` runs.
"beyond httpx2 + pydantic" imports those two first (any provider needs httpx2, and the run
path imports pydantic anyway); "beyond the run path's own imports" also imports first what a
run has imported by the time it builds its provider (asyncio, our messages and settings). `--pythonpath DIR` measures another revision's tree (`git
archive REV recursive_cli | tar -x -C DIR`): its provider rows then show what that revision
cost.

    python bench/sdk_imports.py [--runs 10] [--pythonpath DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time

from harness import PYTHON, child_env, median, table, write_json

TIMED = '''
import time
{setup}
started = time.perf_counter()
{statement}
print(time.perf_counter() - started)
'''

DEPS = "import httpx2, pydantic"  # what any provider needs, SDK or not
# What a run imports before it builds its provider, whichever the provider (asyncio, the
# messages, the settings…): the provider rows "beyond" it are the provider's own cost.
RUN_PATH = (DEPS + ", asyncio, ssl, json; import recursive_cli.core.messages, recursive_cli.core.settings, "
            "recursive_cli.core.diagnostics, recursive_cli.core.provider, recursive_cli.providers.local")
CASES: dict[str, tuple[str, str]] = {
    "import httpx2": ("", "import httpx2"),
    "import pydantic": ("", "import pydantic"),
    "import openai, whole": ("", "import openai"),
    "  openai beyond httpx2 + pydantic": (DEPS, "import openai"),
    "import anthropic, whole": ("", "import anthropic"),
    "  anthropic beyond httpx2 + pydantic": (DEPS, "import anthropic"),
    "the openai provider module (all it imports)": ("", "from recursive_cli.providers import openai_provider"),
    "  beyond the run path's own imports": (RUN_PATH, "from recursive_cli.providers import openai_provider"),
    "the anthropic provider module (all it imports)": ("", "from recursive_cli.providers import anthropic_provider"),
    "  beyond the run path's own imports ": (RUN_PATH, "from recursive_cli.providers import anthropic_provider"),
    "OpenAIProvider(), http base URL": ("from recursive_cli.providers.openai_provider import OpenAIProvider",
                                        "OpenAIProvider('m', 'k', 'http://127.0.0.1:9/v1')"),
    "OpenAIProvider(), https base URL": ("from recursive_cli.providers.openai_provider import OpenAIProvider",
                                         "OpenAIProvider('m', 'k', 'https://api.openai.com/v1')"),
    "AnthropicProvider(), http base URL": ("from recursive_cli.providers.anthropic_provider import AnthropicProvider",
                                           "AnthropicProvider('m', 'k', 'http://127.0.0.1:9')"),
    "AnthropicProvider(), https base URL": ("from recursive_cli.providers.anthropic_provider import AnthropicProvider",
                                            "AnthropicProvider('m', 'k', 'https://api.anthropic.com')"),
}


def time_case(setup: str, statement: str, runs: int, pythonpath: str | None = None) -> dict[str, float]:
    code = TIMED.format(setup=setup, statement=statement)
    env = child_env()
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    # (from the root folder: `-c` puts the working folder first on sys.path, before PYTHONPATH)
    subprocess.run([PYTHON, "-c", code], env=env, check=True, capture_output=True, cwd="/")  # warm-up: bytecode
    samples = [float(subprocess.run([PYTHON, "-c", code], env=env, check=True, capture_output=True,
                                    text=True, cwd="/").stdout) for _ in range(runs)]
    return {"median_ms": median(samples) * 1000, "min_ms": min(samples) * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--pythonpath", help="a copy of another revision's recursive_cli to measure instead")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    started = time.perf_counter()
    results = {label: time_case(setup, statement, args.runs, args.pythonpath)
               for label, (setup, statement) in CASES.items()}
    print(table(["what", "median ms", "min ms"], [[label, r["median_ms"], r["min_ms"]] for label, r in results.items()]))
    print(f"({args.runs} runs each, {time.perf_counter() - started:.0f} s)")
    write_json(args.json, {"runs": args.runs, "results": results})


if __name__ == "__main__":
    main()
