/**
 * Flags shared by every command (spread into each command's `args`, since citty passes a subcommand only the
 * words after its name) and the context a command runs in: home, config, target base URL, identity, output.
 */
import type { ArgsDef } from "citty";
import { homePaths, readConfig, type ConfigFile, type Home } from "../agent/home.ts";
import { resolveBase, type Mode } from "../agent/target.ts";
import { loadIdentity, type Identity } from "../agent/identity.ts";
import { timeoutFromEnv, type HttpOptions } from "../agent/http.ts";
import { usageError } from "../agent/errors.ts";
import { getDeps, type Deps } from "./deps.ts";
import { output, type Format, type Output } from "./render.ts";

export const commonArgs = {
  gateway: { type: "string", alias: "g", description: "Gateway URL or saved name", valueHint: "url|name" },
  mode: { type: "enum", alias: "m", options: ["gateway", "native"], default: "gateway", description: "Deployment mode" },
  service: { type: "string", alias: "s", description: "Service URL (native mode)", valueHint: "url" },
  "agent-id": { type: "string", description: "Override the agent identity (a URI)", valueHint: "uri" },
  key: { type: "string", description: "Path to an ES256 PEM private key", valueHint: "path" },
  format: { type: "enum", options: ["text", "json"], default: "text", description: "Output format" },
} as const satisfies ArgsDef;

/** `--show-secrets`, for commands that print client secrets or tokens. */
export const showSecretsArg = {
  "show-secrets": { type: "boolean", description: "Print secrets unmasked", default: false },
} as const satisfies ArgsDef;

export interface CommonOptions {
  gateway?: string;
  mode: Mode;
  service?: string;
  agentId?: string;
  key?: string;
  format: Format;
}

/** citty's parsed common flags → options. */
export function commonOptions(args: Record<string, unknown>): CommonOptions {
  const o: CommonOptions = {
    mode: args.mode === "native" ? "native" : "gateway",
    format: args.format === "json" ? "json" : "text",
  };
  const str = (k: string) => (typeof args[k] === "string" && args[k] !== "" ? (args[k] as string) : undefined);
  const gateway = str("gateway");
  const service = str("service");
  const agentId = str("agent-id");
  const key = str("key");
  if (gateway !== undefined) o.gateway = gateway;
  if (service !== undefined) o.service = service;
  if (agentId !== undefined) o.agentId = agentId;
  if (key !== undefined) o.key = key;
  return o;
}

/** Every value of a repeatable flag in raw argv (`--provider a --provider=b -p c`); citty keeps only the last. */
export function collect(rawArgs: readonly string[], names: readonly string[]): string[] {
  const values: string[] = [];
  for (let i = 0; i < rawArgs.length; i++) {
    const a = rawArgs[i] as string;
    if (a === "--") break;
    for (const n of names) {
      const flag = n.length === 1 ? `-${n}` : `--${n}`;
      if (a === flag) {
        const v = rawArgs[i + 1];
        if (v === undefined) throw usageError(`${flag} needs a value`);
        values.push(v);
        i++;
      } else if (a.startsWith(`${flag}=`)) values.push(a.slice(flag.length + 1));
    }
  }
  return values;
}

/** The one value of a flag that takes a single id (`authorize`/`token --provider`): several are a usage error. */
export function single(rawArgs: readonly string[], name: string, command: string): string | undefined {
  const values = splitList(collect(rawArgs, [name]));
  if (values.length > 1) throw usageError(`${command} takes one --${name}, got ${values.join(", ")}: run it once per ${name}`);
  return values[0];
}

/** "a,b c" → ["a","b","c"]: scopes and providers may be comma- or space-separated. */
export function splitList(values: readonly string[]): string[] {
  return [...new Set(values.flatMap((v) => v.split(/[,\s]+/)).filter(Boolean))];
}

export interface Context {
  opts: CommonOptions;
  deps: Deps;
  home: Home;
  config: ConfigFile;
  out: Output;
  http: HttpOptions;
  /** The gateway (or native service) base URL; throws exit 3 / 2 when none is configured. */
  base(): string;
  /** The agent identity; creates the default key on first use. */
  identity(): Promise<Identity>;
}

/** Builds a command's context from its options and the current deps. */
export async function context(opts: CommonOptions, deps: Deps = getDeps()): Promise<Context> {
  const home = homePaths(deps.env);
  const config = await readConfig(home);
  let identity: Promise<Identity> | undefined;

  return {
    opts,
    deps,
    home,
    config,
    out: await output(opts.format, deps),
    http: { fetch: deps.fetch, timeoutMs: timeoutFromEnv(deps.env) },
    base: () => resolveBase(opts, config),
    identity: () =>
      (identity ??= loadIdentity(opts, config, home).then((id) => {
        for (const w of id.warnings) deps.stderr(`ath: warning: ${w}\n`);
        return id;
      })),
  };
}
