/**
 * The agent's home directory (`$ATH_HOME`, default `~/.ath`): config.json, credentials.json and keys/agent.pem.
 * Both JSON files are checked against their shapes (home-files.ts), are 0600 in a 0700 directory, and change only
 * under a lock.
 */
import { LIMITS } from "../protocol/constants.ts";
import { checkConfigFile, checkCredentialsFile, type Checked, type ConfigFile, type CredentialsFile, type PendingSession, type Registration } from "./home-files.ts";
import { readIfExists, withLock, writeFileAtomic } from "./files.ts";

// The files' shapes and checks are in home-files.ts (hand-written: `ath status` reads these files on every start).
export type { ConfigFile, CredentialsFile, ExchangedCode, PendingSession, Registration, SavedToken } from "./home-files.ts";

export interface Home {
  dir: string;
  config: string;
  credentials: string;
  defaultKey: string;
}

/** Paths of the home directory chosen by `$ATH_HOME` (default `~/.ath`). */
export function homePaths(env: Record<string, string | undefined> = process.env): Home {
  // Plain string joins and $HOME instead of node:path / node:os: each builtin costs the CLI's cold start.
  const dir = (env.ATH_HOME || `${env.HOME || env.USERPROFILE || "."}/.ath`).replace(/\/+$/, "") || "/";
  return {
    dir,
    config: `${dir}/config.json`,
    credentials: `${dir}/credentials.json`,
    defaultKey: `${dir}/keys/agent.pem`,
  };
}

export async function readConfig(home: Home): Promise<ConfigFile> {
  return parseFile(checkConfigFile, home.config, await readIfExists(home.config));
}

export async function readCredentials(home: Home): Promise<CredentialsFile> {
  return parseFile(checkCredentialsFile, home.credentials, await readIfExists(home.credentials));
}

/** Read-modify-write of config.json under its lock; returns the new content. */
export function updateConfig(home: Home, mutate: (c: ConfigFile) => void): Promise<ConfigFile> {
  return update(checkConfigFile, home.config, mutate);
}

/** A pending session is dead once the gateway's maximum session lifetime (600 s) has passed since it started. */
const PENDING_TTL_MS = LIMITS.sessionTtlMaxSeconds * 1000;

/** True while a pending session may still be exchanged (younger than PENDING_TTL_MS at `now`). */
export function isPendingLive(p: PendingSession, now: number): boolean {
  const started = Date.parse(p.created_at);
  return Number.isFinite(started) && now < started + PENDING_TTL_MS;
}

/** How long an exchanged code is remembered: a retry of `ath token` comes minutes later, not days. */
const EXCHANGED_TTL_MS = 24 * 3600 * 1000;

/**
 * Read-modify-write of credentials.json under its lock; returns the new content. Every write also drops the
 * pending sessions that can no longer be exchanged, so abandoned `authorize` runs do not pile up, and the
 * records of codes exchanged more than EXCHANGED_TTL_MS ago.
 */
export function updateCredentials(home: Home, mutate: (c: CredentialsFile) => void, now: () => number = Date.now): Promise<CredentialsFile> {
  return update(checkCredentialsFile, home.credentials, (c) => {
    mutate(c);
    const at = now();
    for (const gw of Object.values(c.gateways)) {
      for (const reg of Object.values(gw.agents)) {
        for (const [id, p] of Object.entries(reg.pending)) if (!isPendingLive(p, at)) delete reg.pending[id];
        for (const [h, x] of Object.entries(reg.exchanged)) if (!(at - Date.parse(x.exchanged_at) < EXCHANGED_TTL_MS)) delete reg.exchanged[h];
      }
    }
  });
}

/**
 * Runs `fn` holding the credentials lock, with the file's content; `save` writes that content (mutated) back. For a
 * read-decide-call-write that must happen once across processes (the token refresh, DESIGN §17).
 */
export function withCredentials<T>(home: Home, fn: (c: CredentialsFile, save: () => Promise<void>) => Promise<T>): Promise<T> {
  return withLock(home.credentials, async () => {
    const c = parseFile(checkCredentialsFile, home.credentials, await readIfExists(home.credentials));
    return fn(c, () => writeFileAtomic(home.credentials, `${JSON.stringify(c, null, 2)}\n`));
  });
}

/** The registration saved for (gateway, agent), if any. */
export function findRegistration(c: CredentialsFile, gateway: string, agentId: string): Registration | undefined {
  return c.gateways[gateway]?.agents[agentId];
}

// internal

/** The file's content (`text`, undefined when there is no file) checked by `check`: no file or an empty one is `{}`. */
function parseFile<T>(check: (v: unknown) => Checked<T>, path: string, text: string | undefined): T {
  let json: unknown = {};
  if (text !== undefined && text.trim() !== "") {
    try {
      json = JSON.parse(text);
    } catch {
      throw new Error(`${path} is not valid JSON: fix or remove it`);
    }
  }
  const parsed = check(json);
  if (!parsed.ok) throw new Error(`${path} is invalid: ${parsed.issues.join("; ")}`);
  return parsed.value;
}

function update<T>(check: (v: unknown) => Checked<T>, path: string, mutate: (v: T) => void): Promise<T> {
  return withLock(path, async () => {
    const value = parseFile(check, path, await readIfExists(path));
    mutate(value);
    await writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`);
    return value;
  });
}
