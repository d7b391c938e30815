/**
 * Per-request approval (DESIGN §15) in process: a provider's approval_rules and an agent's own (PATCH by an admin);
 * 403 APPROVAL_REQUIRED with its document; the agent's poll; the approval page for its one approver (the browser that
 * consented) and a 403 page for anyone else; CSRF; approve, deny, expiry; the resend forwarded once, only with the
 * exact digest, one of two racing resends; admin approvals over the admin API; --max-approval-body.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { fullFlow } from "../../../helpers/agent.ts";
import { Browser, formWithButton, parseForms } from "../../../helpers/browser.ts";
import { ADMIN_TOKEN, BASE, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

let g: InProcess;
let p: ScriptedProvider;
let flow: Awaited<ReturnType<typeof fullFlow>>;
let person: Browser;

beforeEach(async () => {
  ({ g, p } = await scriptedGateway((p) => ({
    mail: p.config({
      available_scopes: ["mail:read", "mail:send"],
      approval_rules: [
        { match: ["POST /v1/messages", "PUT /v1/messages"], approver: "user", ttl: 300 },
        { match: ["DELETE /v1/messages/*"], approver: "admin" },
      ],
    }),
  })));
  person = new Browser((req) => g.fetch(req));
  flow = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read", "mail:send"], consent: { browser: person } });
});
afterEach(() => g.close());

const MAIL = { to: "boss@example.com", subject: "Resignation", text: "I quit." };

function send(path: string, o: { method?: string; body?: string; approval?: string; token?: string; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${o.token ?? flow.accessToken}`, "content-type": "application/json", ...o.headers };
  if (o.approval) headers["x-ath-approval"] = o.approval;
  return g.fetch(`/ath/proxy/mail${path}`, { method: o.method ?? "POST", headers, ...(o.body === undefined ? {} : { body: o.body }) });
}

async function required(res: Response) {
  expect(res.status).toBe(403);
  expect(res.headers.get("x-ath-error")).toBe("APPROVAL_REQUIRED");
  const body = (await res.json()) as { code: string; details: Record<string, any> };
  expect(body.code).toBe("APPROVAL_REQUIRED");
  return body.details;
}

const poll = async (id: string, token = flow.accessToken) => {
  const res = await g.fetch(`/ath/approvals/${id}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, json: (await res.json()) as Record<string, any> };
};

async function decideInBrowser(browser: Browser, url: string, button: "Approve" | "Deny") {
  const page = await browser.navigate(url);
  expect(page.status).toBe(200);
  return browser.submit(page, formWithButton(page, button), { button });
}

const apiCalls = (method: string) => p.api.filter((r) => r.method === method && r.path.startsWith("/v1/messages"));

describe("asking", () => {
  test("a matching request is not forwarded: 403 APPROVAL_REQUIRED with the approval document", async () => {
    const d = await required(await send("/v1/messages", { body: JSON.stringify(MAIL) }));
    expect(d.approval_id).toMatch(/^ath_apr_[A-Za-z0-9_-]+$/);
    expect(d.approval_url).toBe(`${BASE}/ath/approvals/${d.approval_id}`);
    expect(Date.parse(d.expires_at) - g.clock.ms).toBe(300_000);
    expect(d.request_digest).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(apiCalls("POST")).toEqual([]);
    expect(await g.audited("approval.requested")).toBe(1);
    const events = await g.gw.store.listAudit({ type: "approval.requested" });
    expect(JSON.stringify(events)).not.toContain("Resignation");
    // a request no rule matches passes as before
    expect((await send("/v1/messages", { method: "GET" })).status).toBe(200);
  });

  test("the agent polls its own approval; another agent's token gets 404", async () => {
    const d = await required(await send("/v1/messages", { body: JSON.stringify(MAIL) }));
    const mine = await poll(d.approval_id);
    expect(mine.status).toBe(200);
    expect(mine.json).toMatchObject({ approval_id: d.approval_id, status: "pending", method: "POST", path: "/v1/messages", request_digest: d.request_digest });
    const other = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
    expect((await poll(d.approval_id, other.accessToken)).status).toBe(404);
    expect((await poll(d.approval_id, "ath_tk_nope")).status).toBe(401);
  });

  test("a body over --max-approval-body is refused 413 before any approval is made", async () => {
    (g.gw.opts as { maxApprovalBody?: number }).maxApprovalBody = 64;
    const res = await send("/v1/messages", { body: JSON.stringify({ text: "x".repeat(100) }) });
    expect(res.status).toBe(413);
    expect(await g.audited("approval.requested")).toBe(0);
  });
});

test("an agent holds at most 50 pending approvals: the next request is 429 until some are decided or expire", async () => {
  for (let i = 0; i < 50; i++) await required(await send("/v1/messages", { body: JSON.stringify({ i }) }));
  const over = await send("/v1/messages", { body: "{}" });
  expect(over.status).toBe(429);
  expect(((await over.json()) as { details: Record<string, unknown> }).details).toMatchObject({ reason: "pending_approvals", limit: 50 });
  g.clock.advance(301);
  await required(await send("/v1/messages", { body: "{}" }));
});

describe("the person decides", () => {
  test("approve in the consenting browser; the resend is forwarded once with exactly that body", async () => {
    const body = JSON.stringify(MAIL);
    const d = await required(await send("/v1/messages?b=2&a=1", { body }));
    const done = await decideInBrowser(person, d.approval_url, "Approve");
    expect(done.status).toBe(200);
    expect(done.body).toContain("Request approved");
    expect((await poll(d.approval_id)).json.status).toBe("approved");

    // the query is bound exactly as sent, order kept (DESIGN §16): the same pairs reordered are another request
    const reordered = await required(await send("/v1/messages?a=1&b=2", { body, approval: d.approval_id }));
    expect(reordered.previous).toEqual({ approval_id: d.approval_id, reason: "digest_mismatch" });
    expect(apiCalls("POST")).toEqual([]);
    const ok = await send("/v1/messages?b=2&a=1", { body, approval: d.approval_id });
    expect(ok.status).toBe(200);
    expect(apiCalls("POST").map((r) => r.body)).toEqual([body]);
    expect(apiCalls("POST")[0]!.headers["x-ath-approval"]).toBeUndefined();
    expect((await poll(d.approval_id)).json.status).toBe("used");
    expect(await g.audited("approval.approved")).toBe(1);
    expect(await g.audited("approval.used")).toBe(1);

    const again = await required(await send("/v1/messages?b=2&a=1", { body, approval: d.approval_id }));
    expect(again.previous).toEqual({ approval_id: d.approval_id, reason: "used" });
    expect(again.approval_id).not.toBe(d.approval_id);
    expect(apiCalls("POST")).toHaveLength(1);

    // ath_approvals_total{provider,result} at /metrics
    const metrics = await (await g.fetch("/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
    expect(metrics).toContain('ath_approvals_total{provider="mail",result="requested"} 3');
    expect(metrics).toContain('ath_approvals_total{provider="mail",result="approved"} 1');
    expect(metrics).toContain('ath_approvals_total{provider="mail",result="used"} 1');
  });

  test("a resend with a changed body, query or method is refused and does not spend the approval", async () => {
    const body = JSON.stringify(MAIL);
    const d = await required(await send("/v1/messages", { body }));
    await decideInBrowser(person, d.approval_url, "Approve");
    for (const changed of [
      send("/v1/messages", { body: JSON.stringify({ ...MAIL, to: "all@example.com" }), approval: d.approval_id }),
      send("/v1/messages?cc=all", { body, approval: d.approval_id }),
      send("/v1/messages", { method: "PUT", body, approval: d.approval_id }),
    ]) {
      const res = await changed;
      if (res.status === 403) expect((await required(res)).previous).toEqual({ approval_id: d.approval_id, reason: "digest_mismatch" });
      else throw new Error(`expected 403, got ${res.status}`);
    }
    expect(apiCalls("POST")).toEqual([]);
    expect(apiCalls("PUT")).toEqual([]);
    expect((await send("/v1/messages", { body, approval: d.approval_id })).status).toBe(200);
  });

  test("the digest binds the headers and the query's order (DESIGN §16): a changed argument header, Content-Type or parameter order gets a fresh approval and forwards nothing", async () => {
    const body = JSON.stringify(MAIL);
    const arg = { "dropbox-api-arg": JSON.stringify({ path: "/reports/q3.pdf" }) };
    const d = await required(await send("/v1/messages?a=1&b=2", { body, headers: arg }));
    await decideInBrowser(person, d.approval_url, "Approve");
    for (const changed of [
      send("/v1/messages?a=1&b=2", { body, approval: d.approval_id, headers: { "dropbox-api-arg": JSON.stringify({ path: "/everything" }) } }),
      send("/v1/messages?a=1&b=2", { body, approval: d.approval_id, headers: { ...arg, "content-type": "text/plain" } }),
      send("/v1/messages?b=2&a=1", { body, approval: d.approval_id, headers: arg }),
      send("/v1/messages?a=1&b=2", { body, approval: d.approval_id, headers: { ...arg, "x-extra": "1" } }),
    ]) {
      const fresh = await required(await changed);
      expect(fresh.previous).toEqual({ approval_id: d.approval_id, reason: "digest_mismatch" });
      expect(fresh.approval_id).not.toBe(d.approval_id);
    }
    expect(apiCalls("POST")).toEqual([]);
    // unbound headers (User-Agent, Accept…) may differ: the same request still goes, once
    const ok = await send("/v1/messages?a=1&b=2", { body, approval: d.approval_id, headers: { ...arg, "user-agent": "another/1", accept: "text/plain" } });
    expect(ok.status).toBe(200);
    expect(apiCalls("POST").map((r) => r.headers["dropbox-api-arg"])).toEqual([arg["dropbox-api-arg"]]);
  });

  test("sent at most once: an approved request whose upstream answers 401 is relayed, not retried; the grant is refreshed for later calls", async () => {
    const body = JSON.stringify(MAIL);
    const d = await required(await send("/v1/messages", { body }));
    await decideInBrowser(person, d.approval_url, "Approve");
    p.expireAccessTokens();
    const refreshesBefore = p.grants("refresh_token").length;
    const res = await send("/v1/messages", { body, approval: d.approval_id });
    expect(res.status).toBe(401);
    expect(apiCalls("POST")).toHaveLength(1);
    expect((await poll(d.approval_id)).json.status).toBe("used");
    expect(p.grants("refresh_token").length).toBe(refreshesBefore + 1);
    // the next call uses the refreshed grant at once
    const later = await send("/v1/messages", { method: "GET" });
    expect(later.status).toBe(200);
    expect(p.grants("refresh_token").length).toBe(refreshesBefore + 1);
  });

  test("two racing resends: exactly one is forwarded", async () => {
    const body = JSON.stringify(MAIL);
    const d = await required(await send("/v1/messages", { body }));
    await decideInBrowser(person, d.approval_url, "Approve");
    const results = await Promise.all([1, 2, 3].map(() => send("/v1/messages", { body, approval: d.approval_id })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 403, 403]);
    expect(apiCalls("POST")).toHaveLength(1);
  });

  test("deny: the resend gets APPROVAL_DENIED and nothing is sent", async () => {
    const body = JSON.stringify(MAIL);
    const d = await required(await send("/v1/messages", { body }));
    const done = await decideInBrowser(person, d.approval_url, "Deny");
    expect(done.body).toContain("Request denied");
    expect((await poll(d.approval_id)).json.status).toBe("denied");
    const res = await send("/v1/messages", { body, approval: d.approval_id });
    expect(res.status).toBe(403);
    expect(res.headers.get("x-ath-error")).toBe("APPROVAL_DENIED");
    expect(apiCalls("POST")).toEqual([]);
    expect(await g.audited("approval.denied")).toBe(1);
  });

  test("expiry: an approval not decided, or not used, within its ttl is dead", async () => {
    const body = JSON.stringify(MAIL);
    const late = await required(await send("/v1/messages", { body }));
    const page = await person.navigate(late.approval_url);
    g.clock.advance(301);
    const refused = await person.submit(page, formWithButton(page, "Approve"), { button: "Approve" });
    expect(refused.status).toBe(400);
    expect((await poll(late.approval_id)).json.status).toBe("expired");

    const unused = await required(await send("/v1/messages", { body }));
    await decideInBrowser(person, unused.approval_url, "Approve");
    g.clock.advance(301);
    expect((await required(await send("/v1/messages", { body, approval: unused.approval_id }))).previous.reason).toBe("expired");
    expect(apiCalls("POST")).toEqual([]);
  });

  test("an anonymous browser and another signed-in user get the 403 page, and cannot post a decision", async () => {
    const d = await required(await send("/v1/messages", { body: JSON.stringify(MAIL) }));
    const anonymous = new Browser((req) => g.fetch(req));
    const anon = await anonymous.navigate(d.approval_url);
    expect(anon.status).toBe(403);
    expect(anon.body).toContain("You cannot decide this request");
    expect(anon.body).not.toContain("Resignation");
    // this provider names no users (no id_token, no userinfo): no sign-in is offered, only the consenting browser
    expect(parseForms(anon.body)).toEqual([]);
    expect(anon.body).toContain("does not tell the gateway who signs in");
    // another person consents to the same agent: their browser holds their own user id
    const other = new Browser((req) => g.fetch(req));
    await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"], agent: flow.agent, client: flow.client, consent: { browser: other } });
    expect(other.cookies.some((c) => c.name.endsWith("ath_user"))).toBe(true);
    expect((await other.navigate(d.approval_url)).status).toBe(403);
    // a forged decision from either browser, even with a real-looking form
    const mine = await person.navigate(d.approval_url);
    const csrf = parseForms(mine.body)[0]!.fields.find(([n]) => n === "csrf")![1];
    for (const b of [anonymous, other]) {
      const res = await b.navigate(d.approval_url, { method: "POST", body: `csrf=${csrf}&decision=approve` });
      expect(res.status).toBe(403);
    }
    expect((await poll(d.approval_id)).json.status).toBe("pending");
  });

  test("CSRF: a post without the page's token is refused", async () => {
    const d = await required(await send("/v1/messages", { body: JSON.stringify(MAIL) }));
    const page = await person.navigate(d.approval_url);
    const res = await person.submit(page, formWithButton(page, "Approve"), { button: "Approve", fields: { csrf: "forged" } });
    expect(res.status).toBe(400);
    expect(res.body).toContain("STATE_MISMATCH");
    const none = await person.navigate(d.approval_url, { method: "POST", body: "decision=approve" });
    expect(none.status).toBe(400);
    expect((await poll(d.approval_id)).json.status).toBe("pending");
  });

  test("a hostile body is shown inert: escaped, under the page's CSP", async () => {
    const hostile = JSON.stringify({ text: `</pre><script>alert(1)</script><img src=x onerror=alert(2)>`, "<b>": "&amp;" });
    const d = await required(await send("/v1/messages?q=%3Cscript%3E", { body: hostile }));
    const page = await person.navigate(d.approval_url);
    expect(page.status).toBe(200);
    expect(page.body).not.toContain("<script>");
    expect(page.body).not.toContain("<img");
    expect(page.body).toContain("&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(page.body).toContain("&lt;script&gt;"); // the query, decoded for reading, still escaped
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
  });
});

describe("admin approvals and per-agent rules", () => {
  const admin = { "x-ath-user-token": ADMIN_TOKEN, "content-type": "application/json" };

  test("approver admin: listed at GET /ath/admin/approvals, decided at POST /ath/admin/approvals/{id}", async () => {
    const d = await required(await send("/v1/messages/42", { method: "DELETE" }));
    expect(d.approver).toBe("admin");
    // the person cannot decide an admin approval
    const page = await person.navigate(d.approval_url);
    expect(page.status).toBe(200);
    expect(parseForms(page.body)).toEqual([]);
    expect(page.body).toContain("An admin decides this request");
    expect(page.body).not.toContain("/v1/messages/42"); // shown to admins in the console, not to whoever holds the link
    const list = (await (await g.fetch("/ath/admin/approvals?status=pending", { headers: admin })).json()) as { approvals: Record<string, unknown>[] };
    expect(list.approvals.map((a) => a.approval_id)).toEqual([d.approval_id]);
    expect(list.approvals[0]).toMatchObject({ client_id: flow.client.client_id, method: "DELETE", path: "/v1/messages/42", status: "pending" });
    expect((await g.fetch(`/ath/admin/approvals/${d.approval_id}`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"decision":"approve"}' })).status).toBe(401);
    const decided = await g.fetch(`/ath/admin/approvals/${d.approval_id}`, { method: "POST", headers: admin, body: '{"decision":"approve"}' });
    expect(decided.status).toBe(200);
    expect(((await decided.json()) as Record<string, unknown>).status).toBe("approved");
    expect((await send("/v1/messages/42", { method: "DELETE", approval: d.approval_id })).status).toBe(200);
    expect(apiCalls("DELETE")).toHaveLength(1);
    // a user approval is not the admin's to decide; malformed decisions are 400
    const u = await required(await send("/v1/messages", { body: "{}" }));
    expect((await g.fetch(`/ath/admin/approvals/${u.approval_id}`, { method: "POST", headers: admin, body: '{"decision":"approve"}' })).status).toBe(400);
    expect((await g.fetch(`/ath/admin/approvals/${u.approval_id}`, { method: "POST", headers: admin, body: '{"decision":"maybe"}' })).status).toBe(400);
    expect((await g.fetch(`/ath/admin/approvals/ath_apr_nope`, { method: "POST", headers: admin, body: '{"decision":"deny"}' })).status).toBe(404);
    expect((await g.fetch("/ath/admin/approvals?status=nope", { headers: admin })).status).toBe(400);
  });

  test("PATCH /ath/admin/agents/{client_id} {approval_rules} adds the agent's own rules (and [] clears them)", async () => {
    const path = `/ath/admin/agents/${flow.client.client_id}`;
    const set = await g.fetch(path, { method: "PATCH", headers: admin, body: JSON.stringify({ approval_rules: [{ match: ["GET /v1/messages/**"] }] }) });
    expect(set.status).toBe(200);
    expect(((await set.json()) as Record<string, unknown>).approval_rules).toEqual([{ match: ["GET /v1/messages/**"], approver: "user", ttl: 300 }]);
    await required(await send("/v1/messages/7", { method: "GET" }));
    expect((await g.fetch(path, { method: "PATCH", headers: admin, body: JSON.stringify({ approval_rules: [{ match: ["nope"] }] }) })).status).toBe(400);
    expect((await g.fetch(path, { method: "PATCH", headers: admin, body: JSON.stringify({ approval_rules: [] }) })).status).toBe(200);
    expect((await send("/v1/messages/7", { method: "GET" })).status).toBe(200);
  });
});
