/**
 * The webhook admin API and its target check (DESIGN §20): 201 with the subscription (never the secret, which is
 * stored sealed), list, delete; malformed input is a JSON 400; targets are https with public addresses — http only to
 * loopback with --dev, private addresses only with --dev, no credentials.
 */
import { afterEach, expect, test } from "bun:test";
import { checkWebhookTarget, signature } from "../../../../src/gateway/domain/webhooks.ts";
import { formWithButton } from "../../../helpers/browser.ts";
import { ADMIN_TOKEN, BASE, inProcessGateway, type InProcess } from "../../../helpers/in-process.ts";

let g: InProcess | undefined;
afterEach(async () => {
  await g?.close();
  g = undefined;
});

const admin = (g: InProcess, method: string, path: string, body?: unknown) =>
  g.fetch(path, { method, headers: { "x-ath-user-token": ADMIN_TOKEN, "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

test("subscribe → 201 without the secret (stored sealed), list, delete; unknown id 404", async () => {
  g = await inProcessGateway();
  const secret = "a-webhook-secret-of-some-length";
  const res = await admin(g, "POST", "/ath/admin/webhooks", { url: "http://127.0.0.1:9/hook", events: ["token.revoked", "approval.decided"], secret });
  expect(res.status).toBe(201);
  const text = await res.text();
  expect(text).not.toContain(secret);
  const hook = JSON.parse(text);
  expect(hook).toEqual({ webhook_id: expect.stringMatching(/^ath_wh_/), url: "http://127.0.0.1:9/hook", events: ["token.revoked", "approval.decided"], created_at: expect.any(String) });
  const [stored] = await g.gw.store.listWebhooks();
  expect(stored!.secret_sealed).not.toContain(secret);
  expect(await (await admin(g, "GET", "/ath/admin/webhooks")).json()).toEqual({ webhooks: [hook] });
  expect(await (await admin(g, "DELETE", `/ath/admin/webhooks/${hook.webhook_id}`)).json()).toEqual({ webhook_id: hook.webhook_id, deleted: true });
  const again = await admin(g, "DELETE", `/ath/admin/webhooks/${hook.webhook_id}`);
  expect(again.status).toBe(404);
  expect((await again.json()).code).toBe("NOT_FOUND");
});

test("malformed subscriptions are JSON 400s, never a 500", async () => {
  g = await inProcessGateway();
  const ok = { url: "http://127.0.0.1:9/hook", events: ["token.issued"], secret: "0123456789abcdef" };
  for (const body of [{}, { ...ok, secret: "short" }, { ...ok, events: [] }, { ...ok, events: ["token.exploded"] }, { ...ok, url: "not a url" }, { ...ok, url: "ftp://127.0.0.1/x" }, { ...ok, extra: 1 }, [ok]]) {
    const res = await admin(g, "POST", "/ath/admin/webhooks", body);
    expect(res.status).toBe(400);
    expect((await res.json()).code).toBe("INVALID_REQUEST");
  }
  expect((await g.fetch("/ath/admin/webhooks")).status).toBe(401);
});

test("targets: https with public addresses; http only to loopback with --dev; private only with --dev; no credentials", async () => {
  const resolve = (map: Record<string, string[]>) => async (host: string) => {
    if (!map[host]) throw new Error("NXDOMAIN");
    return map[host]!;
  };
  const dns = resolve({ "hooks.example": ["93.184.216.34"], "inside.example": ["10.1.2.3"], "mixed.example": ["93.184.216.34", "127.0.0.1"] });
  expect(await checkWebhookTarget("https://hooks.example/x", false, dns)).toBeNull();
  expect(await checkWebhookTarget("https://inside.example/x", false, dns)).toContain("private");
  expect(await checkWebhookTarget("https://inside.example/x", true, dns)).toBeNull();
  expect(await checkWebhookTarget("https://mixed.example/x", false, dns)).toContain("loopback");
  expect(await checkWebhookTarget("http://127.0.0.1:8080/x", false, dns)).toContain("http://");
  expect(await checkWebhookTarget("http://127.0.0.1:8080/x", true, dns)).toBeNull();
  expect(await checkWebhookTarget("http://hooks.example/x", true, dns)).toContain("http://");
  expect(await checkWebhookTarget("https://user:pw@hooks.example/x", false, dns)).toContain("credentials");
  expect(await checkWebhookTarget("https://nowhere.example/x", false, dns)).toContain("does not resolve");
  expect(await checkWebhookTarget("https://[::1]/x", false, dns)).toContain("loopback");
  expect(signature("s3cret", 1700000000, '{"a":1}')).toBe(
    `t=1700000000,v1=${new Bun.CryptoHasher("sha256", "s3cret").update('1700000000.{"a":1}').digest("hex")}`,
  );
});

test("the console lists webhooks (every value escaped) and removes one, behind sign-in and CSRF", async () => {
  g = await inProcessGateway();
  const url = "http://127.0.0.1:9/hook?a=<b>&c=\"d\"";
  const created = await (await admin(g, "POST", "/ath/admin/webhooks", { url, events: ["token.revoked"], secret: "0123456789abcdef-secret" })).json();
  const browser = g.browser();
  let page = await browser.navigate(`${BASE}/admin/webhooks`);
  expect(new URL(page.url).pathname).toBe("/admin/signin");
  page = await browser.submit(page, formWithButton(page, "Sign in"), { fields: { token: ADMIN_TOKEN } });
  page = await browser.navigate(`${BASE}/admin/webhooks`);
  expect(page.status).toBe(200);
  expect(page.body).toContain(created.webhook_id);
  expect(page.body).toContain("http://127.0.0.1:9/hook?a=&lt;b&gt;&amp;c=&quot;d&quot;");
  expect(page.body).not.toContain("<b>");
  expect(page.body).not.toContain("0123456789abcdef-secret");
  page = await browser.submit(page, formWithButton(page, "Remove"));
  expect(page.body).toContain("Webhook removed.");
  expect(await g.gw.store.listWebhooks()).toEqual([]);
  // without the CSRF token the form is refused
  const forged = await g.fetch(`/admin/webhooks/${created.webhook_id}/remove`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "" });
  expect(forged.status).toBeGreaterThanOrEqual(400);
});
