/**
 * The agent identity a command acts as: the key (`--key`, config key_path, or `$ATH_HOME/keys/agent.pem`
 * created once) and the agent_id (`--agent-id`, config agent_id, or the key's did:key). A `--key` that cannot be
 * used is a usage error (exit 2); a configured or default key that cannot be used is BAD_KEY (exit 3), named.
 */
// node:fs/promises is loaded when a key file is read or fixed here (lazily: `ath status` starts without it, DESIGN
// §13); the mode check is node:fs's statSync, which the CLI has loaded already (cli/kit/deps.ts).
import { statSync } from "node:fs";
const fsp = () => import("node:fs/promises");
import type { ConfigFile, Home } from "./home.ts";
import { notConfigured, usageError } from "./errors.ts";
import type { AgentKey } from "./keys.ts";
import { fileProblem } from "../text/file-errors.ts";

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
  /** Things the user should fix that do not stop the command (a key file others can read). */
  warnings: string[];
}

/** The key file in force: `--key`, else config key_path, else the default key of the home. */
export function keyPathOf(o: IdentityOptions, config: ConfigFile, home: Home): string {
  return o.key ?? config.key_path ?? home.defaultKey;
}

/** Loads (or, for the default path, creates) the key and picks the agent_id. */
export async function loadIdentity(o: IdentityOptions, config: ConfigFile, home: Home): Promise<Identity> {
  const { loadKey, loadOrCreateKey } = await import("./keys.ts");
  const explicit = o.key ?? config.key_path;
  let key: AgentKey;
  let created = false;
  const keyPath = keyPathOf(o, config, home);
  const warnings: string[] = [];
  if (explicit !== undefined) {
    const bad = (why: string) =>
      o.key !== undefined
        ? usageError(`--key ${explicit}: ${why}`)
        : notConfigured("BAD_KEY", `the configured key ${explicit} ${why}`, { key_path: explicit }, "fix key_path with `ath config set key-path <file>`");
    let pem: string;
    try {
      pem = await (await fsp()).readFile(explicit, "utf8");
    } catch (e) {
      throw bad(`cannot be read: ${fileProblem(e)}`);
    }
    try {
      key = await loadKey(pem);
    } catch (e) {
      throw bad(`cannot be used (${reason(e)})`);
    }
    if (modeOf(explicit) & 0o077) warnings.push(`the key ${explicit} can be read by other users: run \`chmod 600 ${explicit}\``);
  } else {
    try {
      ({ key, created } = await loadOrCreateKey(keyPath));
    } catch (e) {
      throw notConfigured(
        "BAD_KEY",
        `the agent key ${keyPath} cannot be used (${reason(e)}): move it away and a new key is made on the next command — ` +
          "a new key is a new identity (did:key), which must register again",
        { key_path: keyPath },
      );
    }
    // Ours to fix: a default key widened (a copy, a umask-less restore) is made private again.
    if (modeOf(keyPath) & 0o077) await (await fsp()).chmod(keyPath, 0o600).catch(() => undefined);
  }
  const agentId = o.agentId ?? config.agent_id ?? key.didKey;
  if (!URL.canParse(agentId)) throw usageError(`agent id must be a URI (https://… or did:key:…), got "${agentId}"`);
  return { key, agentId, keyPath, created, warnings };
}

/** Signs an attestation for `audience` with the identity's key. */
export async function attest(id: Identity, audience: string): Promise<string> {
  const { signAttestation } = await import("./attestation.ts");
  return signAttestation(id.key, { agentId: id.agentId, audience });
}

// internal

function reason(e: unknown): string {
  return fileProblem(e).replace(/^agent key: /, "");
}

function modeOf(path: string): number {
  try {
    return statSync(path).mode & 0o777;
  } catch {
    return 0;
  }
}
