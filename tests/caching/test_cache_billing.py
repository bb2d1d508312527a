"""Cached tokens as the providers report them are counted and priced: a run against
bench/cache_server.py, which bills prompt caching as each provider does, shows in its JSON
result the cache reads and writes the server billed, and their price (core/pricing.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from clitools import invoke

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from cache_server import CacheServer, Script  # noqa: E402

from recursive_cli.core.messages import Usage  # noqa: E402
from recursive_cli.core.pricing import price_for  # noqa: E402

STEPS = 6
MODELS = {"openai": "gpt-4.1", "anthropic": "claude-sonnet-4-5"}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_cache_reads_and_writes_are_counted_and_priced(tmp_path: Path, provider: str) -> None:
    for step in range(1, STEPS):  # big enough files that the prompt passes the 1024-token minimum
        (tmp_path / f"file_{step:03d}.py").write_text(f"x_{step} = {step}\n" * 400)
    server = CacheServer(Script(STEPS, str(tmp_path))).start()
    try:
        base = server.root_url + ("/v1" if provider == "openai" else "")
        proc = invoke("run", "read them", "-C", str(tmp_path), "--provider", provider, "--api-base", base,
                      "-m", MODELS[provider], "-o", "json", "--no-checkpoints", env={"RECURSIVE_API_KEY": "sk-test"})
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    bills = server.steps
    assert len(bills) == STEPS
    read, write = sum(b.cache_read for b in bills), sum(b.cache_write for b in bills)
    assert read > 0 and (write > 0) is (provider == "anthropic")
    usage = result["usage"]
    assert usage["cache_read_input_tokens"] == read
    assert usage["cache_creation_input_tokens"] == write
    price = price_for(MODELS[provider])
    assert price is not None
    expected = price.cost(Usage(input_tokens=sum(b.total for b in bills), output_tokens=20 * STEPS,
                                cache_read_tokens=read, cache_write_tokens=write))
    assert result["total_cost_usd"] == pytest.approx(expected)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_every_step_reads_the_whole_prompt_before_it_from_the_cache(tmp_path: Path, provider: str) -> None:
    # Twelve calls a step: each step adds 24 blocks, past Anthropic's 20-block look-back
    # from the last breakpoint; the breakpoint where the request before
    # ended still finds that whole request in the cache.
    steps, parallel = 4, 12
    for number in range(1, steps * parallel + 1):
        (tmp_path / f"file_{number:03d}.py").write_text(f"y_{number} = {number}\n" * 30)
    server = CacheServer(Script(steps, str(tmp_path), parallel)).start()
    try:
        base = server.root_url + ("/v1" if provider == "openai" else "")
        proc = invoke("run", "read them", "-C", str(tmp_path), "--provider", provider, "--api-base", base,
                      "-m", MODELS[provider], "--no-checkpoints", "--no-session", env={"RECURSIVE_API_KEY": "sk-test"})
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    bills = server.steps
    assert len(bills) == steps
    for before, after in zip(bills, bills[1:]):
        if provider == "anthropic":
            assert after.cache_read == before.total
        else:  # in 128-token steps
            assert before.total - 128 < after.cache_read <= before.total
