/**
 * Delegation to sub-agents in process (DESIGN §23, RFC 8693): an agent trades its own token for a registered
 * sub-agent's, never wider — scopes ⊆ its own, an expiry no later, a budget share carved out of its remaining count,
 * at most `--max-delegation-depth` exchanges from the root — and revoking any ancestor refuses every descendant at
 * once. A property test walks random chains (scope subsets, budgets, depths, calls) and checks every token against
 * its ancestors after each step.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { authorize, consent, exchange, registeredAgent } from "../../../helpers/agent.ts";
import { attest } from "../../../helpers/attestations.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { delegateOver, rootHeld, walkUntil, type Held, type Holder, type WalkWorld } from "../../../helpers/delegation-walk.ts";
import { ADMIN_TOKEN, BASE, INTROSPECTION_TOKEN, inProcessGateway, postJson, type InProcess } from "../../../helpers/in-process.ts";

const TOKEN_URL = `${BASE}/ath/token`;
const SCOPES = ["notes:read", "notes:write"];


let g: InProcess;
beforeEach(async () => {
  g = await inProcessGateway();
});
afterEach(() => g.close());

async function agentFor(): Promise<Holder> {
  const { agent, client } = await registeredAgent(g, { providers: [{ provider_id: "demo", scopes: SCOPES }] });
  return { agent, client };
}

/** A root token of `holder` for both scopes, through the person's consent. */
async function rootToken(holder: Holder): Promise<Held> {
  const a = await authorize(g, holder.agent, holder.client, { provider_id: "demo", scopes: SCOPES });
  const c = await consent(String(a.json.authorization_url), { browser: g.browser() });
  const t = await exchange(g, holder.agent, holder.client, { code: c.code!, ath_session_id: String(a.json.ath_session_id) });
  if (t.status !== 200) throw new Error(t.text);
  return rootHeld(holder, { access_token: String(t.json.access_token), effective_scopes: t.json.effective_scopes as string[], expires_in: Number(t.json.expires_in) });
}

const delegate = (parent: Held, to: Holder, o: { scope?: string; budget?: number | string; actor?: string } = {}) =>
  delegateOver({ baseUrl: BASE, fetch: (req) => g.fetch(req) }, parent, to, o);

const callWith = async (token: string, method = "GET") =>
  (await g.fetch(`/ath/proxy/demo/notes`, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, ...(method === "POST" ? { body: '{"text":"x"}' } : {}) })).status;

describe("delegation (DESIGN §23)", () => {
  test("a sub-agent's token: the narrower scope, no later expiry, the act chain at introspection, no refresh token; a wider scope is scope_widening", async () => {
    const [a, b, c] = [await agentFor(), await agentFor(), await agentFor()];
    const root = await rootToken(a);
    const r = await delegate(root, b, { scope: "notes:read" });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ token_type: "Bearer", effective_scopes: ["notes:read"], agent_id: b.agent.agentId, issued_token_type: "urn:ietf:params:oauth:token-type:access_token", act: { sub: a.agent.agentId, client_id: a.client.client_id }, budget: null });
    expect(r.json.refresh_token).toBeUndefined();
    expect(Number(r.json.expires_in)).toBeLessThanOrEqual(root.expiresIn);
    const bHeld: Held = { ...root, token: String(r.json.access_token), holder: b, scopes: ["notes:read"], depth: 1, parent: root };
    expect(await callWith(bHeld.token)).toBe(200);
    expect(await callWith(bHeld.token, "POST")).toBe(403);
    expectError(await delegate(bHeld, c, { scope: "notes:write" }), "INVALID_GRANT", { reason: "scope_widening", scopes: ["notes:write"] });
    const r2 = await delegate(bHeld, c);
    const intro = await postJson(g, "/ath/introspect", { token: r2.json.access_token }, { authorization: `Bearer ${INTROSPECTION_TOKEN}` });
    expect(intro.json).toMatchObject({ active: true, scope: "notes:read", agent_id: c.agent.agentId, act: { sub: b.agent.agentId, act: { sub: a.agent.agentId } } });
    const listed = await g.fetch(`/ath/admin/tokens?client_id=${c.client.client_id}`, { headers: { "x-ath-user-token": ADMIN_TOKEN } });
    const [row] = ((await listed.json()) as { tokens: { delegation?: { chain: { client_id: string }[] } }[] }).tokens;
    expect(row!.delegation!.chain.map((l) => l.client_id)).toEqual([b.client.client_id, a.client.client_id]);
    expect(JSON.stringify(row)).not.toContain("token_hash");
  });

  test("the 4th exchange from a root is delegation_too_deep; a subject token not the caller's, an actor token replayed or for an unregistered agent are refused", async () => {
    const holders = [await agentFor(), await agentFor(), await agentFor(), await agentFor(), await agentFor()];
    let held = await rootToken(holders[0]!);
    for (let depth = 1; depth <= 3; depth++) {
      const r = await delegate(held, holders[depth]!);
      expect(r.status).toBe(200);
      held = { ...held, token: String(r.json.access_token), holder: holders[depth]!, depth };
    }
    expectError(await delegate(held, holders[4]!), "INVALID_GRANT", { reason: "delegation_too_deep", max_depth: 3 });
    const root = await rootToken(holders[0]!);
    const stolen = { ...root, holder: holders[1]! };
    expectError(await delegate(stolen, holders[2]!), "INVALID_GRANT", { reason: "subject_token_invalid" });
    const actor = await attest(holders[2]!.agent, TOKEN_URL);
    expect((await delegate(root, holders[2]!, { actor })).status).toBe(200);
    expectError(await delegate(root, holders[2]!, { actor }), "INVALID_GRANT", { reason: "assertion_replayed" });
    const stranger = { ...holders[2]!, agent: { ...holders[2]!.agent, agentId: "did:key:zDnaeUnregistered" } };
    expectError(await delegate(root, stranger, { actor: await attest(stranger.agent, TOKEN_URL) }), "INVALID_GRANT", { reason: "assertion_invalid" });
    expectError(await delegate(root, holders[0]!), "INVALID_REQUEST", { field: "actor_token" });
  });

  test("property: random chains never hold a scope, budget or expiry their ancestors lack; shares never exceed the parent's remaining; calls never exceed a share; revoking the root refuses every descendant at once", async () => {
    const seed = Number(process.env.DELEGATION_SEED ?? Date.now() % 100_000);
    const pool = await Promise.all([0, 1, 2, 3, 4].map(() => agentFor()));
    const root = await rootToken(pool[0]!);
    const world: WalkWorld = {
      nets: [{ baseUrl: BASE, fetch: (req) => g.fetch(req) }],
      provider: "demo",
      scopes: SCOPES,
      request: (scopes) => (scopes.includes("notes:read") ? { method: "GET", path: "/notes" } : { method: "POST", path: "/notes", body: '{"text":"x"}' }),
    };
    const all = await walkUntil(world, root, pool.slice(1), { seed, steps: 80, tokens: 8, depth: 3 });
    // the walk did go deep and wide (else it proves little)
    expect(all.length).toBeGreaterThan(8);
    expect(Math.max(...all.map((h) => h.depth))).toBe(3);
    const revoke = await postJson(g, "/ath/revoke", { token: root.token, ...pool[0]!.client });
    expect(revoke.status).toBe(200);
    for (const h of all) {
      const res = await g.fetch(`/ath/proxy/demo/notes`, { headers: { authorization: `Bearer ${h.token}` } });
      expectError({ status: res.status, headers: res.headers, text: await res.text() }, "TOKEN_REVOKED");
    }
    expect(await g.audited("token.revoked")).toBe(all.length);
  });

  test("a budget share is carved out of the parent's remaining count: a child of a budgeted token must name its share, and may not take more than is left", async () => {
    const [a, b, c, d] = [await agentFor(), await agentFor(), await agentFor(), await agentFor()];
    const root = await rootToken(a);
    const r = await delegate(root, b, { budget: "3" });
    expect(r.json.budget).toBe(3);
    const bHeld: Held = { ...root, token: String(r.json.access_token), holder: b, budget: 3, depth: 1, parent: root };
    expectError(await delegate(bHeld, c), "INVALID_REQUEST", { reason: "budget_required" });
    expect((await delegate(bHeld, c, { budget: 2 })).status).toBe(200);
    expectError(await delegate(bHeld, d, { budget: 2 }), "INVALID_GRANT", { reason: "budget_exceeded" });
    expect(await callWith(bHeld.token)).toBe(200);
    expect(await callWith(bHeld.token)).toBe(429);
    expectError(await delegate(bHeld, d, { budget: 1 }), "INVALID_GRANT", { reason: "budget_exceeded" });
  });
});
