/**
 * What every command shares: its common options (from the global flags), the values of repeatable and single
 * flags, and the context it runs in — the agent (home, config, identity, HTTP, clock) its flows act as, the
 * target gateway and the output.
 */
import { loadAgent, type Agent, type Target } from "../../agent/flows/agent.ts";
import type { Mode } from "../../agent/target.ts";
import { getDeps, type Deps } from "./deps.ts";
import { usageError } from "./errors.ts";
import { invocation } from "./flags.ts";
import { output, type Format, type Output } from "./render.ts";

export interface CommonOptions {
  gateway?: string;
  mode: Mode;
  service?: string;
  agentId?: string;
  key?: string;
  format: Format;
}

/** The invocation's common flags → options (`data` is what the root hands a command's run). */
export function commonOptions(data: unknown): CommonOptions {
  const { args, format } = invocation(data);
  const o: CommonOptions = { mode: args.mode === "native" ? "native" : "gateway", format };
  const gateway = text(args.gateway);
  const service = text(args.service);
  const agentId = text(args["agent-id"]);
  const key = text(args.key);
  if (gateway !== undefined) o.gateway = gateway;
  if (service !== undefined) o.service = service;
  if (agentId !== undefined) o.agentId = agentId;
  if (key !== undefined) o.key = key;
  return o;
}

/** A flag's string value, or undefined when it is missing or empty. */
export function text(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** Every value of a repeatable flag, split into a list: "a,b c" → ["a","b","c"] (scopes and providers). */
export function list(data: unknown, name: string): string[] {
  return splitList(invocation(data).values(name));
}

/** The one value of a flag that takes a single id (`authorize`/`token --provider`): several are a usage error. */
export function single(data: unknown, name: string, command: string): string | undefined {
  const values = list(data, name);
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
  out: Output;
  agent: Agent;
  /** The gateway (or native service); throws exit 3 / 2 when none is configured. */
  target(): Target;
}

/** Builds a command's context from its options and the current deps; identity warnings go to stderr. */
export async function context(opts: CommonOptions, deps: Deps = getDeps()): Promise<Context> {
  const agent = await loadAgent({
    env: deps.env,
    fetch: deps.fetch,
    now: deps.now,
    ...(opts.key === undefined ? {} : { key: opts.key }),
    ...(opts.agentId === undefined ? {} : { agentId: opts.agentId }),
    warn: (w) => deps.stderr(`ath: warning: ${w}\n`),
  });
  return { opts, deps, out: await output(opts.format, deps), agent, target: () => agent.target(opts) };
}
