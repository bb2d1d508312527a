// The TypeScript Agent SDK check set: the Python SDK's e2e scenarios (and a few of the
// TypeScript SDK's own calls), written against `@anthropic-ai/claude-agent-sdk`, run with
// `pathToClaudeCodeExecutable` = $SDK_E2E_CLI against the scripted model (model.py) that
// $ANTHROPIC_BASE_URL names. Prints one JSON line: {check: {outcome: "pass"|"fail", why}}.
// argv[2]: a folder to work in (each check gets a subfolder); argv[3] (optional): a regex of
// the checks to run.
import { createSdkMcpServer, query, tool } from "@anthropic-ai/claude-agent-sdk";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { z } from "zod";

const CLI = process.env.SDK_E2E_CLI;
const WORK = process.argv[2];
const ONLY = process.argv[3] ? new RegExp(process.argv[3]) : null;
const checks = [];
const check = (name, run) => checks.push({ name, run });

function assert(condition, why) {
  if (!condition) throw new Error(why);
}

function options(name, extra = {}) {
  const cwd = join(WORK, name);
  mkdirSync(cwd, { recursive: true });
  return { pathToClaudeCodeExecutable: CLI, cwd, env: { ...process.env }, ...extra };
}

async function run(prompt, opts) {
  const messages = [];
  let error = null;
  try {
    for await (const message of query({ prompt, options: opts })) messages.push(message);
  } catch (e) {
    error = e;
  }
  return { messages, error, result: messages.filter((m) => m.type === "result").at(-1) };
}

// a streaming-input conversation: `turns` are prompts (strings or message objects), each sent
// once the previous turn's result came; `between(q, index)` runs before prompt `index` is sent
// The session stays open after the last result (for control requests) until `end()`.
let receipt;  // what the last interrupt() answered

async function converse(turns, opts, between = async () => {}) {
  const messages = [];
  const results = [];
  let release;
  let finished;
  const closing = new Promise((resolve) => (finished = resolve));
  let q;
  async function* prompts() {
    for (let i = 0; i < turns.length; i++) {
      if (i > 0) await new Promise((resolve) => (release = resolve));
      await between(q, i);
      const turn = turns[i];
      yield typeof turn === "string"
        ? { type: "user", message: { role: "user", content: turn }, parent_tool_use_id: null, session_id: "" }
        : turn;
    }
    await closing;
  }
  q = query({ prompt: prompts(), options: opts });
  let error = null;
  while (results.length < turns.length) {
    let step;
    try {
      step = await q.next();
    } catch (e) {  // the SDK throws for an error result
      error = e;
      break;
    }
    const { value: message, done } = step;
    if (done) break;
    messages.push(message);
    if (message.type === "system" && message.subtype === "init" && turns[results.length]?.includes?.("slowly"))
      setTimeout(async () => { receipt = await q.interrupt(); }, 300);
    if (message.type === "result") {
      results.push(message);
      release?.();
    }
  }
  const end = async () => {
    finished();
    try { for await (const message of q) messages.push(message); } catch { /* ended */ }
  };
  return { messages, results, error, q: Object.assign(q, { close: end }) };
}

const texts = (messages) =>
  messages.filter((m) => m.type === "assistant").flatMap((m) => m.message.content.filter((b) => b.type === "text").map((b) => b.text));

// -- plain runs ---------------------------------------------------------------------------------

check("query_plain", async () => {
  const { result, messages } = await run("What is 2 + 2?", options("query_plain"));
  assert(messages[0].type === "system" && messages[0].subtype === "init", "no init first");
  assert(result && result.subtype === "success" && result.result === "4", `result: ${JSON.stringify(result)}`);
});

check("total_cost_usd_is_a_number", async () => {
  const { result } = await run("What is 1+1?", options("cost"));
  assert(typeof result.total_cost_usd === "number", `total_cost_usd: ${result.total_cost_usd}`);
});

check("stderr_quiet_on_a_clean_run", async () => {
  const lines = [];
  await run("What is 1+1?", options("stderr", { stderr: (line) => lines.push(line) }));
  assert(lines.length === 0, `stderr: ${lines.join(" | ").slice(0, 300)}`);
});

check("api_error_result", async () => {
  const { result, messages } = await run("Reply with: pong", options("api_error", { model: "claude-nonexistent-model-for-sdk-e2e", maxTurns: 1 }));
  assert(result, "no result");
  assert(result.is_error === true && result.subtype === "success", `subtype ${result.subtype}, is_error ${result.is_error}`);
  assert(result.terminal_reason === "api_error" && result.api_error_status === 404, `terminal ${result.terminal_reason}, status ${result.api_error_status}`);
  const synthetic = messages.find((m) => m.type === "assistant" && m.message.model === "<synthetic>");
  assert(synthetic, "no synthetic assistant message");
});

check("structured_output_nested", async () => {
  const schema = {
    type: "object",
    properties: {
      analysis: { type: "object", properties: { word_count: { type: "number" }, character_count: { type: "number" } }, required: ["word_count", "character_count"] },
      words: { type: "array", items: { type: "string" } },
    },
    required: ["analysis", "words"],
  };
  const { result } = await run("Analyze this text: 'Hello world'. Provide word count, character count, and list of words.",
    options("structured", { outputFormat: { type: "json_schema", schema }, permissionMode: "acceptEdits" }));
  const out = result?.structured_output;
  assert(out && out.analysis.word_count === 2 && out.analysis.character_count === 11 && out.words.length === 2,
    `structured_output: ${JSON.stringify(out)}`);
});

check("partial_messages_stream_events", async () => {
  const { messages } = await run("Think of three jokes, then tell one",
    options("partial", { includePartialMessages: true, maxTurns: 2, maxThinkingTokens: 8000 }));
  const kinds = new Set(messages.filter((m) => m.type === "stream_event").map((m) => m.event.type));
  for (const kind of ["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_stop"])
    assert(kinds.has(kind), `no ${kind} stream event`);
  const thinking = messages.filter((m) => m.type === "stream_event" && m.event.delta?.type === "thinking_delta");
  assert(thinking.length > 0, "no thinking_delta");
});

check("partial_messages_off_by_default", async () => {
  const { messages } = await run("Say hello", options("partial_off", { maxTurns: 2 }));
  assert(!messages.some((m) => m.type === "stream_event"), "stream events without includePartialMessages");
});

// -- permissions and hooks ------------------------------------------------------------------------

check("can_use_tool_called_for_bash", async () => {
  const file = join(WORK, `ts_touch_${process.pid}.txt`);
  const asked = [];
  await run(`Run the command: touch ${file}`, options("can_use_tool", {
    canUseTool: async (name, input) => { asked.push(name); return { behavior: "allow", updatedInput: input }; },
  }));
  rmSync(file, { force: true });
  assert(asked.includes("Bash"), `asked: ${asked}`);
});

check("can_use_tool_allows_write_outside_the_workspace", async () => {
  const file = join(homedir(), `.ts_sdk_permission_e2e_${process.pid}.txt`);
  const asked = [];
  const { result } = await run(`Use the Write tool to create the file ${file} containing exactly the text hello. Do not use any other tool.`,
    options("write_outside", {
      disallowedTools: ["Bash"], maxTurns: 3,
      canUseTool: async (name, input) => { asked.push(name); return { behavior: "allow", updatedInput: input }; },
    }));
  const made = existsSync(file);
  rmSync(file, { force: true });
  assert(result && !result.is_error, `result: ${result?.subtype}`);
  assert(asked.includes("Write") && made, `asked ${asked}, written ${made}`);
});

check("pre_tool_use_hook_denies_bash", async () => {
  const seen = [];
  const hook = async (input) => {
    seen.push(input.tool_name);
    return { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "blocked" } };
  };
  const { result } = await run("Run this bash command: echo 'hello'",
    options("pre_hook", { allowedTools: ["Bash", "Write"], hooks: { PreToolUse: [{ matcher: "Bash", hooks: [hook] }] } }));
  assert(seen.includes("Bash"), `hook saw: ${seen}`);
  assert(result && result.permission_denials?.length === 1, `denials: ${JSON.stringify(result?.permission_denials)}`);
});

check("post_tool_use_hook_gets_tool_use_id", async () => {
  const seen = [];
  const hook = async (input) => { seen.push(input.tool_use_id); return {}; };
  await run("Run: echo 'test tool_use_id'",
    options("post_hook", { allowedTools: ["Bash"], hooks: { PostToolUse: [{ matcher: "Bash", hooks: [hook] }] } }));
  assert(seen.length > 0 && seen[0], `tool_use_ids: ${seen}`);
});

check("post_tool_use_continue_false_stops", async () => {
  const hook = async () => ({ continue: false, stopReason: "halted by the check" });
  const { result } = await run("Run: echo 'test message'",
    options("post_stop", { allowedTools: ["Bash"], hooks: { PostToolUse: [{ matcher: "Bash", hooks: [hook] }] } }));
  assert(result && result.terminal_reason === "hook_stopped" && !result.is_error,
    `terminal ${result?.terminal_reason}, is_error ${result?.is_error}`);
});

// -- MCP -----------------------------------------------------------------------------------------

function tools(executions) {
  const echo = tool("echo", "Echo back the input text", { text: z.string() }, async (args) => {
    executions.push("echo");
    return { content: [{ type: "text", text: `Echo: ${args.text}` }] };
  });
  const greet = tool("greet", "Greet a person by name", { name: z.string() }, async (args) => {
    executions.push("greet");
    return { content: [{ type: "text", text: `Hello, ${args.name}!` }] };
  });
  return [echo, greet];
}

check("sdk_mcp_tool_execution", async () => {
  const executions = [];
  const server = createSdkMcpServer({ name: "test", version: "1.0.0", tools: tools(executions).slice(0, 1) });
  const { messages } = await run("Call the mcp__test__echo tool with any text",
    options("mcp_exec", { mcpServers: { test: server }, allowedTools: ["mcp__test__echo"] }));
  assert(executions.includes("echo"), "echo not executed");
  const use = messages.filter((m) => m.type === "assistant").flatMap((m) => m.message.content)
    .find((b) => b.type === "tool_use" && b.name === "mcp__test__echo");
  const result = messages.filter((m) => m.type === "user").flatMap((m) => Array.isArray(m.message.content) ? m.message.content : [])
    .find((b) => b.type === "tool_result" && b.tool_use_id === use?.id);
  assert(result && Array.isArray(result.content) && result.content[0].type === "text", `tool_result content: ${JSON.stringify(result?.content)}`);
});

check("sdk_mcp_permission_enforcement", async () => {
  const executions = [];
  const server = createSdkMcpServer({ name: "test", version: "1.0.0", tools: tools(executions) });
  await run("First use the greet tool to greet 'Alice'. After that completes, use the echo tool to echo 'test'. Do these one at a time, not in parallel.",
    options("mcp_perm", { mcpServers: { test: server }, disallowedTools: ["mcp__test__echo"], allowedTools: ["mcp__test__greet"] }));
  assert(!executions.includes("echo") && executions.includes("greet"), `executions: ${executions}`);
});

check("sdk_mcp_multiple_tools", async () => {
  const executions = [];
  const server = createSdkMcpServer({ name: "multi", version: "1.0.0", tools: tools(executions) });
  await run("Call mcp__multi__echo with text='test' and mcp__multi__greet with name='Bob'",
    options("mcp_multi", { mcpServers: { multi: server }, allowedTools: ["mcp__multi__echo", "mcp__multi__greet"] }));
  assert(executions.includes("echo") && executions.includes("greet"), `executions: ${executions}`);
});

check("sdk_mcp_without_permissions_not_run", async () => {
  const executions = [];
  const server = createSdkMcpServer({ name: "noperm", version: "1.0.0", tools: tools(executions).slice(0, 1) });
  await run("Call the mcp__noperm__echo tool", options("mcp_noperm", { mcpServers: { noperm: server } }));
  assert(!executions.includes("echo"), "ran without permission");
});

check("mcp_server_status", async () => {
  const server = createSdkMcpServer({ name: "calc", version: "1.0.0", tools: tools([]).slice(0, 1) });
  const { q } = await converse(["What is 1+1?"], options("mcp_status", { mcpServers: { calc: server } }));
  const status = await q.mcpServerStatus();
  await q.close();
  assert(status.some((s) => s.name === "calc" && s.status === "connected"), `status: ${JSON.stringify(status)}`);
});

// -- streaming input: control requests -----------------------------------------------------------

check("set_permission_mode_and_model", async () => {
  const { results, q } = await converse(["What is 2+2? Just respond with the number.", "What is 3+3? Just respond with the number."],
    options("control"), async (q, i) => { if (i === 1) { await q.setPermissionMode("acceptEdits"); await q.setModel("claude-3-5-haiku-20241022"); } });
  await q.close();
  assert(results.map((r) => r.result).join(",") === "4,6", `results: ${results.map((r) => r.result)}`);
});

check("interrupt_receipt", async () => {
  // interrupt once the turn runs (its init line came, and the model is answering slowly)
  const { messages, results, error, q } = await converse(["Count from 1 to 100 slowly."], options("interrupt"));
  await q.close();
  assert(results.length === 1 || error, "no result");
  const said = messages.filter((m) => m.type === "user" && Array.isArray(m.message.content))
    .flatMap((m) => m.message.content.filter((b) => b.type === "text").map((b) => b.text));
  assert(said.includes("[Request interrupted by user]"), `user lines: ${said}`);
  assert(receipt && Array.isArray(receipt.still_queued), `interrupt answered ${JSON.stringify(receipt)}`);
});

check("origin_round_trip", async () => {
  const stamped = { type: "user", message: { role: "user", content: "Reply with exactly: one" }, parent_tool_use_id: null, session_id: "", origin: { kind: "human" } };
  const { results, q } = await converse([stamped, "Reply with exactly: two"], options("origin", { maxTurns: 1 }));
  await q.close();
  assert(JSON.stringify(results[0].origin) === '{"kind":"human"}' && !results[1].origin,
    `origins: ${JSON.stringify(results.map((r) => r.origin))}`);
});

check("get_context_usage", async () => {
  const { q } = await converse(["Reply with exactly: one"], options("context_usage"));
  const usage = await q.getContextUsage();
  await q.close();
  assert(typeof usage.totalTokens === "number" && usage.totalTokens > 0 && Array.isArray(usage.categories),
    `usage: ${JSON.stringify(usage).slice(0, 200)}`);
});

check("supported_commands_and_models", async () => {
  const { q } = await converse(["Reply with exactly: one"], options("commands"));
  const commands = await q.supportedCommands();
  const models = await q.supportedModels();
  await q.close();
  assert(Array.isArray(commands) && Array.isArray(models) && models.length > 0, `commands ${commands?.length}, models ${models?.length}`);
});

// -- sessions and agents ------------------------------------------------------------------------

check("resume_continues_the_session", async () => {
  const first = await run("Reply with exactly: one", options("resume", { maxTurns: 1 }));
  const again = await run("Reply with exactly: two", options("resume", { maxTurns: 1, resume: first.result.session_id }));
  assert(again.result && !again.result.is_error && again.result.session_id === first.result.session_id,
    `sessions ${first.result?.session_id} then ${again.result?.session_id}`);
});

check("agents_option_listed_in_init", async () => {
  const { messages } = await run("What is 2 + 2?", options("agents", {
    agents: { "test-agent": { description: "A test agent", prompt: "You are a test agent." } },
  }));
  const init = messages.find((m) => m.type === "system" && m.subtype === "init");
  assert(init && (init.agents ?? []).includes("test-agent"), `agents: ${JSON.stringify(init?.agents)}`);
});

check("subagent_via_agent_tool", async () => {
  const { result, messages } = await run(
    "Use the Agent tool exactly once with subagent_type 'greeter', prompt 'say hi', and run_in_background set to false. Then reply with the single word DONE.",
    options("subagent", {
      agents: { greeter: { description: "Replies with a short greeting.", prompt: "Reply with one short friendly sentence. Do not use any tools.", model: "haiku" } },
      allowedTools: ["Agent", "Task"], maxTurns: 4,
    }));
  const used = messages.some((m) => m.type === "assistant" && m.parent_tool_use_id === null
    && m.message.content.some((b) => b.type === "tool_use" && ["Agent", "Task"].includes(b.name)));
  assert(used && result && !result.is_error && result.result === "DONE", `agent used ${used}, result ${result?.result}`);
});

const report = {};
for (const { name, run: go } of checks) {
  if (ONLY && !ONLY.test(name)) continue;
  try {
    await Promise.race([go(), new Promise((_, reject) => setTimeout(() => reject(new Error("timed out after 120 s")), 120_000))]);
    report[name] = { outcome: "pass", why: "" };
  } catch (e) {
    report[name] = { outcome: "fail", why: String(e?.message ?? e).slice(0, 300) };
  }
}
process.stdout.write(JSON.stringify(report) + "\n");
process.exit(0);
