/**
 * `ath identity`: the agent_id, public JWK and RFC 7638 thumbprint. With `--format json` it prints an agent
 * identity document, ready to publish at an https agent_id (the gateway reads `public_key` from it).
 */
import { ATH_VERSION } from "../protocol/constants.ts";
import { AgentIdentityDocument } from "../protocol/schemas.ts";
import { commonOptions, context, type CommonOptions } from "./common.ts";
import { commonArgs, defineCommand } from "./flags.ts";
import { getDeps, type Deps } from "./deps.ts";

export interface IdentityOptions extends CommonOptions {
  name?: string;
}

export async function run(opts: IdentityOptions, deps: Deps): Promise<void> {
  const ctx = await context(opts, deps);
  const id = await ctx.agent.identity();
  const { out } = ctx;
  const { config } = ctx.agent;
  const publicKey = { ...id.key.publicJwk, kid: id.key.thumbprint, alg: "ES256", use: "sig" };
  if (out.json) {
    const doc = AgentIdentityDocument.parse({
      ath_version: ATH_VERSION,
      agent_id: id.agentId,
      name: opts.name ?? config.developer_name ?? "ath agent",
      developer: { name: config.developer_name ?? "local", id: config.developer_id ?? id.agentId },
      public_key: publicKey,
    });
    return out.doc(doc);
  }
  out.table([
    ["agent_id", id.agentId],
    ["did_key", id.key.didKey],
    ["thumbprint", id.key.thumbprint],
    ["key_path", id.keyPath],
    ["public_jwk", JSON.stringify(publicKey)],
  ]);
  if (id.agentId.startsWith("https://") && out.tty) {
    out.info(`publish \`ath identity --format json\` at ${id.agentId} so gateways can verify the attestations`);
  }
}

export default defineCommand({
  meta: { name: "identity", description: "Print the agent identity (json: an identity document to publish)" },
  args: { ...commonArgs, name: { type: "string", description: "Agent name in the identity document" } },
  run: ({ args, rawArgs }) => {
    const o: IdentityOptions = commonOptions(args, rawArgs);
    if (typeof args.name === "string" && args.name !== "") o.name = args.name;
    return run(o, getDeps());
  },
});
