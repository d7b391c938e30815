/**
 * The agent's home directory (`$ATH_HOME`, default `~/.ath`): config.json, credentials.json and keys/agent.pem.
 * Both JSON files have a zod schema, are 0600 in a 0700 directory, and change only under a lock.
 */
import * as z from "zod/mini";
import { LIMITS } from "../protocol/constants.ts";
// zod/mini and the lean protocol module: `ath status` reads these files on every start (DESIGN §13).
import { AgentStatus, ProviderApproval, ScopeIntersection, formatIssues } from "../protocol/lean.ts";
import { readIfExists, withLock, writeFileAtomic } from "./files.ts";

export const ConfigFile = z.object({
  /** Named gateways: name → base URL. */
  gateways: z._default(z.record(z.string(), z.string()), {}),
  /** A gateway name or URL used when `-g` is not given. */
  default_gateway: z.optional(z.string()),
  agent_id: z.optional(z.string()),
  key_path: z.optional(z.string()),
  developer_name: z.optional(z.string()),
  developer_id: z.optional(z.string()),
});
export type ConfigFile = z.infer<typeof ConfigFile>;

export const SavedToken = z.object({
  access_token: z.string(),
  token_type: z.string(),
  provider_id: z.string(),
  agent_id: z.string(),
  effective_scopes: z.array(z.string()),
  scope_intersection: z.optional(ScopeIntersection),
  obtained_at: z.string(),
  expires_at: z.string(),
  /** ath's refresh token (DESIGN §17) and when its family ends (idle or absolute), if the gateway gave one. */
  refresh_token: z.optional(z.string()),
  refresh_expires_at: z.optional(z.string()),
});
export type SavedToken = z.infer<typeof SavedToken>;

export const PendingSession = z.object({
  provider_id: z.string(),
  scopes: z.array(z.string()),
  state: z.string(),
  authorization_url: z.string(),
  created_at: z.string(),
  user_redirect_uri: z.optional(z.string()),
});
export type PendingSession = z.infer<typeof PendingSession>;

/** A code this home exchanged, kept (by its SHA-256) so a re-run of `ath token --code` sends nothing again. */
export const ExchangedCode = z.object({
  ath_session_id: z.string(),
  provider_id: z.string(),
  exchanged_at: z.string(),
});
export type ExchangedCode = z.infer<typeof ExchangedCode>;

export const Registration = z.object({
  client_id: z.string(),
  client_secret: z.string(),
  /** As registered, or as `ath status --refresh` last read it (an admin may suspend an agent: `suspended`). */
  agent_status: z.union([AgentStatus, z.literal("suspended")]),
  approved_providers: z.array(ProviderApproval),
  approval_expires: z.string(),
  /** Scopes asked for since registration that wait for the gateway's admin (DESIGN §17). */
  pending_providers: z.optional(z.array(z.object({ provider_id: z.string(), scopes: z.array(z.string()) }))),
  registered_at: z.string(),
  /** The identity's loopback port, registered as http://127.0.0.1:<port>/callback (see agent/loopback.ts). */
  loopback_port: z.optional(z.number()),
  tokens: z._default(z.record(z.string(), SavedToken), {}),
  /** Authorization sessions started but not yet exchanged, by ath_session_id. */
  pending: z._default(z.record(z.string(), PendingSession), {}),
  /** Codes exchanged in the last EXCHANGED_TTL_MS, by SHA-256 (hex) of the code. */
  exchanged: z._default(z.record(z.string(), ExchangedCode), {}),
});
export type Registration = z.infer<typeof Registration>;

export const CredentialsFile = z.object({
  /** Gateway (or native service) base URL → agent_id → registration. */
  gateways: z._default(
    z.record(
      z.string(),
      z.object({
        agents: z._default(z.record(z.string(), Registration), {}),
        /** `ath admin login`: this gateway's admin token (DESIGN §9), for the operator's `ath admin` commands. */
        admin_token: z.optional(z.string()),
      }),
    ),
    {},
  ),
});
export type CredentialsFile = z.infer<typeof CredentialsFile>;

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
  return parseFile(ConfigFile, home.config, await readIfExists(home.config));
}

export async function readCredentials(home: Home): Promise<CredentialsFile> {
  return parseFile(CredentialsFile, home.credentials, await readIfExists(home.credentials));
}

/** Read-modify-write of config.json under its lock; returns the new content. */
export function updateConfig(home: Home, mutate: (c: ConfigFile) => void): Promise<ConfigFile> {
  return update(ConfigFile, home.config, mutate);
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
  return update(CredentialsFile, home.credentials, (c) => {
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
    const c = parseFile(CredentialsFile, home.credentials, await readIfExists(home.credentials));
    return fn(c, () => writeFileAtomic(home.credentials, `${JSON.stringify(c, null, 2)}\n`));
  });
}

/** The registration saved for (gateway, agent), if any. */
export function findRegistration(c: CredentialsFile, gateway: string, agentId: string): Registration | undefined {
  return c.gateways[gateway]?.agents[agentId];
}

// internal

function parseFile<S extends z.ZodMiniType>(schema: S, path: string, text: string | undefined): z.infer<S> {
  if (text === undefined || text.trim() === "") return schema.parse({});
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`${path} is not valid JSON: fix or remove it`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new Error(`${path} is invalid: ${formatIssues(parsed.error).join("; ")}`);
  return parsed.data;
}

function update<S extends z.ZodMiniType>(schema: S, path: string, mutate: (v: z.infer<S>) => void): Promise<z.infer<S>> {
  return withLock(path, async () => {
    const value = parseFile(schema, path, await readIfExists(path));
    mutate(value);
    await writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`);
    return value;
  });
}
