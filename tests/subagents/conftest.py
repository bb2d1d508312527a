"""Fixtures for the subagent tests: the SDK-driven ones reuse tests/sdk's wrapper and fake model."""

from __future__ import annotations

from sdk.conftest import AgentCli, agent_cli, fake_model  # noqa: F401 (fixtures)
