/**
 * The agent identity a command acts as: the key (`--key`, config key_path, or `$ATH_HOME/keys/agent.pem`
 * created once) and the agent_id (`--agent-id`, config agent_id, or the key's did:key).
 */
import { readFile } from "node:fs/promises";
import type { ConfigFile, Home } from "./home.ts";
import { notConfigured, usageError } from "./errors.ts";
import type { AgentKey } from "./keys.ts";

export interface IdentityOptions {
  agentId?: string;
  key?: string;
}

export interface Identity {
  key: AgentKey;
  agentId: string;
  keyPath: string;
  /** True when this call generated the default key. */
  created: boolean;
}

/** Loads (or, for the default path, creates) the key and picks the agent_id. */
export async function loadIdentity(o: IdentityOptions, config: ConfigFile, home: Home): Promise<Identity> {
  const { loadKey, loadOrCreateKey } = await import("./keys.ts");
  const explicit = o.key ?? config.key_path;
  let key: AgentKey;
  let created = false;
  const keyPath = explicit ?? home.defaultKey;
  if (explicit !== undefined) {
    let pem: string;
    try {
      pem = await readFile(explicit, "utf8");
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const err = `cannot read the key ${explicit} (${code ?? String(e)})`;
      throw o.key !== undefined ? usageError(`--key: ${err}`) : notConfigured("BAD_KEY", `${err}: fix key_path with \`ath config set key-path <file>\``);
    }
    try {
      key = await loadKey(pem);
    } catch (e) {
      throw usageError(`${explicit}: ${(e as Error).message}`);
    }
  } else {
    ({ key, created } = await loadOrCreateKey(keyPath));
  }
  const agentId = o.agentId ?? config.agent_id ?? key.didKey;
  if (!URL.canParse(agentId)) throw usageError(`agent id must be a URI (https://… or did:key:…), got "${agentId}"`);
  return { key, agentId, keyPath, created };
}

/** Signs an attestation for `audience` with the identity's key. */
export async function attest(id: Identity, audience: string): Promise<string> {
  const { signAttestation } = await import("./attestation.ts");
  return signAttestation(id.key, { agentId: id.agentId, audience });
}
