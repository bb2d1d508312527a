// The official TypeScript ACP client (@agentclientprotocol/sdk) driving `recursive acp`:
// node ts_client.mjs '{"command": [...], "cwd": ..., "prompt": ..., "answers": [...]}'
// prints {"init", "session", "answer", "updates", "asked"} as one JSON line.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const spec = JSON.parse(process.argv[2]);
const child = spawn(spec.command[0], spec.command.slice(1), { cwd: spec.cwd, stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const updates = [];
const asked = [];
const answers = [...spec.answers];

const app = acp.client({ name: "recursive-ts-test" })
  .onNotification(acp.methods.client.session.update, (ctx) => { updates.push(ctx.params.update); })
  .onRequest(acp.methods.client.session.requestPermission, (ctx) => {
    asked.push(ctx.params);
    const kind = answers.shift() ?? "reject_once";
    const option = ctx.params.options.find((o) => o.kind === kind);
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  });

const out = await app.connectWith(stream, async (agent) => {
  const init = await agent.request(acp.methods.agent.initialize,
    { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  const session = await agent.request(acp.methods.agent.session.new, { cwd: spec.cwd, mcpServers: [] });
  const answer = await agent.request(acp.methods.agent.session.prompt,
    { sessionId: session.sessionId, prompt: [{ type: "text", text: spec.prompt }] });
  return { init, session, answer };
});
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
process.stdout.write(JSON.stringify({ ...out, updates, asked, exit: child.exitCode }) + "\n");
