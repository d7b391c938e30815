/**
 * The policy hot path (DESIGN §16), in process: what the proxy adds per request — the canonical request (computed
 * once), the scope_rules and approval_rules matched form to form, a policy whose rules do not match the request (no
 * condition evaluated: the cost of "no matching `when`-rule"), and a compiled `when` rule over the body (the
 * condition's input built, the body parsed once, the expression evaluated). Median µs per request over several
 * rounds; prints the machine's load average, since the numbers move with it.
 *
 * Usage: bun scripts/bench/policy.ts [--n 100000]
 */
import { loadavg } from "node:os";
import { decidePolicy, queryMap } from "../../src/gateway/domain/policy.ts";
import { readStrictJson } from "../../src/gateway/rules/strict-json.ts";
import { allowedByScopeRules } from "../../src/gateway/rules/scope-rules.ts";
import { anyRuleMatches, canonicalRequest, type CanonicalRequest } from "../../src/gateway/rules/canonical-request.ts";
import { compileCondition, type ConditionInput } from "../../src/gateway/rules/conditions.ts";
import { ProviderConfig } from "../../src/protocol/index.ts";

const args = process.argv.slice(2);
const N = Number(args[args.indexOf("--n") + 1] ?? 0) || 100_000;

const base = {
  display_name: "Bench",
  available_scopes: ["mail:read", "mail:send"],
  authorize_endpoint: "https://auth.example/authorize",
  token_endpoint: "https://auth.example/token",
  api_base_url: "https://api.example",
  client_id: "c",
  client_secret: "s",
  scope_rules: { "mail:read": ["GET /v1/messages", "GET /v1/messages/**"], "mail:send": ["POST /v1/messages", "POST /v1/messages/send"] },
  approval_rules: [{ match: ["DELETE /v1/messages/*"] }],
};
const WHEN = 'request.body.to.endsWith("@evil.example") || request.body.amount > 1000.0';
const config = ProviderConfig.parse({ ...base, policy: [{ match: ["POST /v1/messages/send"], when: WHEN, action: "deny", reason: "bench" }] });
const body = new TextEncoder().encode(JSON.stringify({ to: "boss@example.com", subject: "Quarterly report", amount: 250, items: [{ sku: "a" }, { sku: "b" }] }));
const headers = { "content-type": "application/json", "user-agent": "bench" };

/** The matcher the call decision gives decidePolicy for an HTTP request (domain/call.ts). */
function matchesOf(c: CanonicalRequest) {
  return (match: readonly string[], mode: "both" | "either") => anyRuleMatches(match, c, mode);
}

function input(c: CanonicalRequest, readsBody: boolean): ConditionInput {
  return {
    request: { method: c.method, path: c.literal, segments: c.literalSegments, query: queryMap(c.query), headers, body: readsBody ? readStrictJson(body) : null, body_size: BigInt(body.byteLength) },
    agent: { id: "did:key:zbench", client_id: "ath_bench" },
    user: { id: "u1" },
    provider: { id: "bench" },
    token: { scopes: ["mail:read", "mail:send"] },
    now: new Date(),
  };
}

async function time(label: string, fn: () => unknown | Promise<unknown>): Promise<void> {
  const rounds: number[] = [];
  for (let round = 0; round < 5; round++) {
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await fn();
    rounds.push(((performance.now() - t0) * 1000) / N);
  }
  rounds.sort((a, b) => a - b);
  console.log(`${label.padEnd(70)} ${rounds[2]!.toFixed(2)} µs`);
}

console.log(`load average ${loadavg().map((l) => l.toFixed(2)).join(" ")} · ${N} requests a round, median of 5 rounds`);
const condition = compileCondition(WHEN);
const seen = input(canonicalRequest("POST", "v1/messages/send", ""), true);
await time("canonical request (method, literal + loose path, query)", () => canonicalRequest("POST", "v1/messages/send", "?a=1&b=2"));
await time("canonical request + scope_rules + approval_rules", () => {
  const c = canonicalRequest("POST", "v1/messages/send", "?a=1&b=2");
  allowedByScopeRules(config.scope_rules!, ["mail:send"], c);
  anyRuleMatches(config.approval_rules![0]!.match, c, "either");
});
await time("policy with no rule matching the request (no condition evaluated)", () =>
  decidePolicy(config, null, matchesOf(canonicalRequest("GET", "v1/messages/42", "")), async () => {
    throw new Error("never built");
  }),
);
await time("compiled `when` rule: evaluation alone (body already parsed)", () => condition.evaluate(seen));
await time("compiled `when` rule: input built + body parsed + evaluated", () => {
  const c = canonicalRequest("POST", "v1/messages/send", "");
  return decidePolicy(config, null, matchesOf(c), async (readsBody) => input(c, readsBody));
});
