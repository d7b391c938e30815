/**
 * Policy rules with conditions (DESIGN §16), after scope_rules and approval_rules: the first rule — the provider's,
 * then the agent's own — whose `match` and `when` hold decides: `allow` forwards, `deny` refuses (403 POLICY_DENIED),
 * `approve` asks a person (§15). None → allowed. An `allow` rule's match is an allow-list (both forms of the canonical
 * request); `deny`/`approve` a deny-list (either form). A `when` that fails to evaluate counts as holding for
 * `deny`/`approve` and as not holding for `allow` (fail closed). The condition's input is built only when a matching
 * rule has a `when`, and the body read and parsed only when such a rule reads it.
 */
import { AthError, type PolicyRule, type ProviderConfig } from "../../protocol/index.ts";
import type { AgentRecord, TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { anyRuleMatches, type CanonicalRequest } from "../rules/canonical-request.ts";
import { compileCondition, conditionKind, type ConditionInput } from "../rules/conditions.ts";

/** `--max-policy-body` default: a body a `when` reads is parsed up to this size; larger → 413. */
export const MAX_POLICY_BODY_DEFAULT = 1024 * 1024;

export interface PolicyHit {
  rule: PolicyRule;
  /** Where the rule is written: `provider` or `agent`, and its index there (audit and error details). */
  from: "provider" | "agent";
  index: number;
  /** The condition could not be evaluated (counted as holding: the rule is a deny or approve). */
  failed?: string;
}

/**
 * The deciding rule, or null when no rule holds. `input(readsBody)` builds what a condition sees — called at most
 * when a matching rule has a `when`; with `readsBody` it must carry the parsed body.
 */
export async function decidePolicy(
  config: ProviderConfig,
  agent: AgentRecord | null,
  r: CanonicalRequest,
  input: (readsBody: boolean) => Promise<ConditionInput>,
): Promise<PolicyHit | null> {
  for (const [from, rules] of [["provider", config.policy], ["agent", agent?.policy]] as const) {
    if (!rules) continue;
    for (let index = 0; index < rules.length; index++) {
      const rule = rules[index]!;
      if (!anyRuleMatches(rule.match, r, rule.action === "allow" ? "both" : "either")) continue;
      if (rule.when === undefined) return { rule, from, index };
      const condition = compileCondition(rule.when, conditionKind(rule.match));
      try {
        if (condition.evaluate(await input(condition.readsBody))) return { rule, from, index };
      } catch (err) {
        if (err instanceof AthError) throw err; // 413: the body is over --max-policy-body
        if (rule.action !== "allow") return { rule, from, index, failed: err instanceof Error ? err.message.split("\n")[0] : String(err) };
      }
    }
  }
  return null;
}

/** 403 POLICY_DENIED for a deny rule that held. */
export function policyDenied(hit: PolicyHit): AthError {
  return new AthError("POLICY_DENIED", hit.rule.reason ?? "A policy rule of this gateway refuses this request", {
    reason: hit.rule.reason ?? null,
    rule: { from: hit.from, index: hit.index },
    ...(hit.failed ? { evaluation_error: hit.failed } : {}),
  });
}

/** What the proxy knows of one request when a condition asks (conditionInput). */
export interface ProxiedCall {
  token: TokenRecord;
  request: CanonicalRequest;
  /** The headers to be forwarded (lower-case names). */
  headers: Readonly<Record<string, string>>;
  contentLength: string | null;
  /** Reads the body whole, once, up to `limit` (else `tooLarge`); the same bytes on a later call. */
  readWhole(limit: number, tooLarge: () => AthError): Promise<Uint8Array>;
  /** The body if it was read already. */
  whole(): Uint8Array | null;
}

/**
 * What a policy condition sees (DESIGN §16), built once per request and only when a matching rule has a `when`; the
 * body read (up to `--max-policy-body`, else 413) and parsed once, only when such a rule reads it.
 */
export function conditionInput(gw: Gateway, c: ProxiedCall): (readsBody: boolean) => Promise<ConditionInput> {
  let input: ConditionInput | undefined;
  let parsed: { value: unknown } | undefined;
  return async (readsBody) => {
    input ??= {
      request: {
        method: c.request.method,
        path: c.request.literal,
        segments: c.request.literalSegments,
        query: queryMap(c.request.query),
        headers: { ...c.headers },
        body: null,
        body_size: BigInt(Number(c.contentLength ?? 0) || 0),
      },
      agent: { id: c.token.agent_id, client_id: c.token.client_id },
      user: { id: c.token.user_id },
      provider: { id: c.token.provider_id },
      token: { scopes: c.token.scopes },
      now: new Date(gw.now()),
    };
    if (readsBody && parsed === undefined) {
      const limit = Math.min(gw.opts.maxPolicyBody ?? MAX_POLICY_BODY_DEFAULT, gw.opts.maxProxyBody ?? Infinity);
      const bytes = await c.readWhole(limit, () =>
        new AthError("PAYLOAD_TOO_LARGE", `A request whose body a policy condition reads may carry at most ${limit} bytes (--max-policy-body)`, { limit }),
      );
      parsed = { value: parsedBody(bytes) };
      input.request.body = parsed.value;
    }
    const read = c.whole();
    if (read !== null) input.request.body_size = BigInt(read.byteLength);
    return input;
  };
}

/** The request's query as `request.query` sees it: decoded names to the list of their decoded values, in order. */
export function queryMap(query: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (query === "") return out;
  for (const [name, value] of new URLSearchParams(query)) (out[name] ??= []).push(value);
  return out;
}

/**
 * A body as `request.body` sees it: parsed JSON, or null (no body, not UTF-8, not JSON). A JSON body with a duplicate
 * key throws: the service may read the other value than the condition would, so the condition cannot be evaluated
 * (fail closed).
 */
export function parsedBody(bytes: Uint8Array): unknown {
  if (bytes.byteLength === 0) return null;
  let text: string;
  let value: unknown;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    value = JSON.parse(text);
  } catch {
    return null;
  }
  const dup = duplicateKey(text);
  if (dup !== null) throw new Error(`duplicate key "${dup}" in the body: the service may read either value`);
  return value;
}

// internal

/** The first key repeated within one object of a valid JSON text, or null: one pass, no recursion. */
function duplicateKey(text: string): string | null {
  const stack: { keys: Set<string> | null; expectKey: boolean }[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "{") stack.push({ keys: new Set(), expectKey: true });
    else if (c === "[") stack.push({ keys: null, expectKey: false });
    else if (c === "}" || c === "]") stack.pop();
    else if (c === ",") {
      const top = stack[stack.length - 1];
      if (top?.keys) top.expectKey = true;
    } else if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      const raw = text.slice(i, end + 1);
      i = end;
      const top = stack[stack.length - 1];
      if (top?.keys && top.expectKey) {
        const key = raw.includes("\\") ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        if (top.keys.has(key)) return key;
        top.keys.add(key);
        top.expectKey = false;
      }
    }
  }
  return null;
}
