"""What every front end shares to start the agent: the option models, settings loading, the
saved MCP flags, opening or continuing a session, the final-answer handling, the prompt and
stdio helpers, and the launch itself (settings → sinks → runtime → asyncio driver → result).

The layer sits between the façade and the front ends (surfaces/cli, chat, headless, fleet):
each front end imports it and nothing of another front end. Its modules import the runtime
only where a command needs it, so `recursive --help` stays light.
"""
