"""What the SDKs cost to import and to build a client: whole, as the providers import them, and httpx2 alone.

Each figure is a fresh interpreter (`python -c …`, bytecode cached) timing one statement
inside itself, so interpreter start-up is left out; medians and minimums over `--runs`
runs. "narrow" is `providers/sdk_loader.py`'s import of the classes a provider uses (with
pydantic and httpx2, which it needs anyway); "client" builds the SDK client as the provider
does for a plain-http local server (no CA certificates loaded) and for https (with them).

    python bench/sdk_imports.py [--runs 10] [--json FILE]
"""

from __future__ import annotations

import argparse
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
OPENAI = ("'_client.AsyncOpenAI', '_streaming.AsyncStream', '_types.Omit', '_exceptions.OpenAIError', "
          "'_exceptions.APIStatusError', '_base_client.DefaultAsyncHttpxClient'")
ANTHROPIC = ("'_client.AsyncAnthropic', '_streaming.AsyncStream', '_types.Omit', '_exceptions.AnthropicError', "
             "'_exceptions.APIStatusError'")
LOADER = "from recursive_cli.providers.sdk_loader import load_names; " + DEPS
CASES: dict[str, tuple[str, str]] = {
    "import httpx2": ("", "import httpx2"),
    "import pydantic": ("", "import pydantic"),
    "import openai, whole": ("", "import openai"),
    "  openai beyond httpx2 + pydantic, whole": (DEPS, "import openai"),
    "  openai beyond httpx2 + pydantic, narrow": (LOADER, f"load_names('openai', {OPENAI})"),
    "import anthropic, whole": ("", "import anthropic"),
    "  anthropic beyond httpx2 + pydantic, whole": (DEPS, "import anthropic"),
    "  anthropic beyond httpx2 + pydantic, narrow": (LOADER, f"load_names('anthropic', {ANTHROPIC})"),
    "the openai provider module (all it imports)": ("", "from recursive_cli.providers import openai_provider"),
    "the anthropic provider module (all it imports)": ("", "from recursive_cli.providers import anthropic_provider"),
    "OpenAIProvider(), http base URL": ("from recursive_cli.providers.openai_provider import OpenAIProvider",
                                        "OpenAIProvider('m', 'k', 'http://127.0.0.1:9/v1')"),
    "OpenAIProvider(), https base URL": ("from recursive_cli.providers.openai_provider import OpenAIProvider",
                                         "OpenAIProvider('m', 'k', 'https://api.openai.com/v1')"),
    "AnthropicProvider(), http base URL": ("from recursive_cli.providers.anthropic_provider import AnthropicProvider",
                                           "AnthropicProvider('m', 'k', 'http://127.0.0.1:9')"),
}


def time_case(setup: str, statement: str, runs: int) -> dict[str, float]:
    code = TIMED.format(setup=setup, statement=statement)
    env = child_env()
    subprocess.run([PYTHON, "-c", code], env=env, check=True, capture_output=True)  # warm-up: bytecode
    samples = [float(subprocess.run([PYTHON, "-c", code], env=env, check=True, capture_output=True,
                                    text=True).stdout) for _ in range(runs)]
    return {"median_ms": median(samples) * 1000, "min_ms": min(samples) * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    started = time.perf_counter()
    results = {label: time_case(setup, statement, args.runs) for label, (setup, statement) in CASES.items()}
    print(table(["what", "median ms", "min ms"], [[label, r["median_ms"], r["min_ms"]] for label, r in results.items()]))
    print(f"({args.runs} runs each, {time.perf_counter() - started:.0f} s)")
    write_json(args.json, {"runs": args.runs, "results": results})


if __name__ == "__main__":
    main()
