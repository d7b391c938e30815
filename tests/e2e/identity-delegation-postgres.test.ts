/**
 * Delegation across two `ath serve` processes on one PostgreSQL (DESIGN §6, §23): budget shares carved out of one
 * parent's remaining count from both instances at once never add up to more than it had — with the parent's own calls
 * counting against the same count meanwhile; the property walk of random chains with its requests spread over both
 * instances; and revoking the root on A refuses every descendant on B at once (B had them cached: the revocation's
 * NOTIFY reaches it), the descendants revoked in the store too.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { authorize, call, consent, exchange, registeredAgent, type Net } from "../helpers/agent.ts";
import { delegateOver, rootHeld, walk, type Held, type Holder, type WalkWorld } from "../helpers/delegation-walk.ts";
import { eventually } from "../helpers/lifecycle.ts";
import { startPostgresPair, type PostgresPair } from "../helpers/postgres-pair.ts";

const SCOPES = ["mail:read", "mail:send"];
let pair: PostgresPair;
let A: Net;
let B: Net;

beforeAll(async () => {
  pair = await startPostgresPair();
  A = { baseUrl: pair.a.baseUrl, fetch: (req) => fetch(req) };
  B = { baseUrl: pair.b.baseUrl, fetch: (req) => fetch(req) };
}, 60_000);
afterAll(async () => {
  await pair?.stop();
});

/** Agents registered (on A), and a root token of the first for the mail scopes, through the person's consent. */
async function setup(n: number): Promise<{ agents: Holder[]; root: Held }> {
  const agents: Holder[] = [];
  for (let i = 0; i < n; i++) agents.push(await registeredAgent(A, { providers: [{ provider_id: "mail", scopes: SCOPES }] }));
  const first = agents[0]!;
  const a = await authorize(A, first.agent, first.client, { provider_id: "mail", scopes: SCOPES });
  const c = await consent(String(a.json.authorization_url));
  const t = await exchange(A, first.agent, first.client, { code: c.code!, ath_session_id: String(a.json.ath_session_id) });
  if (t.status !== 200) throw new Error(t.text);
  return { agents, root: rootHeld(first, t.json as never) };
}

const useAt = (net: Net, token: string) => call(`${net.baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${token}` }, fetch: net.fetch });
const reasons = (rs: { status: number; json: Record<string, unknown> }[]) => rs.map((r) => (r.status === 200 ? "ok" : String((r.json.details as { reason?: string } | undefined)?.reason)));

describe("delegation on two instances sharing PostgreSQL (DESIGN §23)", () => {
  test("40 concurrent shares of 1, half on each instance, carved from a parent with 12 left while it makes 10 calls of its own: exactly 12 succeed in all, and the rest are budget_exceeded or 429", async () => {
    const { agents, root } = await setup(3);
    const [, mid, leaf] = agents as [Holder, Holder, Holder];
    const share = await delegateOver(A, root, mid, { budget: 12 });
    expect(share.json.budget).toBe(12);
    const parent: Held = { ...root, token: String(share.json.access_token), holder: mid, budget: 12, depth: 1, parent: root };
    const carves = Array.from({ length: 40 }, (_, i) => delegateOver(i % 2 ? A : B, parent, leaf, { budget: 1 }));
    const calls = Array.from({ length: 10 }, (_, i) => useAt(i % 2 ? B : A, parent.token));
    const [carved, called] = [await Promise.all(carves), await Promise.all(calls)];
    const okCarves = reasons(carved).filter((r) => r === "ok").length;
    const okCalls = called.filter((r) => r.status === 200).length;
    expect(okCarves + okCalls).toBe(12);
    expect(reasons(carved).filter((r) => r !== "ok").every((r) => r === "budget_exceeded")).toBe(true);
    expect(called.filter((r) => r.status !== 200).every((r) => r.status === 429)).toBe(true);
    expect(reasons([await delegateOver(B, parent, leaf, { budget: 1 })])).toEqual(["budget_exceeded"]);
  }, 60_000);

  test("property: random chains with requests spread over both instances never widen; revoking the root on A refuses every descendant on B at once", async () => {
    const { agents, root } = await setup(5);
    const world: WalkWorld = {
      nets: [A, B],
      provider: "mail",
      scopes: SCOPES,
      request: () => ({ method: "GET", path: "/v1/messages" }),
    };
    const seed = Number(process.env.DELEGATION_SEED ?? Date.now() % 100_000);
    const all = await walk(world, root, agents.slice(1), { seed, steps: 50 });
    const live: Held[] = [];
    for (const h of all) if ((await useAt(B, h.token)).status === 200) live.push(h); // B has them cached now
    expect(live.length).toBeGreaterThan(0);
    expect((await call(`${A.baseUrl}/ath/revoke`, { json: { token: root.token, ...root.holder.client }, fetch: A.fetch })).status).toBe(200);
    // B hears of it through PostgreSQL NOTIFY (DESIGN §13); the bound guards only a broken feed
    await eventually("B refuses every descendant", async () => (await Promise.all(live.map((h) => useAt(B, h.token)))).every((r) => r.status === 401), 2_000);
    for (const h of live) expect((await useAt(B, h.token)).json.code).toBe("TOKEN_REVOKED");
    // and revoked in the store too: no agent of this walk holds an active token any more
    for (const h of agents) {
      const listed = await call(`${B.baseUrl}/ath/admin/tokens?state=active&client_id=${h.client.client_id}`, { headers: { "x-ath-user-token": pair.b.adminToken }, fetch: B.fetch });
      expect({ client: h.client.client_id, tokens: listed.json.tokens }).toEqual({ client: h.client.client_id, tokens: [] });
    }
  }, 120_000);
});
