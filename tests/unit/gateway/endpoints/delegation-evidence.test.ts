/**
 * What names a delegated token's chain (DESIGN §23), in process: the approval page a person decides a sub-agent's
 * request on shows every agent it came through ("On behalf of"); the audit trail's `token.delegated` and the
 * sub-agent's `proxy.call` records name the chain; `--max-delegation-depth 0` turns delegation off (and discovery no
 * longer offers the grant).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { fullFlow, registeredAgent } from "../../../helpers/agent.ts";
import { Browser, formWithButton } from "../../../helpers/browser.ts";
import { delegateOver, rootHeld } from "../../../helpers/delegation-walk.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { ADMIN_TOKEN, BASE, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";

let g: InProcess;
afterEach(() => g.close());

async function world(o: { maxDelegationDepth?: number } = {}) {
  ({ g } = await scriptedGateway((p) => ({
    mail: p.config({
      available_scopes: ["mail:read", "mail:send"],
      approval_rules: [{ match: ["POST /v1/messages"], approver: "user", ttl: 300 }],
      budgets: [{ match: ["GET /v1/labels"], limit: 1, window: "1h", then: "deny" }],
    }),
  })));
  if (o.maxDelegationDepth !== undefined) g.gw.opts.maxDelegationDepth = o.maxDelegationDepth;
  const net = { baseUrl: BASE, fetch: (req: Request) => g.fetch(req) };
  const person = new Browser((req) => g.fetch(req));
  const flow = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read", "mail:send"], consent: { browser: person } });
  const root = rootHeld({ agent: flow.agent, client: flow.client }, flow.token.json as never);
  const sub = await registeredAgent(g, { providers: [{ provider_id: "mail", scopes: ["mail:read", "mail:send"] }] });
  return { net, person, flow, root, sub };
}

describe("the chain where people and operators look (DESIGN §23)", () => {
  test("the approval page of a sub-agent's request shows the agent that delegated it, and the audit trail names the chain", async () => {
    const { net, person, flow, root, sub } = await world();
    const d = await delegateOver(net, root, sub);
    expect(d.status).toBe(200);
    const token = String(d.json.access_token);
    const held = await g.fetch("/ath/proxy/mail/v1/messages", { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: "{}" });
    expect(held.status).toBe(403);
    const { details } = (await held.json()) as { details: { approval_url: string } };
    const page = await person.navigate(details.approval_url);
    expect(page.status).toBe(200);
    expect(page.body).toContain("On behalf of");
    expect(page.body).toContain(flow.agent.agentId);
    expect((await g.fetch("/ath/proxy/mail/v1/messages", { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    await g.gw.auditLog.flush();
    const [delegated] = await g.gw.store.listAudit({ type: "token.delegated" });
    expect(delegated).toMatchObject({ client_id: sub.client.client_id, data: { depth: 1, act: { sub: flow.agent.agentId, client_id: flow.client.client_id } } });
    const calls = await g.gw.store.listAudit({ type: "proxy.call", client_id: sub.client.client_id });
    expect(calls.map((e) => (e.data as { act?: string[] }).act)).toEqual([[flow.agent.agentId]]);
  });

  test("every record of a sub-agent's call names the chain: approval requested, approved, used; budget exhausted — and a root's records name none", async () => {
    const { net, person, flow, root, sub } = await world();
    const token = String((await delegateOver(net, root, sub)).json.access_token);
    const send = (t: string) => g.fetch("/ath/proxy/mail/v1/messages", { method: "POST", headers: { authorization: `Bearer ${t}`, "content-type": "application/json" }, body: "{}" });
    const held = await send(token);
    const { details } = (await held.json()) as { details: { approval_id: string; approval_url: string } };
    const page = await person.navigate(details.approval_url);
    expect((await person.submit(page, formWithButton(page, "Approve"), { button: "Approve" })).status).toBeLessThan(400);
    const resent = await g.fetch("/ath/proxy/mail/v1/messages", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-ath-approval": details.approval_id },
      body: "{}",
    });
    expect(resent.status).toBe(200);
    const labels = (t: string) => g.fetch("/ath/proxy/mail/v1/labels", { headers: { authorization: `Bearer ${t}` } });
    expect((await labels(token)).status).toBe(200);
    expect((await labels(token)).status).toBe(429);
    expect((await send(flow.accessToken)).status).toBe(403); // the root's own request: its records name no chain
    await g.gw.auditLog.flush();
    const chainOf = async (type: string, clientId: string) => (await g.gw.store.listAudit({ type, client_id: clientId })).map((e) => (e.data as { act?: string[] }).act ?? null);
    for (const type of ["approval.requested", "approval.approved", "approval.used", "budget.exhausted"]) {
      expect({ type, act: await chainOf(type, sub.client.client_id) }).toEqual({ type, act: [[flow.agent.agentId]] });
    }
    expect(await chainOf("approval.requested", flow.client.client_id)).toEqual([null]);
  });

  test("the admin console's tokens and agent pages show a delegated token's chain and share; a root token shows none", async () => {
    const { net, flow, root, sub } = await world();
    const d = await delegateOver(net, root, sub, { budget: 2 });
    expect(d.status).toBe(200);
    const operator = new Browser((req) => g.fetch(req));
    const signin = await operator.navigate(`${BASE}/admin/signin`);
    await operator.submit(signin, formWithButton(signin, "Sign in"), { button: "Sign in", fields: { token: ADMIN_TOKEN } });
    const subTokens = await operator.navigate(`${BASE}/admin/tokens?client_id=${sub.client.client_id}`);
    expect(subTokens.status).toBe(200);
    expect(subTokens.body).toContain("delegated by");
    expect(subTokens.body).toContain(flow.agent.agentId);
    expect(subTokens.body).toContain("budget share: 2 calls");
    const agentPage = await operator.navigate(`${BASE}/admin/agents/${sub.client.client_id}`);
    expect(agentPage.status).toBe(200);
    expect(agentPage.body).toContain("delegated by");
    expect(agentPage.body).toContain(flow.agent.agentId);
    const rootTokens = await operator.navigate(`${BASE}/admin/tokens?client_id=${flow.client.client_id}`);
    expect(rootTokens.status).toBe(200);
    expect(rootTokens.body).not.toContain("delegated by");
  });

  test("--max-delegation-depth 0: no exchange is possible, and discovery does not offer the grant", async () => {
    const { net, root, sub } = await world({ maxDelegationDepth: 0 });
    expectError(await delegateOver(net, root, sub), "INVALID_GRANT", { reason: "delegation_too_deep", max_depth: 0 });
    const doc = (await (await g.fetch("/.well-known/ath.json")).json()) as { grant_types_supported: string[] };
    expect(doc.grant_types_supported).not.toContain("urn:ietf:params:oauth:grant-type:token-exchange");
    expect(doc.grant_types_supported).toContain("urn:ietf:params:oauth:grant-type:jwt-bearer");
  });
});
