/**
 * The admin console at /admin/ (DESIGN §9) in Chromium, served by the compiled `dist/ath serve --demo --approval
 * manual`: sign-in (a wrong token refused; the cookie is a session id, not the token: HttpOnly, SameSite=Strict, 12 h),
 * approving a pending agent, revoking a token (the proxy refuses it at once), CSRF refusal, a hostile agent name and
 * purpose rendered as inert text, the security headers, readability at 390 px, sign-out, and the per-IP sign-in
 * limit. Screenshots at desktop and phone width go to test-artifacts/browser/admin-*.png.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { authorize, call, consent, exchange, register, type ClientCredentials } from "../helpers/agent.ts";
import { attest, makeAgent, type TestAgent } from "../helpers/attestations.ts";
import { Browser as HttpBrowser, formWithButton } from "../helpers/browser.ts";
import { closeContexts, freshPage, recordDialogs, screenshots, sharedChromium, VIEWPORTS } from "../helpers/chromium.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { clickAndWait } from "../helpers/person.ts";

const HOSTILE = `<script>alert(1)</script> "><img src=x onerror=alert(1)> & 'quotes'`;

let gw: Gateway;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let dialogs: string[];
let pending: { agent: TestAgent; client: ClientCredentials };
let hostile: { agent: TestAgent; client: ClientCredentials };

async function registered(purpose: string, developer: { name: string; id: string }) {
  const agent = await makeAgent();
  const r = await register(gw.baseUrl, agent, { providers: [{ provider_id: "demo", scopes: ["notes:read"] }], body: { purpose, developer } });
  if (r.status !== 201) throw new Error(r.text);
  return { agent, client: { client_id: String(r.json.client_id), client_secret: String(r.json.client_secret) } };
}
const api = (path: string, init: { method?: string; json?: unknown } = {}) =>
  call(`${gw.baseUrl}${path}`, { ...init, headers: { "x-ath-user-token": gw.adminToken } });
const row = (text: string) => page.locator("table.list tbody tr", { hasText: text });

beforeAll(async () => {
  [gw, browser] = await Promise.all([startGateway({ binary: true, providers: {}, extraArgs: ["--demo", "--approval", "manual"] }), sharedChromium()]);
  pending = await registered("Summarise my notes every morning", { name: "Acme Robotics", id: "dev-acme" });
  hostile = await registered(HOSTILE, { name: HOSTILE, id: "dev-<b>x</b>" });
  ({ context, page } = await freshPage(browser));
  dialogs = recordDialogs(page);
}, 60_000);
afterAll(async () => {
  await context?.close();
  await closeContexts(browser);
  await gw?.cleanup();
});

describe("signing in", () => {
  test("/admin/ sends a signed-out browser to the sign-in page, with the pages' security headers", async () => {
    const res = await page.goto(`${gw.baseUrl}/admin/`);
    expect(new URL(page.url()).pathname).toBe("/admin/signin");
    const h = res!.headers();
    expect(h["content-security-policy"]).toMatch(/^default-src 'none'; style-src 'sha256-[^']+'; img-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'$/);
    expect(h).toMatchObject({ "x-frame-options": "DENY", "referrer-policy": "no-referrer", "cache-control": "no-store", "x-content-type-options": "nosniff" });
    expect(await page.locator("input[type=password][name=token]").count()).toBe(1);
    expect(await page.locator("form input[name=csrf]").count()).toBe(1);
    await screenshots(page, "admin-signin");
  });

  test("a wrong token is refused on the page (401), and no session cookie is set", async () => {
    await page.fill("#token", "not-the-admin-token");
    const res = await clickAndWait(page, "Sign in");
    expect(res!.status()).toBe(401);
    expect(await page.getByRole("alert").textContent()).toBe("That is not the admin token of this gateway.");
    expect((await context.cookies()).map((c) => c.name)).not.toContain("ath_admin");
  });

  test("the admin token signs in: the cookie is a session id (not the token), HttpOnly, SameSite=Strict, 12 h", async () => {
    await page.fill("#token", gw.adminToken);
    const res = await clickAndWait(page, "Sign in");
    expect(res!.status()).toBe(200);
    expect(new URL(page.url()).pathname).toBe("/admin");
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Overview");
    const cookie = (await context.cookies()).find((c) => c.name === "ath_admin")!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/admin" });
    expect(cookie.value).not.toContain(gw.adminToken);
    expect(cookie.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const hours = (cookie.expires * 1000 - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(11.9);
    expect(hours).toBeLessThanOrEqual(12);
    // the overview counts: two pending agents, one provider
    const counts = await page.locator(".count").allTextContents();
    expect(counts).toContain("2pending");
    expect(counts).toContain("1providers");
    await screenshots(page, "admin-overview");
  });
});

describe("agents", () => {
  test("a hostile name and purpose render as inert, visible text (no element, no script ran)", async () => {
    await page.goto(`${gw.baseUrl}/admin/agents`);
    const r = row(hostile.client.client_id);
    expect(await r.locator("td[data-label=Purpose]").textContent()).toBe(HOSTILE);
    expect(await r.locator("td[data-label=Developer]").textContent()).toBe(`${HOSTILE} (dev-<b>x</b>)`);
    // what it asked for, so the operator approves knowing it
    expect(await r.locator("td[data-label=Requested]").textContent()).toBe("demo: notes:read");
    expect(await page.locator("script, img, b").count()).toBe(0);
    expect(dialogs).toEqual([]);
    await screenshots(page, "admin-agents");
  });

  test("pending agents come first; Approve approves one, with a confirmation, and the API agrees", async () => {
    await page.goto(`${gw.baseUrl}/admin/agents`);
    expect(await page.locator("td[data-label=Status]").allTextContents()).toEqual(["pending", "pending"]);
    await press(row(pending.client.client_id).getByRole("button", { name: "Approve" }));
    expect(await page.getByRole("status").textContent()).toBe("Agent approved.");
    expect(await row(pending.client.client_id).locator("td[data-label=Status]").textContent()).toBe("approved");
    expect(await row(hostile.client.client_id).locator("td[data-label=Status]").textContent()).toBe("pending");
    expect((await api(`/ath/admin/agents/${pending.client.client_id}`)).json.agent_status).toBe("approved");
    // pending first, still
    expect((await page.locator("td[data-label=Status]").allTextContents())[0]).toBe("pending");
  });

  test("scopes an approved agent asks to add (DESIGN §17) show on its row; Approve additions grants them, and the API agrees", async () => {
    const basic = btoa(`${pending.client.client_id}:${pending.client.client_secret}`);
    const grown = await call(`${gw.baseUrl}/ath/agents/registration`, {
      method: "PATCH",
      json: { agent_attestation: await attest(pending.agent, gw.baseUrl), requested_providers: [{ provider_id: "demo", scopes: ["notes:write"] }] },
      headers: { authorization: `Basic ${basic}` },
    });
    expect(grown.json.pending_providers).toEqual([{ provider_id: "demo", scopes: ["notes:write"] }]);
    await page.goto(`${gw.baseUrl}/admin/agents`);
    const r = row(pending.client.client_id);
    expect(await r.locator(".pending-additions").textContent()).toBe("asks to add: demo: notes:write");
    await screenshots(page, "admin-agents-additions");
    await press(r.getByRole("button", { name: "Approve additions" }));
    expect(await page.getByRole("status").textContent()).toBe("Agent approved.");
    expect(await row(pending.client.client_id).locator(".pending-additions").count()).toBe(0);
    const after = (await api(`/ath/admin/agents/${pending.client.client_id}`)).json;
    expect(after.pending_providers).toEqual([]);
    expect((after.approved_providers as { provider_id: string; approved_scopes: string[] }[])[0]!.approved_scopes).toEqual(["notes:read", "notes:write"]);
  });

  test("a POST with a wrong or missing CSRF token is refused and changes nothing", async () => {
    const url = `${gw.baseUrl}/admin/agents/${hostile.client.client_id}`;
    for (const form of [{ action: "approve", csrf: "0".repeat(64) }, { action: "approve" }] as Record<string, string>[]) {
      const res = await page.request.post(url, { form, maxRedirects: 0 });
      expect(res.status()).toBe(400);
      expect(await res.text()).toContain("did not come from this console");
    }
    // the browser's cookie went with it: only the token was missing
    expect((await api(`/ath/admin/agents/${hostile.client.client_id}`)).json.agent_status).toBe("pending");
    // without the session cookie, a POST is refused outright
    const anonymous = await call(url, { form: { action: "approve" } });
    expect(anonymous.status).toBe(401);
    expect((await api(`/ath/admin/agents/${hostile.client.client_id}`)).json.agent_status).toBe("pending");
  });
});

describe("tokens", () => {
  let accessToken = "";

  test("Revoke on a token's row revokes it, and the proxy refuses it at once", async () => {
    const authz = await authorize(gw.baseUrl, pending.agent, pending.client, { provider_id: "demo", scopes: ["notes:read"] });
    const consented = await consent(String(authz.json.authorization_url));
    const token = await exchange(gw.baseUrl, pending.agent, pending.client, { code: consented.code!, ath_session_id: String(authz.json.ath_session_id) });
    accessToken = String(token.json.access_token);
    const proxy = () => call(`${gw.baseUrl}/ath/proxy/demo/notes`, { headers: { authorization: `Bearer ${accessToken}` } });
    expect((await proxy()).status).toBe(200);
    const [t] = (await api("/ath/admin/tokens")).json.tokens as { token_id: string; user_id: string }[];

    await page.goto(`${gw.baseUrl}/admin/tokens`);
    expect(await row(t!.token_id).locator("td[data-label=State]").textContent()).toBe("active");
    expect(await page.content()).not.toContain(accessToken);
    await screenshots(page, "admin-tokens");
    await press(row(t!.token_id).getByRole("button", { name: "Revoke", exact: true }));
    expect(await page.getByRole("status").textContent()).toBe("1 token(s) revoked.");
    expect(await row(t!.token_id).locator("td[data-label=State]").textContent()).toBe("revoked");
    const refused = await proxy();
    expect(refused.status).toBe(401);
    expect(refused.json.code).toBe("TOKEN_REVOKED");
  });

  test("the filters narrow the list (state, user) and keep their values", async () => {
    await page.goto(`${gw.baseUrl}/admin/tokens`);
    await page.selectOption("#state", "active");
    await press(page.getByRole("button", { name: "Filter" }));
    expect(new URL(page.url()).searchParams.get("state")).toBe("active");
    expect(await page.locator("table.list").count()).toBe(0);
    expect(await page.locator("p.hint").last().textContent()).toBe("No tokens match.");
    await page.selectOption("#state", "revoked");
    await press(page.getByRole("button", { name: "Filter" }));
    expect(await page.locator("td[data-label=State]").allTextContents()).toEqual(["revoked"]);
    expect(await page.locator("#state").inputValue()).toBe("revoked");
  });
});

describe("an agent's approval rules, policy and budgets", () => {
  let accessToken = "";
  const id = () => pending.client.client_id;
  const proxy = (query = "") => call(`${gw.baseUrl}/ath/proxy/demo/notes${query}`, { headers: { authorization: `Bearer ${accessToken}` } });
  const agentUrl = () => `${gw.baseUrl}/admin/agents/${id()}`;
  const save = async (list: "approval_rules" | "policy" | "budgets", json: string, button: string) => {
    await page.fill(`#json-${list}`, json);
    const [res] = await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: button }).click()]);
    return res!;
  };

  beforeAll(async () => {
    const authz = await authorize(gw.baseUrl, pending.agent, pending.client, { provider_id: "demo", scopes: ["notes:read"] });
    const consented = await consent(String(authz.json.authorization_url));
    const token = await exchange(gw.baseUrl, pending.agent, pending.client, { code: consented.code!, ath_session_id: String(authz.json.ath_session_id) });
    accessToken = String(token.json.access_token);
  });

  test("the agent's row links to its page; a policy saved there applies at the proxy at once", async () => {
    await page.goto(`${gw.baseUrl}/admin/agents`);
    await press(row(id()).getByRole("link", { name: "Rules, policy, budgets" }));
    expect(new URL(page.url()).pathname).toBe(`/admin/agents/${id()}`);
    expect(await page.locator("#json-policy").inputValue()).toBe("[]");
    expect((await proxy("?mode=danger")).status).toBe(200);

    const rule = { match: ["GET /notes"], when: '"mode" in request.query && request.query["mode"][0] == "danger"', action: "deny", reason: HOSTILE };
    const res = await save("policy", JSON.stringify([rule]), "Save policy rules");
    expect(res.status()).toBe(200);
    expect(await page.getByRole("status").textContent()).toBe("Policy rules saved.");
    const saved = [{ ...rule, approver: "user", ttl: 300 }];
    expect((await api(`/ath/admin/agents/${id()}`)).json.policy).toEqual(saved);
    // the page shows the saved policy back, the hostile reason as inert text
    expect(JSON.parse(await page.locator("#json-policy").inputValue())).toEqual(saved);
    expect(await page.locator("script, img").count()).toBe(0);
    expect(dialogs).toEqual([]);
    await screenshots(page, "admin-agent-policy");

    const denied = await proxy("?mode=danger");
    expect({ status: denied.status, code: denied.json.code }).toEqual({ status: 403, code: "POLICY_DENIED" });
    expect(denied.json.details).toMatchObject({ reason: HOSTILE, rule: { from: "agent", index: 0 } });
    expect((await proxy("?mode=calm")).status).toBe(200);
  });

  test("a `when` that does not compile is shown on the page naming the rule, the text kept as sent; the saved policy stays", async () => {
    await page.goto(agentUrl());
    const before = (await api(`/ath/admin/agents/${id()}`)).json.policy;
    const sent = JSON.stringify([{ match: ["GET /notes"], action: "allow" }, { match: ["GET /notes"], when: 'request.method == "<b>x</b>" &&', action: "deny" }]);
    const res = await save("policy", sent, "Save policy rules");
    expect(res.status()).toBe(400);
    const alert = await page.locator("#policy").getByRole("alert").textContent();
    expect(alert).toContain("policy.1.when");
    expect(await page.locator("#json-policy").inputValue()).toBe(sent);
    expect(await page.locator("script, img, b").count()).toBe(0);
    expect((await api(`/ath/admin/agents/${id()}`)).json.policy).toEqual(before);
    await screenshots(page, "admin-agent-policy-error");
    // not JSON, and a field the schema refuses: shown the same way
    expect((await save("policy", "[{", "Save policy rules")).status()).toBe(400);
    expect(await page.locator("#policy").getByRole("alert").textContent()).toContain("not valid JSON");
    expect((await save("budgets", JSON.stringify([{ match: ["GET /notes"], limit: 1, window: "1w" }]), "Save budgets")).status()).toBe(400);
    expect(await page.locator("#budgets").getByRole("alert").textContent()).toContain("budgets.0.window");
    expect((await api(`/ath/admin/agents/${id()}`)).json.budgets).toEqual([]);
  });

  test("budgets and approval rules are saved the same way; an empty list clears", async () => {
    await page.goto(agentUrl());
    await save("policy", "[]", "Save policy rules");
    expect((await api(`/ath/admin/agents/${id()}`)).json.policy).toEqual([]);
    expect((await save("budgets", JSON.stringify([{ match: ["GET /notes"], limit: 1, window: "1h" }]), "Save budgets")).status()).toBe(200);
    expect(await page.getByRole("status").textContent()).toBe("Budgets saved.");
    expect((await proxy()).status).toBe(200);
    const over = await proxy();
    expect({ status: over.status, code: over.json.code }).toEqual({ status: 429, code: "BUDGET_EXHAUSTED" });
    await save("budgets", "", "Save budgets");
    expect((await api(`/ath/admin/agents/${id()}`)).json.budgets).toEqual([]);
    expect((await proxy()).status).toBe(200);
    await save("approval_rules", JSON.stringify([{ match: ["GET /notes"], approver: "admin" }]), "Save approval rules");
    expect(await page.getByRole("status").textContent()).toBe("Approval rules saved.");
    expect((await proxy()).json.code).toBe("APPROVAL_REQUIRED");
    await save("approval_rules", "[]", "Save approval rules");
    expect((await proxy()).status).toBe(200);
  });

  test("a forged or missing CSRF token is refused and changes nothing; without a session, 401; an unknown list 404", async () => {
    const url = `${agentUrl()}/policy`;
    const deny = JSON.stringify([{ match: ["GET /notes"], action: "deny" }]);
    for (const form of [{ json: deny, csrf: "0".repeat(64) }, { json: deny }] as Record<string, string>[]) {
      const res = await page.request.post(url, { form, maxRedirects: 0 });
      expect(res.status()).toBe(400);
      expect(await res.text()).toContain("did not come from this console");
    }
    expect((await call(url, { form: { json: deny } })).status).toBe(401);
    expect((await api(`/ath/admin/agents/${id()}`)).json.policy).toEqual([]);
    expect((await proxy()).status).toBe(200);
    await page.goto(agentUrl());
    const csrf = await page.locator("#policy input[name=csrf]").inputValue();
    expect((await page.request.post(`${agentUrl()}/scope_rules`, { form: { json: "[]", csrf }, maxRedirects: 0 })).status()).toBe(404);
    expect((await page.goto(`${gw.baseUrl}/admin/agents/no-such-agent`))!.status()).toBe(404);
  });
});

describe("providers and audit", () => {
  test("providers are listed; Remove removes one", async () => {
    const entry = {
      provider_id: "extra",
      display_name: "Extra <i>Mail</i>",
      available_scopes: ["x:read"],
      authorize_endpoint: "https://auth.example/authorize",
      token_endpoint: "https://auth.example/token",
      api_base_url: "https://api.example",
      client_id: "cid",
      client_secret: "very-secret-value",
    };
    expect((await api("/ath/admin/providers", { json: entry })).status).toBe(201);
    await page.goto(`${gw.baseUrl}/admin/providers`);
    expect(await page.locator("td[data-label=Provider]").allTextContents()).toEqual(expect.arrayContaining(["demo", "extra"]));
    expect(await row("extra").locator("td[data-label=Name]").textContent()).toBe("Extra <i>Mail</i>");
    expect(await page.content()).not.toContain("very-secret-value");
    await screenshots(page, "admin-providers");
    await press(row("extra").getByRole("button", { name: "Remove" }));
    expect(await page.getByRole("status").textContent()).toBe("Provider removed.");
    expect(await page.locator("td[data-label=Provider]").allTextContents()).toEqual(["demo"]);
  });

  test("the audit page lists the latest events; the type filter narrows it", async () => {
    await page.goto(`${gw.baseUrl}/admin/audit`);
    const types = await page.locator("td[data-label=Type]").allTextContents();
    for (const t of ["admin.signin", "admin.signin_failed", "agent.approved", "token.revoked", "provider.deleted"]) expect(types).toContain(t);
    await screenshots(page, "admin-audit");
    await page.fill("#f-type", "admin.signin_failed");
    await press(page.getByRole("button", { name: "Filter" }));
    expect(await page.locator("td[data-label=Type]").allTextContents()).toEqual(["admin.signin_failed"]);
    expect(await page.locator("#f-type").inputValue()).toBe("admin.signin_failed");
    // a bad filter is an error page, not a crash
    const bad = await page.goto(`${gw.baseUrl}/admin/audit?since=yesterday`);
    expect(bad!.status()).toBe(400);
  });

  test("a flash message is shown only if it is one of the console's own", async () => {
    await page.goto(`${gw.baseUrl}/admin/agents?done=${encodeURIComponent("Your account is locked: call 555-0100.")}`);
    expect(await page.getByRole("status").count()).toBe(0);
  });
});

describe("on a phone", () => {
  test("every page fits 390 px without sideways scrolling", async () => {
    await page.setViewportSize(VIEWPORTS.phone);
    try {
      for (const path of ["/admin", "/admin/agents", `/admin/agents/${pending.client.client_id}`, "/admin/tokens", "/admin/providers", "/admin/audit"]) {
        await page.goto(`${gw.baseUrl}${path}`);
        const width = await page.evaluate(() => document.documentElement.scrollWidth);
        expect({ path, width }).toEqual({ path, width: 390 });
      }
    } finally {
      await page.setViewportSize(VIEWPORTS.desktop);
    }
  });
});

describe("signing out, and the sign-in limit", () => {
  test("Sign out ends the session: the old cookie no longer opens a page", async () => {
    await page.goto(`${gw.baseUrl}/admin`);
    const old = (await context.cookies()).find((c) => c.name === "ath_admin")!.value;
    await press(page.getByRole("button", { name: "Sign out" }));
    expect(new URL(page.url()).pathname).toBe("/admin/signin");
    const res = await call(`${gw.baseUrl}/admin/agents`, { headers: { cookie: `ath_admin=${old}` } });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/admin/signin");
  });

  test("sign-in attempts are limited per address: past the limit even the right token is refused (429)", async () => {
    const attempt = async (token: string) => {
      const b = new HttpBrowser();
      const signin = await b.navigate(`${gw.baseUrl}/admin/signin`);
      return b.submit(signin, formWithButton(signin, "Sign in"), { fields: { token } });
    };
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await attempt("wrong")).status);
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThan(0);
    const blocked = await attempt(gw.adminToken);
    expect(blocked.status).toBe(429);
    expect(blocked.body).toContain("Too many sign-in attempts");
  });
});

/** Clicks a submit button and waits for the page it leads to. */
async function press(button: ReturnType<Page["getByRole"]>): Promise<void> {
  await Promise.all([page.waitForNavigation(), button.click()]);
}
