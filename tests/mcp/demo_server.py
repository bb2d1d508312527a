"""An MCP server for the tests, written with the `mcp` SDK's MCPServer (FastMCP in SDK 1.x).

    python demo_server.py [stdio | http PORT | sse PORT] [--delay SECONDS]

With `--delay` it waits that long before it serves, deaf to its stdin meanwhile (to be stopped,
it must be killed).

Tools: `weather` (structured output, read-only), `fail` (an error result), `slow` (sleeps;
writes `slow-started` in $DEMO_DIR first), `crash` (the process dies mid-call), `picture`
(text and an image), `touch` (writes a file: not read-only), `env` (a variable's value),
`unlock` and `lock` (add and remove the tool `secret`, and tell the client its tools changed).
Resource: `notes://today`. Prompt: `review` (a file path, and what to look for). At start it writes its pid to `$DEMO_DIR/pid-<n>` (n counts starts),
so a test can check that the process is gone after each way `recursive` exits. On SIGUSR1 it
writes `$DEMO_DIR/got-SIGUSR1` (and goes on).

The tests mostly start it through demo_launch.py, which has a forked copy of it (demo_zygote.py)
serve its stdio: the same server, without paying `import mcp` on every start.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel

app = MCPServer("demo")
READ_ONLY = ToolAnnotations(read_only_hint=True)


class Weather(BaseModel):
    city: str
    celsius: float


def _write_whole(path: Path, text: str) -> None:
    """Write `text` to `path` whole or not at all (a test that sees the file reads all of it)."""
    part = path.with_name(path.name + ".part")
    part.write_text(text)
    part.rename(path)


def _dir() -> Path:
    """$DEMO_DIR (the tests' demo_dir fixture); else the temp folder, never the repository."""
    return Path(os.environ.get("DEMO_DIR") or tempfile.gettempdir())


@app.tool(description="The weather in a city, as structured data.", annotations=READ_ONLY)
def weather(city: str) -> Weather:
    return Weather(city=city, celsius=21.5)


@app.tool(description="Always fails, saying why.")
def fail(reason: str) -> str:
    raise ToolError(f"failing on purpose: {reason}")


@app.tool(description="Sleeps for the given seconds, then says so.", annotations=READ_ONLY)
async def slow(seconds: float) -> str:
    (_dir() / "slow-started").write_text(str(os.getpid()))
    await asyncio.sleep(seconds)
    return f"slept {seconds} s"


@app.tool(description="The server process dies while answering.")
def crash() -> str:
    os._exit(3)


@app.tool(description="A short text and a small PNG image.", annotations=READ_ONLY)
def picture() -> list:
    return [TextContent(type="text", text="a picture:"),
            ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png")]


@app.tool(description="Create a file in the server's directory.")
def touch(path: str) -> str:
    (_dir() / path).write_text("touched")
    return f"created {path}"


@app.tool(description="The value of an environment variable of the server.", annotations=READ_ONLY)
def env(name: str) -> str:
    return os.environ.get(name, "(unset)")


def secret(word: str) -> str:
    return f"the secret word was {word}"


@app.tool(description="Add the tool `secret`, and say that the tools changed.")
async def unlock(ctx: Context) -> str:
    app.add_tool(secret, description="Only there after `unlock`.")
    await ctx.session.send_tool_list_changed()
    return "unlocked"


@app.tool(description="Remove the tool `secret`, and say that the tools changed.")
async def lock(ctx: Context) -> str:
    app.remove_tool("secret")
    await ctx.session.send_tool_list_changed()
    return "locked"


@app.prompt(description="Ask for a review of one file.")
def review(path: str, focus: str = "bugs") -> str:
    return f"Review {path}, looking for {focus}."


@app.resource("notes://today", mime_type="text/plain", description="Today's note.")
def today() -> str:
    return "buy milk"


def _record_pid() -> None:
    """`pid-<n>` for the first n free: written aside, then linked in (servers started together
    each get their own n, and no reader sees a file half written)."""
    folder = _dir()
    aside = folder / f".pid-{os.getpid()}"
    aside.write_text(str(os.getpid()))
    n = 1
    while True:
        try:
            os.link(aside, folder / f"pid-{n}")
            break
        except FileExistsError:
            n += 1
    aside.unlink()


def main(args: list[str]) -> None:
    """Run the server as the command line `args` says (see the module's docstring)."""
    delay = 0.0
    if "--delay" in args:
        at = args.index("--delay")
        delay = float(args[at + 1])
        del args[at:at + 2]
    signal.signal(signal.SIGUSR1, lambda *_: _write_whole(_dir() / "got-SIGUSR1", str(os.getpid())))
    _record_pid()
    if delay:
        time.sleep(delay)
    transport = args[0] if args else "stdio"
    if transport == "stdio":
        app.run()
    elif transport == "http":
        app.run("streamable-http", port=int(args[1]))
    else:
        app.run("sse", port=int(args[1]))


if __name__ == "__main__":
    main(sys.argv[1:])
