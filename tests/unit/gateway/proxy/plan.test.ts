/**
 * The caller's checks a warm proxied call keeps (proxy/plan.ts, issue 41) hold no longer than what they checked: after
 * warm calls, the token's expiry, the agent's approval lapsing, a suspension, a revocation, a provider's edit and the
 * grant's freshness each take effect on the very next call — through the gateway's entry, as an agent calls it.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { call, fullFlow } from "../../../helpers/agent.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { BASE, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";
import { ScriptedProvider as Provider } from "../../../helpers/scripted-provider.ts";

let g: InProcess;
let p: ScriptedProvider;
const other = new Provider("http://other.test");
/** A gateway whose tokens live `ttl` seconds (the upstream's for 3600 s, fresh for 3570 s). */
const start = async (ttl: number) => {
  ({ g, p } = await scriptedGateway((p) => ({ mail: p.config() }), { tokenTtlSeconds: ttl, hosts: { [other.origin]: other.fetch } }));
};
beforeEach(() => start(600));
afterEach(() => g.close());

const proxied = (token: string) => call(`${BASE}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${token}` }, fetch: g.fetch });

/** An agent's token for `mail`, used a few times (its checks kept). */
async function warm(): Promise<Awaited<ReturnType<typeof fullFlow>>> {
  const f = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
  for (let i = 0; i < 3; i++) expect((await proxied(f.accessToken)).status).toBe(200);
  return f;
}

describe("a warm caller's kept checks", () => {
  test("the token's expiry is read off the clock on every call", async () => {
    const f = await warm();
    g.clock.advance(601); // the grant is still fresh: only the token's own expiry says no
    expectError(await proxied(f.accessToken), "TOKEN_EXPIRED");
  });

  test("the agent's approval lapsing, or a suspension, refuses the next call", async () => {
    const f = await warm();
    const before = p.api.length;
    await g.gw.store.updateAgent(f.client.client_id, { status: "suspended" });
    expectError(await proxied(f.accessToken), "AGENT_UNAPPROVED");
    await g.gw.store.updateAgent(f.client.client_id, { status: "approved", approval_expires: g.clock.ms + 1000 });
    expect((await proxied(f.accessToken)).status).toBe(200);
    g.clock.ms += 1000;
    expectError(await proxied(f.accessToken), "AGENT_UNAPPROVED");
    expect(p.api.length).toBe(before + 1);
  });

  test("a revoked token is refused on its next call", async () => {
    const f = await warm();
    const res = await g.fetch("/ath/revoke", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ client_id: f.client.client_id, client_secret: f.client.client_secret, token: f.accessToken }) });
    expect(res.status).toBe(200);
    expectError(await proxied(f.accessToken), "TOKEN_REVOKED");
  });

  test("a provider's edit reaches the next call (its API base, here)", async () => {
    const f = await warm();
    const record = (await g.gw.store.getProvider("mail"))!;
    await g.gw.store.upsertProvider({ ...record, config: { ...record.config, api_base_url: `${other.origin}/api` } });
    const [before, mail] = [other.api.length, p.api.length];
    await proxied(f.accessToken); // the other server does not know the token: what matters is where it went
    expect(other.api.length).toBeGreaterThan(before);
    expect(p.api.length).toBe(mail);
  });

  test("a grant that turns stale is refreshed before the next call is sent, and that call carries the new upstream token", async () => {
    await g.close();
    await start(2 * 3600);
    const f = await warm();
    const seen = p.api.at(-1)!.bearer;
    expect(p.grants("refresh_token")).toHaveLength(0);
    g.clock.advance(3600 - 29); // within 30 s of the upstream token's expiry (DESIGN §8)
    expect((await proxied(f.accessToken)).status).toBe(200);
    expect(p.grants("refresh_token")).toHaveLength(1);
    expect(p.api.at(-1)!.bearer).not.toBe(seen);
    expect((await proxied(f.accessToken)).status).toBe(200);
    expect(p.grants("refresh_token")).toHaveLength(1);
  });
});
