/**
 * `ath identity`: the agent_id, public JWK and RFC 7638 thumbprint. With `--format json` it prints an agent
 * identity document, ready to publish at an https agent_id (the gateway reads `public_key` from it).
 */
import { ATH_VERSION } from "../../protocol/constants.ts";
import { AgentIdentityDocument } from "../../protocol/schemas.ts";
import { commonOptions, context, type CommonOptions } from "../kit/common.ts";
import { commonArgs, defineCommand } from "../kit/flags.ts";
import { getDeps, type Deps } from "../kit/deps.ts";
import { usageError } from "../kit/errors.ts";

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

export interface NewIdentityOptions extends CommonOptions {
  /** The key file's name under $ATH_HOME/keys (default: agent-<time>). */
  keyName?: string;
}

/**
 * `ath identity new`: a new key (a new did:key identity), saved under $ATH_HOME/keys and made current (config
 * key_path). A registration is bound to its agent_id, and a gateway refuses a second one for the same id (409): a
 * new identity is how an agent asks again — other scopes, or after a denial. The old key and its credentials stay.
 */
export async function runNew(opts: NewIdentityOptions, deps: Deps): Promise<void> {
  if (opts.key !== undefined || opts.agentId !== undefined) throw usageError("identity new makes its own key: --key and --agent-id cannot be given");
  const name = opts.keyName ?? `agent-${new Date(deps.now()).toISOString().replace(/[-:]/g, "").replace(/\..*/, "")}`;
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name)) throw usageError(`--name must be 1–64 of A-Z a-z 0-9 _ . - (a file name), got "${name}"`);
  const ctx = await context(opts, deps);
  const previous = await ctx.agent.identity().then((id) => id.agentId, () => null);
  const [{ loadOrCreateKey }, { updateConfig }] = await Promise.all([import("../../agent/keys.ts"), import("../../agent/home.ts")]);
  const path = `${ctx.agent.home.dir}/keys/${name}.pem`;
  const { key, created } = await loadOrCreateKey(path);
  if (!created) throw usageError(`a key named ${name} already exists (${path}): choose another --name`);
  let droppedAgentId: string | undefined;
  await updateConfig(ctx.agent.home, (c) => {
    c.key_path = path;
    // an https agent_id names another key's identity document: the new key is its own did:key
    if (c.agent_id !== undefined) [droppedAgentId, c.agent_id] = [c.agent_id, undefined];
  });
  const doc = { agent_id: key.didKey, key_path: path, previous_agent_id: previous, ...(droppedAgentId ? { unset_agent_id: droppedAgentId } : {}) };
  if (ctx.out.json) return ctx.out.doc(doc);
  ctx.out.table([
    ["agent_id", key.didKey],
    ["key_path", path],
    ["previous", previous ?? "(none)"],
  ]);
  if (droppedAgentId) ctx.out.info(`config agent_id ${droppedAgentId} was unset: it named the previous key's identity`);
  ctx.out.info("this is now the current identity: register it with `ath register --provider <id> --scopes …`");
}

const newCommand = defineCommand({
  meta: { name: "new", description: "Make a new agent identity (a new key) and use it from now on" },
  args: { ...commonArgs, name: { type: "string", description: "Name of the key file under $ATH_HOME/keys", valueHint: "name" } },
  run: ({ args, data }) => {
    const o: NewIdentityOptions = commonOptions(data);
    if (typeof args.name === "string" && args.name !== "") o.keyName = args.name;
    return runNew(o, getDeps());
  },
});

export default defineCommand({
  meta: { name: "identity", description: "Print the agent identity (json: an identity document to publish); `new` makes another" },
  args: { ...commonArgs, name: { type: "string", description: "Agent name in the identity document" } },
  subCommands: { new: newCommand },
  run: ({ args, data }) => {
    const o: IdentityOptions = commonOptions(data);
    if (typeof args.name === "string" && args.name !== "") o.name = args.name;
    return run(o, getDeps());
  },
});
