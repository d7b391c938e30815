/**
 * The proxy's token check (domain/tokens.ts, DESIGN §14): a live token is not enough — its agent must still be
 * approved. A token whose agent was suspended (by a write that did not revoke it, e.g. another instance's) or whose
 * approval lapsed is refused with 403 AGENT_UNAPPROVED, and nothing reaches the upstream.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { call, fullFlow } from "../../../helpers/agent.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { BASE, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

let g: InProcess;
let p: ScriptedProvider;
beforeEach(async () => {
  // tokens outlive the agent's one-year approval, so the approval can lapse under a live token
  ({ g, p } = await scriptedGateway((p) => ({ mail: p.config() }), { tokenTtlSeconds: 366 * 24 * 3600 }));
});
afterEach(() => g.close());

const proxied = (token: string) => call(`${BASE}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${token}` }, fetch: g.fetch });

describe("the proxy re-checks the agent", () => {
  test("a live token of an agent set to suspended (and not revoked) is refused with 403 AGENT_UNAPPROVED at once, nothing forwarded", async () => {
    const f = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
    expect((await proxied(f.accessToken)).status).toBe(200); // now cached
    await g.gw.store.updateAgent(f.client.client_id, { status: "suspended" });
    const before = p.api.length;
    expectError(await proxied(f.accessToken), "AGENT_UNAPPROVED");
    expect(p.api.length).toBe(before);
    await g.gw.store.updateAgent(f.client.client_id, { status: "approved" });
    expect((await proxied(f.accessToken)).status).toBe(200);
  });

  test("a live token whose agent's approval expired is refused with 403 AGENT_UNAPPROVED", async () => {
    const f = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
    g.clock.advance(365 * 24 * 3600 + 60);
    expectError(await proxied(f.accessToken), "AGENT_UNAPPROVED");
  });
});
