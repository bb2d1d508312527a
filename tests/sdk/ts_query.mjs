// Runs the TypeScript Agent SDK's query() once, as the test in test_typescript_sdk.py asks:
// argv[2] is a JSON object {cli, cwd, prompt, options, permissions}. Prints one JSON object:
// {messages, asked, error}.
import { query } from "@anthropic-ai/claude-agent-sdk";

const spec = JSON.parse(process.argv[2]);
const asked = [];
const options = { ...spec.options, pathToClaudeCodeExecutable: spec.cli, cwd: spec.cwd, env: { ...process.env } };
if (spec.permissions) {
  options.canUseTool = async (name, input) => {
    asked.push([name, input]);
    const rule = spec.permissions[name] ?? { behavior: "deny", message: "not in the test's list" };
    return rule.behavior === "allow" ? { behavior: "allow", updatedInput: { ...input, ...(rule.merge ?? {}) } } : rule;
  };
}
const messages = [];
let error = null;
try {
  for await (const message of query({ prompt: spec.prompt, options })) messages.push(message);
} catch (e) {
  error = String(e && e.message ? e.message : e);
}
process.stdout.write(JSON.stringify({ messages, asked, error }) + "\n");
