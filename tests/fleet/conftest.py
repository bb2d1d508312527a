"""One real local Ray for every fleet test that needs one (`ray.init(num_cpus=2)` in this
process, started at the first such test and stopped after the last test of tests/fleet).

Starting a Ray takes seconds (its GCS, raylet and dashboard processes); the fleet's in-process
tests (`invoke("fleet", …)` finds the Ray this process runs) and the `recursive fleet`
subprocess that joins it with `--address` share this one. Each module that uses it carries
`pytest.mark.xdist_group("ray")`, so that under pytest-xdist they all run on the one worker
that starts it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from clitools import require

# What the Ray's processes must not inherit: its workers get the environment it starts with
# (no keys, no RECURSIVE_HOME — the fleet gives each task its home, and a key reaches a task
# only through the runtime environment of the fleet that runs it).
SCRUBBED = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RECURSIVE_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
            "RECURSIVE_API_BASE", "RECURSIVE_MODEL", "RECURSIVE_PROVIDER", "RECURSIVE_WORKSPACE",
            "RECURSIVE_SCRIPT", "RECURSIVE_MAX_STEPS", "RECURSIVE_HOME", "RAY_ADDRESS")


@pytest.fixture(scope="package")
def local_ray() -> Iterator[Any]:
    """The `ray` module, initialised with a local Ray of 2 CPUs."""
    ray = require("ray")
    saved = {name: os.environ.pop(name) for name in SCRUBBED if name in os.environ}
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, address="local")
    finally:
        os.environ.update(saved)
    yield ray
    ray.shutdown()


@pytest.fixture
def ray_address(local_ray: Any) -> str:
    """The running Ray's GCS address (`HOST:PORT`), for a `recursive fleet --address` to join."""
    return str(local_ray.get_runtime_context().gcs_address)
