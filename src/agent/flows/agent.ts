/**
 * The agent a flow acts as: its home directory and config.json, its identity (loaded, or for the default key
 * created, on first use), HTTP and the clock. The CLI builds one per command and `ath mcp` one per server, from the
 * same `ATH_HOME`, so both act with the same key and credentials.
 */
import { homePaths, readConfig, type ConfigFile, type Home } from "../home.ts";
import type { Fetch, HttpOptions } from "../http.ts";
import { keyPathOf, loadIdentity, type Identity, type IdentityOptions } from "../identity.ts";
import { resolveBase, type TargetOptions } from "../target.ts";
import { timeoutFromEnv } from "../timeout.ts";

export interface AgentOptions extends IdentityOptions {
  /** `ATH_HOME` (else `$HOME/.ath`) and `ATH_HTTP_TIMEOUT_MS` are read from it; default `process.env`. */
  env?: Record<string, string | undefined>;
  fetch?: Fetch;
  /** Epoch milliseconds; default `Date.now`. */
  now?: () => number;
  /** Told, once, what should be fixed but does not stop the flow (a key file others can read). */
  warn?: (message: string) => void;
}

export interface Agent {
  home: Home;
  config: ConfigFile;
  http: HttpOptions;
  now: () => number;
  /** The `--key` / `--agent-id` overrides the identity was asked for with. */
  overrides: IdentityOptions;
  /** The key file in force (it may not exist yet). */
  keyPath: string;
  /** The identity; the default key is created on the first call. */
  identity(): Promise<Identity>;
  /** The gateway (or native service) to talk to; throws a `config` / `usage` ClientError naming the fix. */
  target(o: TargetOptions): Target;
}

/** Where a flow sends its requests: a gateway, or a native ATH service (`native`), by its base URL. */
export interface Target {
  base: string;
  native: boolean;
}

/** Reads config.json of the home `env` names; nothing else is read or created until a flow needs it. */
export async function loadAgent(o: AgentOptions = {}): Promise<Agent> {
  const env = o.env ?? process.env;
  const home = homePaths(env);
  const config = await readConfig(home);
  const overrides: IdentityOptions = {
    ...(o.key === undefined ? {} : { key: o.key }),
    ...(o.agentId === undefined ? {} : { agentId: o.agentId }),
  };
  let identity: Promise<Identity> | undefined;
  return {
    home,
    config,
    http: { ...(o.fetch === undefined ? {} : { fetch: o.fetch }), timeoutMs: timeoutFromEnv(env) },
    now: o.now ?? Date.now,
    overrides,
    keyPath: keyPathOf(overrides, config, home),
    identity: () =>
      (identity ??= loadIdentity(overrides, config, home).then((id) => {
        for (const w of id.warnings) o.warn?.(w);
        return id;
      })),
    target: (t) => ({ base: resolveBase(t, config), native: t.mode === "native" }),
  };
}
