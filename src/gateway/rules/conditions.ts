/**
 * The `when` conditions of policy rules (DESIGN §16): CEL (https://cel.dev) over the canonical request, the agent, the
 * user, the provider, the token's scopes and the time. An expression is compiled (parsed and type-checked against
 * the declared variables) once, when the configuration is read — a syntax error, an unknown variable or a non-boolean
 * result fails the start or the admin call, naming the rule — and then evaluated per request from the cache.
 *
 * The library is @marcbachmann/cel-js (zero dependencies, 284 KB): a body predicate evaluates in ~3 µs here where
 * @bufbuild/cel took ~11 µs and ~0.5 s to import (docs/policy.md has the measurement).
 */
import { Environment } from "@marcbachmann/cel-js";
import { AthError, type PolicyRule } from "../../protocol/index.ts";

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

export interface Condition {
  source: string;
  /** Whether the expression may read `request.body` (then the body is read and parsed for it; else never). */
  readsBody: boolean;
  /** true / false; throws when evaluation fails (the caller decides what a failure means: fail closed). */
  evaluate(input: ConditionInput): boolean;
}

/** Compiles `source`, from the cache when it was compiled before; throws ConditionError naming what is wrong. */
export function compileCondition(source: string): Condition {
  let c = cache.get(source);
  if (c === undefined) {
    const checked = env().check(source);
    if (!checked.valid) throw new ConditionError(firstLine(checked.error?.message ?? "invalid expression"));
    if (checked.type !== "bool" && checked.type !== "dyn") throw new ConditionError(`the expression gives ${checked.type}, not a bool`);
    const program = env().parse(source);
    c = {
      source,
      // conservative: any mention of `body` counts (an index expression may name it as a string)
      readsBody: /body/.test(source.replace(/body_size/g, "")),
      evaluate(input) {
        const value = program(input as unknown as Record<string, unknown>);
        if (typeof value !== "boolean") throw new ConditionError(`the expression gave ${typeof value}, not a bool`);
        return value;
      },
    };
    if (cache.size >= 10_000) cache.clear();
    cache.set(source, c);
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
      compileCondition(rule.when);
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

let environment: Environment | undefined;

function env(): Environment {
  environment ??= new Environment({
    unlistedVariablesAreDyn: false,
    // bounds on what one expression may be (parse time): a policy is short
    limits: { maxAstNodes: 2000, maxDepth: 32, maxListElements: 1000, maxMapEntries: 1000, maxCallArguments: 32 },
  })
    .registerVariable("request", "map")
    .registerVariable("agent", "map")
    .registerVariable("user", "map")
    .registerVariable("provider", "map")
    .registerVariable("token", "map")
    .registerVariable("now", "google.protobuf.Timestamp");
  return environment;
}

const cache = new Map<string, Condition>();

function firstLine(message: string): string {
  return message.split("\n")[0]!.trim();
}
