"""The scripted loopback model both CLIs talk to: an Anthropic Messages endpoint that reads the
prompt of each request and answers what it asks, the way a capable model would.

It is a small rule book, not a language model: "Run: CMD" calls the shell tool with CMD, "Use
the Write tool to create the file P containing exactly the text T" calls the write tool,
"Call mcp__s__t" calls that tool, a JSON schema (Claude Code's `StructuredOutput` tool, or
`recursive`'s schema in the system prompt) is filled from the prompt, "Reply with exactly: X"
says X, arithmetic is done. Tools are found by role in the request's own tool list, so the same
rules drive Claude Code (`Bash`, `Write`, `file_path`) and `recursive` (`run_shell`,
`write_file`, `path`). A request for the model `claude-nonexistent-model-for-sdk-e2e` gets the
API's 404, and a prompt `API ERROR 500` (or 429, 400) gets that status, for the error-shape
checks. Every request is logged (path, model, prompt, reply) to compare what each CLI sent.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from fakeserver import FakeLLMServer, _anthropic_body, _anthropic_error, _anthropic_events  # noqa: E402

BAD_MODEL = "claude-nonexistent-model-for-sdk-e2e"
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)

# roles -> tool names either CLI gives that role, and the argument names each uses
_ROLES: dict[str, tuple[str, ...]] = {
    "shell": ("Bash", "run_shell"),
    "write": ("Write", "write_file"),
    "glob": ("Glob", "glob"),
    "grep": ("Grep", "search_files"),
    "agent": ("Agent", "Task", "task"),
    "structured": ("StructuredOutput",),
}


class ScriptedModel:
    """An Anthropic-shaped loopback server with the rule book behind it."""

    def __init__(self, log: Path | None = None) -> None:
        self.log = log
        self._lock = threading.Lock()
        self._fake = FakeLLMServer(model="scripted-model")  # id counter and model name for replies
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.model = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def note(self, record: dict[str, Any]) -> None:
        if self.log is None:
            return
        with self._lock, self.log.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, default=str) + "\n")


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a CLI that hung up is no fault here
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._json(404, _anthropic_error(404, f"no route for GET {self.path}"))

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        model: ScriptedModel = self.server.model  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw) if raw else {}
        route = self.path.split("?", 1)[0]
        if route == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": len(raw) // 4})
            return
        if route != "/v1/messages":
            self._json(404, _anthropic_error(404, f"no route for POST {self.path}"))
            return
        reply = answer(body)
        model.note({"at": time.time(), "model": body.get("model"), "prompt": prompt_of(body)[:200],
                    "tools": [t.get("name") for t in body.get("tools") or []], "reply": reply})
        if "error" in reply:
            status = int(reply["error"]["status"])
            self._json(status, _anthropic_error(status, reply["error"]["message"]))
            return
        if reply.get("delay"):
            time.sleep(float(reply["delay"]))
        fake = model._fake  # noqa: SLF001
        if body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in [*_anthropic_events(reply, fake), ""]:
                data = event.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
        else:
            self._json(200, _anthropic_body(reply, fake))

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


# -- reading the request ---------------------------------------------------------------------------


def _text(content: Any) -> str:
    if isinstance(content, str):
        return _REMINDER.sub("", content).strip()
    parts = [block.get("text", "") for block in content or [] if isinstance(block, dict)
             and block.get("type") == "text"]
    return _REMINDER.sub("", "\n".join(parts)).strip()


def _is_tool_results(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def prompt_of(body: dict[str, Any]) -> str:
    """The text of the last user message that is a prompt (not only tool results)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and not _is_tool_results(message) and _text(message["content"]):
            return _text(message["content"])
    return ""


def _done_this_turn(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_use blocks the assistant made since the prompt, in order."""
    messages = body.get("messages") or []
    start = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "user" and not _is_tool_results(message) and _text(message["content"]):
            start = index
            break
    return [block for message in messages[start:] if message.get("role") == "assistant"
            and isinstance(message.get("content"), list)
            for block in message["content"] if isinstance(block, dict) and block.get("type") == "tool_use"]


def _system(body: dict[str, Any]) -> str:
    system = body.get("system")
    return system if isinstance(system, str) else _text(system)


def _tool(body: dict[str, Any], role: str) -> dict[str, Any] | None:
    by_name = {tool.get("name"): tool for tool in body.get("tools") or []}
    return next((by_name[name] for name in _ROLES[role] if name in by_name), None)


def _named_tool(body: dict[str, Any], fragment: str) -> dict[str, Any] | None:
    for tool in body.get("tools") or []:
        if tool.get("name") == fragment:
            return tool
    return next((tool for tool in body.get("tools") or [] if str(tool.get("name", "")).endswith(fragment)), None)


def _props(tool: dict[str, Any]) -> dict[str, Any]:
    return dict((tool.get("input_schema") or {}).get("properties") or {})


def _pick(props: dict[str, Any], *names: str) -> str:
    return next((name for name in names if name in props), names[0])


# -- the rule book -------------------------------------------------------------------------------


def _call(tool: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"name": tool["name"], "arguments": arguments}], "stop": "tool_calls"}


def _say(text: str, body: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = {"text": text, "stop": "end"}
    if (body.get("thinking") or {}).get("type") in ("enabled", "adaptive"):
        prompt = prompt_of(body)
        reply["thinking"] = [{"thinking": f"The user asks: {prompt[:80]}. Let me work it out: 2 + 2 = 4, "
                                          "so the answer follows.", "signature": "c2NyaXB0ZWQ="}]
    return reply


Step = tuple[str, dict[str, Any]]  # (tool name, arguments)


def _plan(body: dict[str, Any], prompt: str) -> list[Step]:
    """The tool calls this prompt asks for, in order; a tool the CLI does not offer is left out."""
    steps: list[Step] = []

    def add(tool: dict[str, Any] | None, arguments: dict[str, Any]) -> None:
        if tool is not None:
            steps.append((tool["name"], arguments))

    shell = _tool(body, "shell")
    match = re.search(r"^(?:Run(?: the command| this bash command)?):\s*(.+)$", prompt, re.M)
    if match and shell is not None:
        add(shell, {_pick(_props(shell), "command"): match.group(1).strip()})
    match = re.search(r"Write tool to create the file (\S+) containing exactly the text (\w+)", prompt)
    if match and (write := _tool(body, "write")) is not None:
        props = _props(write)
        add(write, {_pick(props, "file_path", "path"): match.group(1), "content": match.group(2)})
    match = re.search(r"Use the Agent tool exactly once with subagent_type '([^']+)', prompt '([^']+)'", prompt)
    if match and (agent := _tool(body, "agent")) is not None:
        arguments = {"subagent_type": match.group(1), "prompt": match.group(2), "description": "greet"}
        if "run_in_background" in _props(agent):
            arguments["run_in_background"] = False
        add(agent, arguments)
    # MCP tools: "Call mcp__x__y ...", "use the greet tool to greet 'Alice'"
    for name in re.findall(r"\b(mcp__\w+)", prompt):
        value = re.search(rf"{name} with (\w+)='([^']*)'", prompt)
        steps.append((name, {"_given": list(value.groups()) if value else None}))
    for short, value in re.findall(r"use the (\w+) tool to \w+ '([^']*)'", prompt, re.I):
        steps.append((f"__{short}", {"_given": [None, value]}))
    explore = "explore the filesystem" in prompt or "Use tools as needed" in prompt
    if explore or "Use Grep" in prompt:
        glob, grep = _tool(body, "glob"), _tool(body, "grep")
        if "Use Grep" in prompt and grep is not None:
            add(grep, {"pattern": "import pytest", _pick(_props(grep), "path"): "tests"})
        elif explore and glob is not None:
            add(glob, {"pattern": "src/**/*.py" if "Python" in prompt else "*"})
        elif shell is not None:
            command = "ls src/claude_agent_sdk tests" if "Python" in prompt or "Grep" in prompt else "ls"
            add(shell, {_pick(_props(shell), "command"): command})
    return steps


def _next_call(body: dict[str, Any], steps: list[Step], done: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The next planned call not made yet; a deferred tool (Claude Code lists MCP tools behind
    `ToolSearch`) is loaded first; a tool the CLI never offers (disallowed) is skipped."""
    made = [block.get("name") for block in done]
    searched = [json.dumps(block.get("input")) for block in done if block.get("name") == "ToolSearch"]
    for name, arguments in steps:
        tool = _named_tool(body, name)
        if (tool["name"] if tool else name) in made:
            made.remove(tool["name"] if tool else name)
            continue
        if tool is not None:
            given = arguments.get("_given", ())
            if "_given" in arguments:
                arguments = _mcp_arguments(tool, tuple(given) if given else None)
            return _call(tool, arguments)
        search = _named_tool(body, "ToolSearch")
        query = name[2:] if name.startswith("__") else f"select:{name}"
        if name.startswith(("mcp__", "__")) and search is not None and not any(
                json.dumps(query) in text for text in searched):
            return _call(search, {_pick(_props(search), "query"): query, "max_results": 5})
    return None


def _mcp_arguments(tool: dict[str, Any] | None, given: tuple[str | None, str] | None) -> dict[str, Any]:
    if tool is None:
        return {}
    props = _props(tool)
    first = next(iter(props), "text")
    if given is not None:
        return {str(given[0] or first): given[1]}
    return {name: "hello" for name in props} or {first: "hello"}


def _schema(body: dict[str, Any]) -> dict[str, Any] | None:
    tool = _tool(body, "structured")
    if tool is not None:
        return dict(tool.get("input_schema") or {})
    # recursive states the schema in the prompt (or the system prompt), in a ```json block
    for text in (prompt_of(body), _system(body)):
        match = re.search(r"JSON Schema.*?```json\s*(\{.*?\})\s*```", text, re.S)
        if match:
            return dict(json.loads(match.group(1)))
    return None


def _fill(schema: dict[str, Any], prompt: str, key: str = "") -> Any:
    """A value for `schema`, taken from what the prompt says where the prompt says it."""
    kind = schema.get("type")
    if "enum" in schema:
        return "pytest" if "pytest" in schema["enum"] else schema["enum"][0]
    if kind == "object":
        return {name: _fill(sub, prompt, name) for name, sub in (schema.get("properties") or {}).items()}
    quoted = re.search(r"'([^']+)'", prompt)
    text = quoted.group(1) if quoted else ""
    if kind == "array":
        return text.split() if text else []
    if kind == "boolean":
        return key != "has_readme"
    if kind in ("number", "integer"):
        if key == "word_count":
            return len(text.split())
        if key == "character_count":
            return len(text)
        return 3
    return text or "text"


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The reply (in tests/fakeserver.py's reply format) to one Messages request."""
    if body.get("model") == BAD_MODEL:
        return {"error": {"status": 404, "message": f"model: {BAD_MODEL}"}}
    prompt = prompt_of(body).split("\n\nWhen you are done, give your final answer as a single JSON", 1)[0]
    match = re.search(r"API ERROR (\d{3})", prompt)
    if match:
        return {"error": {"status": int(match.group(1)), "message": f"scripted API error {match.group(1)}"}}
    done = _done_this_turn(body)
    call = _next_call(body, _plan(body, prompt), done)
    if call is not None:
        return call
    schema = _schema(body)
    if schema is not None:
        value = _fill(schema, prompt)
        structured = _tool(body, "structured")
        if structured is not None:
            if not any(block.get("name") == structured["name"] for block in done):
                return _call(structured, value)
            return _say("Done.", body)
        return _say(json.dumps(value), body)
    reply = _say(_words(prompt, body), body)
    if "slowly" in prompt:
        reply["delay"] = 2  # long enough for the client's interrupt to land mid-turn
    return reply


def _words(prompt: str, body: dict[str, Any]) -> str:
    match = re.search(r"Reply with(?: exactly)?:\s*(\S+)", prompt)
    if match:
        return match.group(1)
    match = re.search(r"(\d+)\s*\+\s*(\d+)", prompt)
    if match:
        return str(int(match.group(1)) + int(match.group(2)))
    if "single word DONE" in prompt:
        return "DONE"
    if "Count from 1 to 100" in prompt:
        return ", ".join(str(n) for n in range(1, 101))
    if "hello" in prompt.lower() or prompt.lower() in ("say hi", "hi"):
        return "Hello there, friend!" if "3 words" not in prompt else "Hello there, friend."
    if "joke" in prompt:
        return "Why did the function return early? It had a date with a callback."
    if _done_this_turn(body):
        return "Done."
    return "OK."
