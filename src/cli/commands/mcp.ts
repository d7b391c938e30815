/**
 * `ath mcp`: serve the agent commands as Model Context Protocol tools on stdio, for MCP hosts (Claude Code, Cursor,
 * VS Code…). The MCP SDK and the server load only when this command runs: no other command's start-up carries them.
 */
import { commonOptions } from "../kit/common.ts";
import { getDeps } from "../kit/deps.ts";
import { usageError } from "../kit/errors.ts";
import { commonArgs, defineCommand } from "../kit/flags.ts";

const { format: _format, ...targetArgs } = commonArgs;

export default defineCommand({
  meta: { name: "mcp", description: "Serve the agent commands as MCP tools on stdio (for Claude Code, Cursor, VS Code…)" },
  args: targetArgs,
  async run({ args, rawArgs }) {
    const o = commonOptions(args, rawArgs);
    if (o.mode === "native" && o.service === undefined) throw usageError("--mode native needs --service <url>");
    const deps = getDeps();
    const { serveMcp } = await import("../../mcp/server.ts");
    await serveMcp({
      target: { mode: o.mode, ...(o.gateway === undefined ? {} : { gateway: o.gateway }), ...(o.service === undefined ? {} : { service: o.service }) },
      ...(o.agentId === undefined ? {} : { agentId: o.agentId }),
      ...(o.key === undefined ? {} : { key: o.key }),
      stderr: deps.stderr,
    });
    // stdin may still be open (SIGTERM): the protocol is over, so is the process.
    process.exit(0);
  },
});
