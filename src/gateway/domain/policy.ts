/**
 * Policy rules with conditions (DESIGN §16, §18), after scope_rules and approval_rules: the first rule — the
 * provider's, then the agent's own — whose `match` and `when` hold decides: `allow` forwards, `deny` refuses (403
 * POLICY_DENIED), `approve` asks a person (§15). None → allowed. An `allow` rule's match is an allow-list (both forms
 * of an HTTP canonical request); `deny`/`approve` a deny-list (either form). A `when` that fails to evaluate counts as
 * holding for `deny`/`approve` and as not holding for `allow` (fail closed). The condition's input is built only when
 * a matching rule has a `when`, and the body read only when such a rule reads it.
 *
 * One body model (issue 35): what a `when` sees as `request.body` is the body read as strict JSON
 * (rules/strict-json.ts) — or nothing at all when there is no body. A body ath cannot read that way (compressed, a
 * form, multipart, not UTF-8, trailing data, a duplicate key, a content type that is not JSON…) is not "a body without
 * that field": a rule that reads it cannot be evaluated, so it holds if it denies or asks, and does not allow. The same
 * for `mcp.arguments` that are not a JSON object.
 */
import { AthError, type PolicyRule, type ProviderConfig } from "../../protocol/index.ts";
import type { AgentRecord, TokenRecord } from "../../store/types.ts";
import type { RuleMode } from "../rules/canonical-request.ts";
import { compileCondition, conditionKind, type ConditionInput, type McpConditionInput } from "../rules/conditions.ts";
import type { McpCall } from "../rules/mcp-call.ts";
import { readStrictJson, UnreadableJson } from "../rules/strict-json.ts";

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

/** Whether a rule's `match` list holds for the call: `both` forms for allow-lists, `either` for deny-lists. */
export type Matches = (match: readonly string[], mode: RuleMode) => boolean;

/**
 * The deciding rule, or null when no rule holds. `input(readsBody)` builds what a condition sees — called at most
 * when a matching rule has a `when`; with `readsBody` it must carry the body (or throw: the rule cannot be evaluated).
 */
export async function decidePolicy(
  config: ProviderConfig,
  agent: AgentRecord | null,
  matches: Matches,
  input: (readsBody: boolean) => Promise<ConditionInput | McpConditionInput>,
): Promise<PolicyHit | null> {
  for (const [from, rules] of [["provider", config.policy], ["agent", agent?.policy]] as const) {
    if (!rules) continue;
    for (let index = 0; index < rules.length; index++) {
      const rule = rules[index]!;
      if (!matches(rule.match, rule.action === "allow" ? "both" : "either")) continue;
      if (rule.when === undefined) return { rule, from, index };
      const condition = compileCondition(rule.when, conditionKind(rule.match));
      try {
        if (condition.evaluate(await input(condition.readsBody || condition.readsArguments))) return { rule, from, index };
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

/** What an HTTP door knows of one request when a condition asks. */
export interface HttpConditionSource {
  token: TokenRecord;
  method: string;
  literal: string;
  literalSegments: readonly string[];
  query: string;
  /** The headers to be forwarded (lower-case names). */
  headers: Readonly<Record<string, string>>;
  /** The request's body: its declared length and type, and a reader of its bytes (once; bounded). */
  body: RequestBody;
}

/** A request's body as the decision reads it: at most once, only when a rule needs it. */
export interface RequestBody {
  /** Content-Length as sent, or null. */
  contentLength: string | null;
  contentType: string | null;
  contentEncoding: string | null;
  /** Reads the body whole, once, up to `limit` (else `tooLarge`); the same bytes on a later call. */
  read(limit: number, tooLarge: () => AthError): Promise<Uint8Array>;
  /** The body if it was read already. */
  whole(): Uint8Array | null;
}

/**
 * What an HTTP rule's condition sees (DESIGN §16), built once per request and only when a matching rule has a `when`;
 * the body read (up to `--max-policy-body`, else 413) and read strictly once, only when such a rule reads it.
 */
export function httpConditionInput(c: HttpConditionSource, o: { now: number; maxPolicyBody: number }): (readsBody: boolean) => Promise<ConditionInput> {
  let input: ConditionInput | undefined;
  let body: { value: unknown } | { unreadable: string } | undefined;
  return async (readsBody) => {
    input ??= {
      request: {
        method: c.method,
        path: c.literal,
        segments: c.literalSegments,
        query: queryMap(c.query),
        headers: conditionHeaders(c.headers),
        body: null,
        body_size: BigInt(Number(c.body.contentLength ?? 0) || 0),
      },
      agent: { id: c.token.agent_id, client_id: c.token.client_id },
      user: { id: c.token.user_id },
      provider: { id: c.token.provider_id },
      token: { scopes: c.token.scopes },
      now: new Date(o.now),
    };
    if (readsBody && body === undefined) {
      const limit = o.maxPolicyBody;
      const bytes = await c.body.read(limit, () =>
        new AthError("PAYLOAD_TOO_LARGE", `A request whose body a policy condition reads may carry at most ${limit} bytes (--max-policy-body)`, { limit }),
      );
      body = strictBody(bytes, c.body);
      if ("value" in body) input.request.body = body.value;
    }
    const read = c.body.whole();
    if (read !== null) input.request.body_size = BigInt(read.byteLength);
    if (readsBody && body !== undefined && "unreadable" in body) throw new UnreadableJson(body.unreadable);
    return input;
  };
}

/** What an MCP rule's condition sees (DESIGN §18): the call instead of the HTTP request. */
export function mcpConditionInput(token: TokenRecord, call: McpCall, now: number): (readsArguments: boolean) => Promise<McpConditionInput> {
  return async (readsArguments) => {
    const args = call.arguments;
    // Arguments that are not an object hold no fields to find: a rule about them cannot be evaluated (fail closed).
    if (readsArguments && args !== undefined && args !== null && (typeof args !== "object" || Array.isArray(args))) {
      throw new UnreadableJson(`the call's arguments are ${Array.isArray(args) ? "an array" : `a ${typeof args}`}, not an object`);
    }
    return {
      mcp: { method: call.method, tool: call.name, arguments: args ?? {} },
      agent: { id: token.agent_id, client_id: token.client_id },
      user: { id: token.user_id },
      provider: { id: token.provider_id },
      token: { scopes: token.scopes },
      now: new Date(now),
    };
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
 * The headers as `request.headers` sees them — one header model (issue 35): lower-case names with `_` read as `-` (some
 * servers, and every CGI-style gateway, take `X_Mode` for `X-Mode`); a field sent on several lines is one value, its
 * lines joined by ", " (RFC 9110 §5.3) — which is also exactly what the upstream receives. Two names that are one name
 * this way are refused before any rule runs (proxy/headers.ts), so no value hides behind the other spelling.
 */
export function conditionHeaders(forwarded: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in forwarded) out[name.includes("_") ? name.replaceAll("_", "-") : name] = forwarded[name]!;
  return out;
}

// internal

/** The body as a rule may read it: strict JSON of a JSON content type, uncompressed — or why it cannot be read. */
function strictBody(bytes: Uint8Array, b: RequestBody): { value: unknown } | { unreadable: string } {
  if (bytes.byteLength === 0) return { value: null };
  const encoding = b.contentEncoding?.trim().toLowerCase();
  if (encoding && encoding !== "identity") return { unreadable: `the body is sent with Content-Encoding: ${encoding.slice(0, 40)}` };
  if (!isJsonType(b.contentType)) return { unreadable: `the body's Content-Type (${(b.contentType ?? "none").slice(0, 60)}) is not JSON` };
  try {
    return { value: readStrictJson(bytes) };
  } catch (err) {
    if (err instanceof UnreadableJson) return { unreadable: err.message };
    throw err;
  }
}

/** `application/json` or `…+json`, UTF-8 if a charset is named (RFC 8259 §8.1: JSON is UTF-8). */
function isJsonType(contentType: string | null): boolean {
  if (contentType === null) return false;
  const [type, ...params] = contentType.toLowerCase().split(";");
  const t = type!.trim();
  if (t !== "application/json" && !(t.startsWith("application/") && t.endsWith("+json"))) return false;
  for (const p of params) {
    const [name, value] = p.split("=").map((x) => x?.trim());
    if (name === "charset" && value?.replace(/"/g, "") !== "utf-8") return false;
  }
  return true;
}
