// The TypeScript Agent SDK's setMcpServers() on a streaming query, as
// test_typescript_sdk.py asks: argv[2] is {cli, cwd, servers}. Two prompts: before the
// second, setMcpServers(servers); after it, setMcpServers({}). Prints one JSON object:
// {set, cleared, messages, error}.
import { query } from "@anthropic-ai/claude-agent-sdk";

const spec = JSON.parse(process.argv[2]);
let release;
const next = () => new Promise((resolve) => { release = resolve; });
let gate = next();
async function* prompts() {
  yield { type: "user", message: { role: "user", content: "first" }, parent_tool_use_id: null };
  await gate;
  yield { type: "user", message: { role: "user", content: "second" }, parent_tool_use_id: null };
  gate = next();
  await gate;
}
const messages = [];
let error = null, set = null, cleared = null, results = 0;
const q = query({ prompt: prompts(), options: { pathToClaudeCodeExecutable: spec.cli, cwd: spec.cwd, env: { ...process.env },
                                               allowedTools: ["mcp__raw__echo"] } });
try {
  for await (const message of q) {
    messages.push(message);
    if (message.type !== "result") continue;
    results += 1;
    if (results === 1) {
      set = await q.setMcpServers(spec.servers);
      release();
    } else {
      cleared = await q.setMcpServers({});
      release();
      break;
    }
  }
} catch (e) {
  error = String(e && e.message ? e.message : e);
}
process.stdout.write(JSON.stringify({ set, cleared, messages, error }) + "\n");
process.exit(0);
