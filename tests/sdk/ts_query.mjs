// Runs the TypeScript Agent SDK's query() once, as the test in test_typescript_sdk.py asks:
// argv[2] is a JSON object {cli, cwd, prompt, options, permissions, calc}. Prints one JSON
// object: {messages, asked, added, error}. With `calc`, an in-process MCP server `calc`
// (createSdkMcpServer) offers the tool `add`; `added` lists the arguments of its calls.
import { createSdkMcpServer, query, tool } from "@anthropic-ai/claude-agent-sdk";
import { z } from "zod";

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
const added = [];
if (spec.calc) {
  const add = tool("add", "Add two numbers.", { a: z.number(), b: z.number() }, async (args) => {
    added.push(args);
    return { content: [{ type: "text", text: String(args.a + args.b) }] };
  });
  options.mcpServers = { calc: createSdkMcpServer({ name: "calc", version: "1.0.0", tools: [add] }) };
}
const messages = [];
let error = null;
try {
  for await (const message of query({ prompt: spec.prompt, options })) messages.push(message);
} catch (e) {
  error = String(e && e.message ? e.message : e);
}
process.stdout.write(JSON.stringify({ messages, asked, added, error }) + "\n");
