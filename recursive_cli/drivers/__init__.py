"""Drivers: runs of many turns over `AgentRuntime.run` (goal runs; the event loop lives beside it).

A driver decides what the next turn's prompt is and when to stop; the runtime and the kernel
stay unaware of it. Everything a driver needs to continue after a crash is kept in the
runtime's `state`, which the session persists in meta.json.
"""
