/**
 * The shapes of the home's two JSON files, config.json and credentials.json (home.ts reads and writes them), and
 * their checks — written by hand, not with zod: `ath status` reads both files on every start, and zod's module
 * graph was most of what status loaded (DESIGN §13; tests/unit/agent/home-files.test.ts keeps zod off that path).
 *
 * The checks behave as the zod objects they replace did: an absent `gateways`, `agents`, `tokens`, `pending` or
 * `exchanged` reads as a new `{}`; unknown fields are dropped (so a rewrite keeps only these fields, in this order);
 * an optional field may be absent but not `null`; every problem is reported, each as `path.to.field: message`.
 * The wire objects a registration holds (ProviderApproval, ScopeIntersection, AgentStatus) are protocol/lean.ts's
 * types; tests/unit/agent/home-files.test.ts checks these readers against zod schemas of the same shapes.
 */
import type { AgentStatus, ProviderApproval, ScopeIntersection } from "../protocol/lean.ts";

export interface ConfigFile {
  /** Named gateways: name → base URL. */
  gateways: Record<string, string>;
  /** A gateway name or URL used when `-g` is not given. */
  default_gateway?: string | undefined;
  agent_id?: string | undefined;
  key_path?: string | undefined;
  developer_name?: string | undefined;
  developer_id?: string | undefined;
}

export interface SavedToken {
  access_token: string;
  token_type: string;
  provider_id: string;
  agent_id: string;
  effective_scopes: string[];
  scope_intersection?: ScopeIntersection | undefined;
  obtained_at: string;
  expires_at: string;
  /** ath's refresh token (DESIGN §17) and when its family ends (idle or absolute), if the gateway gave one. */
  refresh_token?: string | undefined;
  refresh_expires_at?: string | undefined;
  /**
   * Set when the gateway refused to refresh this token's family (`refresh_token_revoked|reused|expired`): the token is
   * kept, dead, so every later use fails the same way (exit 4) until `ath authorize` saves a new one (issue 40).
   */
  refresh_dead?: string | undefined;
}

export interface PendingSession {
  provider_id: string;
  scopes: string[];
  state: string;
  authorization_url: string;
  created_at: string;
  user_redirect_uri?: string | undefined;
}

/** A code this home exchanged, kept (by its SHA-256) so a re-run of `ath token --code` sends nothing again. */
export interface ExchangedCode {
  ath_session_id: string;
  provider_id: string;
  exchanged_at: string;
}

export interface Registration {
  client_id: string;
  client_secret: string;
  /** As registered, or as `ath status --refresh` last read it (an admin may suspend an agent: `suspended`). */
  agent_status: AgentStatus | "suspended";
  approved_providers: ProviderApproval[];
  approval_expires: string;
  /** Scopes asked for since registration that wait for the gateway's admin (DESIGN §17). */
  pending_providers?: { provider_id: string; scopes: string[] }[] | undefined;
  registered_at: string;
  /** The identity's loopback port, registered as http://127.0.0.1:<port>/callback (see agent/loopback.ts). */
  loopback_port?: number | undefined;
  tokens: Record<string, SavedToken>;
  /** Authorization sessions started but not yet exchanged, by ath_session_id. */
  pending: Record<string, PendingSession>;
  /** Codes exchanged in the last EXCHANGED_TTL_MS (home.ts), by SHA-256 (hex) of the code. */
  exchanged: Record<string, ExchangedCode>;
}

export interface CredentialsFile {
  /** Gateway (or native service) base URL → agent_id → registration. */
  gateways: Record<
    string,
    {
      agents: Record<string, Registration>;
      /** `ath admin login`: this gateway's admin token (DESIGN §9), for the operator's `ath admin` commands. */
      admin_token?: string | undefined;
    }
  >;
}

/** A file's content checked as config.json: the file's value, or the problems found (`path: message` each). */
export function checkConfigFile(value: unknown): Checked<ConfigFile> {
  return checked(value, configFile);
}

/** A file's content checked as credentials.json: the file's value, or the problems found (`path: message` each). */
export function checkCredentialsFile(value: unknown): Checked<CredentialsFile> {
  return checked(value, credentialsFile);
}

export type Checked<T> = { ok: true; value: T } | { ok: false; issues: string[] };

// internal

/**
 * A reader: the value at `at` (a dotted path, "" at the top) as T, a new object built of the known fields only.
 * A problem is pushed to `issues` and reading goes on, so one pass reports them all; the result then is not used.
 */
type Read<T> = (v: unknown, at: string, issues: string[]) => T;

/** A field of an object: required, optional (absent stays absent) or with a default (a new value each time). */
type Field = Read<unknown> | { optional: Read<unknown> } | { fallback: () => unknown; read: Read<unknown> };

function checked<T>(value: unknown, read: Read<T>): Checked<T> {
  const issues: string[] = [];
  const out = read(value, "", issues);
  return issues.length === 0 ? { ok: true, value: out } : { ok: false, issues };
}

const fail = (issues: string[], at: string, message: string): undefined => {
  issues.push(at ? `${at}: ${message}` : message);
  return undefined;
};

const kindOf = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);
const expected = (what: string, v: unknown) => `Invalid input: expected ${what}, received ${kindOf(v)}`;
const join = (at: string, key: string | number) => (at ? `${at}.${key}` : String(key));
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const string: Read<string> = (v, at, issues) => (typeof v === "string" ? v : (fail(issues, at, expected("string", v)) as never));
const number: Read<number> = (v, at, issues) => (typeof v === "number" && Number.isFinite(v) ? v : (fail(issues, at, expected("number", v)) as never));

function oneOf<T extends string>(values: readonly T[]): Read<T> {
  const list = values.map((s) => JSON.stringify(s)).join("|");
  return (v, at, issues) => (values.includes(v as T) ? (v as T) : (fail(issues, at, `Invalid option: expected one of ${list}`) as never));
}

function array<T>(item: Read<T>): Read<T[]> {
  return (v, at, issues) => (Array.isArray(v) ? v.map((x, i) => item(x, join(at, i), issues)) : (fail(issues, at, expected("array", v)) as never));
}

/** Any string keys → `item`; `__proto__` is skipped, as zod's record skipped it. */
function record<T>(item: Read<T>): Read<Record<string, T>> {
  return (v, at, issues) => {
    if (!isObject(v)) return fail(issues, at, expected("record", v)) as never;
    const out: Record<string, T> = {};
    for (const key of Object.keys(v)) if (key !== "__proto__") out[key] = item(v[key], join(at, key), issues);
    return out;
  };
}

/** An object of `shape`'s fields, in `shape`'s order; fields not in `shape` are dropped. */
function object<T>(shape: { [K in keyof T]-?: Field }): Read<T> {
  const entries = Object.entries(shape) as [string, Field][];
  return (v, at, issues) => {
    if (!isObject(v)) return fail(issues, at, expected("object", v)) as never;
    const out: Record<string, unknown> = {};
    for (const [key, field] of entries) {
      const x = v[key];
      const path = join(at, key);
      if (typeof field === "function") out[key] = field(x, path, issues);
      else if ("optional" in field) {
        if (x !== undefined) out[key] = field.optional(x, path, issues);
      } else out[key] = x === undefined ? field.fallback() : field.read(x, path, issues);
    }
    return out as T;
  };
}

const optional = (read: Read<unknown>): Field => ({ optional: read });
const orEmpty = (read: Read<unknown>): Field => ({ fallback: () => ({}), read });
const strings = array(string);

const configFile = object<ConfigFile>({
  gateways: orEmpty(record(string)),
  default_gateway: optional(string),
  agent_id: optional(string),
  key_path: optional(string),
  developer_name: optional(string),
  developer_id: optional(string),
});

const scopeIntersection = object<ScopeIntersection>({ agent_approved: strings, user_consented: strings, effective: strings });

const providerApproval = object<ProviderApproval>({
  provider_id: string,
  approved_scopes: strings,
  denied_scopes: strings,
  denial_reason: optional(string),
});

const savedToken = object<SavedToken>({
  access_token: string,
  token_type: string,
  provider_id: string,
  agent_id: string,
  effective_scopes: strings,
  scope_intersection: optional(scopeIntersection),
  obtained_at: string,
  expires_at: string,
  refresh_token: optional(string),
  refresh_expires_at: optional(string),
  refresh_dead: optional(string),
});

const pendingSession = object<PendingSession>({
  provider_id: string,
  scopes: strings,
  state: string,
  authorization_url: string,
  created_at: string,
  user_redirect_uri: optional(string),
});

const exchangedCode = object<ExchangedCode>({ ath_session_id: string, provider_id: string, exchanged_at: string });

const registration = object<Registration>({
  client_id: string,
  client_secret: string,
  agent_status: oneOf(["approved", "pending", "denied", "suspended"]),
  approved_providers: array(providerApproval),
  approval_expires: string,
  pending_providers: optional(array(object<{ provider_id: string; scopes: string[] }>({ provider_id: string, scopes: strings }))),
  registered_at: string,
  loopback_port: optional(number),
  tokens: orEmpty(record(savedToken)),
  pending: orEmpty(record(pendingSession)),
  exchanged: orEmpty(record(exchangedCode)),
});

const credentialsFile = object<CredentialsFile>({
  gateways: orEmpty(record(object<CredentialsFile["gateways"][string]>({ agents: orEmpty(record(registration)), admin_token: optional(string) }))),
});
