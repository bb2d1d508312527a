// Runs the TypeScript Agent SDK's query() once (argv[2]: JSON {cli, cwd, prompt}), then reads
// the session back with its own listSessions() and getSessionMessages(). Prints one JSON object:
// {messages, sessions, read, error}.
import { getSessionMessages, listSessions, query } from "@anthropic-ai/claude-agent-sdk";

const spec = JSON.parse(process.argv[2]);
const options = { pathToClaudeCodeExecutable: spec.cli, cwd: spec.cwd, env: { ...process.env } };
const messages = [];
let error = null;
try {
  for await (const message of query({ prompt: spec.prompt, options })) messages.push(message);
} catch (e) {
  error = String(e);
}
const result = messages.find((m) => m.type === "result");
const sessions = await listSessions({ dir: spec.cwd });
const read = result ? await getSessionMessages(result.session_id, { dir: spec.cwd }) : [];
process.stdout.write(JSON.stringify({ messages, sessions, read, error }));
