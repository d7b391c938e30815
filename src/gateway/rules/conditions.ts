/**
 * The `when` conditions of policy rules (DESIGN §16): CEL (https://cel.dev) over the canonical request, the agent, the
 * user, the provider, the token's scopes and the time. An expression is compiled (parsed and type-checked against
 * the declared variables) once, when the configuration is read — a syntax error, an unknown variable or a non-boolean
 * result fails the start or the admin call, naming the rule — and then evaluated per request from the cache.
 *
 * A rule whose `match` is all `MCP …` entries (DESIGN §18) is about MCP calls: its `when` sees `mcp` (`method`, `tool`,
 * `arguments`) instead of `request`; a rule mixing both kinds may name both, and the one a call lacks fails its
 * evaluation (fail closed).
 *
 * Beyond CEL's own checks, a `when` may name only fields its variables have, and its `matches` patterns must be RE2
 * (rules/condition-check.ts); `matches` runs on the linear matcher (rules/re2/), not the library's backtracking
 * RegExp; and an evaluation's reads of large request data and its regex work are bounded (rules/condition-meter.ts,
 * re2/match.ts) — past either bound the evaluation fails, which fails closed.
 *
 * The library is @marcbachmann/cel-js (zero dependencies, 284 KB): a body predicate evaluates in ~3 µs here where
 * @bufbuild/cel took ~11 µs and ~0.5 s to import (docs/policy.md has the measurement).
 */
import { Environment } from "@marcbachmann/cel-js";
import { AthError, type PolicyRule } from "../../protocol/index.ts";
import { checkConditionTree, ConditionCheckError, RE2_MATCHES } from "./condition-check.ts";
import { metered, withReadBudget } from "./condition-meter.ts";
import { compileRe2, withMatchBudget, type Re2 } from "./re2/match.ts";

/** What a `when` expression sees. Numbers from JSON bodies are doubles; `body_size` is an int. */
export interface ConditionInput {
  request: {
    method: string;
    path: string;
    segments: readonly string[];
    query: Record<string, string[]>;
    headers: Record<string, string>;
    body: unknown;
    body_size: bigint;
  };
  agent: { id: string; client_id: string };
  user: { id: string };
  provider: { id: string };
  token: { scopes: readonly string[] };
  now: Date;
}

/** What a `when` of an MCP rule sees (DESIGN §18): the JSON-RPC call instead of the HTTP request. */
export interface McpConditionInput {
  mcp: {
    method: string;
    /** The tool (tools/call), prompt (prompts/get) or resource URI (resources/read…); null for other methods. */
    tool: string | null;
    /** The call's `arguments` ({} when it sent none). */
    arguments: unknown;
  };
  agent: { id: string; client_id: string };
  user: { id: string };
  provider: { id: string };
  token: { scopes: readonly string[] };
  now: Date;
}

/** Which variables a rule's `when` may name: `request` (HTTP rules), `mcp` (MCP rules), or both (a rule mixing them). */
export type ConditionKind = "http" | "mcp" | "both";

/** The kind of a rule by its `match`: all `MCP …` → mcp, none → http, some → both. */
export function conditionKind(match: readonly string[]): ConditionKind {
  const mcp = match.filter((m) => m.startsWith("MCP ")).length;
  return mcp === 0 ? "http" : mcp === match.length ? "mcp" : "both";
}

export interface Condition {
  source: string;
  /** Whether the expression may read `mcp.arguments` (conservative: any mention of `arguments`). */
  readsArguments: boolean;
  /** Whether the expression may read `request.body` (then the body is read and parsed for it; else never). */
  readsBody: boolean;
  /** true / false; throws when evaluation fails (the caller decides what a failure means: fail closed). */
  evaluate(input: ConditionInput | McpConditionInput): boolean;
}

/** Compiles `source`, from the cache when it was compiled before; throws ConditionError naming what is wrong. */
export function compileCondition(source: string, kind: ConditionKind = "http"): Condition {
  const key = `${kind}\u0000${source}`;
  let c = cache.get(key);
  if (c === undefined) {
    const environment = env(kind);
    // CEL's own check first, on the expression as written: its messages name what the person wrote
    const checked = environment.check(source);
    if (!checked.valid) throw new ConditionError(firstLine(checked.error?.message ?? "invalid expression"));
    if (checked.type !== "bool" && checked.type !== "dyn") throw new ConditionError(`the expression gives ${checked.type}, not a bool`);
    const program = environment.parse(source);
    try {
      checkConditionTree(program.ast, kind === "http" ? HTTP_VARIABLES : kind === "mcp" ? MCP_VARIABLES : [...HTTP_VARIABLES, "mcp"]);
    } catch (err) {
      if (err instanceof ConditionCheckError) throw new ConditionError(err.message);
      throw err;
    }
    const bound = program.check(); // binds `matches` (renamed) to the linear matcher
    if (!bound.valid) throw new ConditionError(firstLine(bound.error?.message ?? "invalid expression"));
    c = {
      source,
      readsArguments: /arguments/.test(source),
      // conservative: any mention of `body` counts (an index expression may name it as a string)
      readsBody: /body/.test(source.replace(/body_size/g, "")),
      evaluate(input) {
        const seen = view(input);
        const value = withReadBudget(() => withMatchBudget(() => program(seen as unknown as Record<string, unknown>)));
        if (typeof value !== "boolean") throw new ConditionError(`the expression gave ${typeof value}, not a bool`);
        return value;
      },
    };
    if (cache.size >= 10_000) cache.clear();
    cache.set(key, c);
  }
  return c;
}

export class ConditionError extends Error {
  override readonly name = "ConditionError";
}

/**
 * Every `when` of `rules` that does not compile, as `<path>.<i>.when: <message>` lines (empty when all do): what the
 * start and the admin API report.
 */
export function policyProblems(rules: readonly PolicyRule[] | undefined, path: string): string[] {
  const problems: string[] = [];
  (rules ?? []).forEach((rule, i) => {
    if (rule.when === undefined) return;
    try {
      compileCondition(rule.when, conditionKind(rule.match));
    } catch (err) {
      problems.push(`${path}.${i}.when: ${err instanceof Error ? err.message : String(err)}`);
    }
  });
  return problems;
}

/** 400 INVALID_REQUEST naming the first rule whose `when` does not compile (the admin API's check). */
export function requireConditions(rules: readonly PolicyRule[] | undefined, path: string): void {
  const problems = policyProblems(rules, path);
  if (problems.length) {
    throw new AthError("INVALID_REQUEST", `Invalid request: ${problems[0]}`, { field: problems[0]!.slice(0, problems[0]!.indexOf(":")), issues: problems });
  }
}

// internal

const environments = new Map<ConditionKind, Environment>();

function env(kind: ConditionKind): Environment {
  let environment = environments.get(kind);
  if (environment) return environment;
  environment = new Environment({
    unlistedVariablesAreDyn: false,
    // bounds on what one expression may be (parse time): a policy is short
    limits: { maxAstNodes: 2000, maxDepth: 32, maxListElements: 1000, maxMapEntries: 1000, maxCallArguments: 32 },
  })
    .registerVariable("agent", "map")
    .registerVariable("user", "map")
    .registerVariable("provider", "map")
    .registerVariable("token", "map")
    .registerVariable("now", "google.protobuf.Timestamp")
    .registerFunction(`string.${RE2_MATCHES}(string): bool`, (text: string, pattern: string) => re2(pattern).test(text));
  if (kind !== "mcp") environment.registerVariable("request", "map");
  if (kind !== "http") environment.registerVariable("mcp", "map");
  environments.set(kind, environment);
  return environment;
}

const cache = new Map<string, Condition>();

const HTTP_VARIABLES = ["request", "agent", "user", "provider", "token"];
const MCP_VARIABLES = ["mcp", "agent", "user", "provider", "token"];

/** Patterns compiled for `matches`: the literal ones at configuration, computed ones as they come (bounded). */
const patterns = new Map<string, Re2>();

function re2(pattern: string): Re2 {
  let r = patterns.get(pattern);
  if (r === undefined) {
    r = compileRe2(pattern);
    if (patterns.size >= 1_000) patterns.clear();
    patterns.set(pattern, r);
  }
  return r;
}

/** What the expression is given: the caller-shaped values behind counting views when they are large. */
function view(input: ConditionInput | McpConditionInput): ConditionInput | McpConditionInput {
  if ("request" in input) {
    const r = input.request;
    return { ...input, request: { ...r, body: metered(r.body), query: metered(r.query), headers: metered(r.headers) } };
  }
  return { ...input, mcp: { ...input.mcp, arguments: metered(input.mcp.arguments) } };
}

function firstLine(message: string): string {
  return message.split("\n")[0]!.trim();
}
