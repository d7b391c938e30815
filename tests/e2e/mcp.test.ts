/**
 * `ath mcp` as an MCP host sees it: the official SDK's Client + StdioClientTransport spawning the compiled
 * `dist/ath mcp` against a real `dist/ath serve` with oidc-provider upstream and the sample API. The person's part
 * is played by the HTTP test browser (tests/helpers/agent.ts `consent`); tests/browser/mcp-host.test.ts does it
 * in Chromium, with and without URL elicitation. Every failure is a tool result: the server keeps answering.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
// the SDK 2.x writes its schemas as JSON Schema 2020-12 (MCP 2025-11-25: the default dialect)
import Ajv from "ajv/dist/2020";
import { consent } from "../helpers/agent.ts";
import { ensureBinary, readUntil } from "../helpers/cli-binary.ts";
import { athError, startHost, textOf, type Host } from "../helpers/mcp-host.ts";
import { tempDir } from "../helpers/net.ts";
import { startWorld, type World } from "../helpers/world.ts";

const TOOLS = ["ath_authorize", "ath_providers", "ath_request", "ath_revoke", "ath_status", "ath_token"];
const MiB = 1024 * 1024;

let w: World;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  w = await startWorld({
    binary: true,
    // the mail upstream again, but an admin approves each agent first (DESIGN §9)
    providers: (auth, api) => ({
      mailmanual: {
        display_name: "Sample Mail (approved by an admin)",
        available_scopes: ["openid", "mail:read"],
        authorize_endpoint: auth.authorizeEndpoint,
        token_endpoint: auth.tokenEndpoint,
        api_base_url: api.baseUrl,
        client_id: auth.basicClient.client_id,
        client_secret: auth.basicClient.client_secret,
        token_endpoint_auth_method: "client_secret_basic",
        approval: "manual",
      },
    }),
  });
}, 120_000);
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await w?.stop();
});

/** A fresh agent home and `ath mcp -g <gateway>` serving it. */
async function host(args?: string[]): Promise<{ host: Host; home: string }> {
  const home = await tempDir("mcp-home");
  const h = await startHost({ home: home.path, args: args ?? ["-g", w.baseUrl] });
  cleanups.push(async () => {
    await h.close();
    await home.remove();
  });
  return { host: h, home: home.path };
}

/** ath_authorize, the person approves (following the redirect to the loopback receiver), ath_token collects. */
async function authorized(h: Host, provider: string, scopes: string[]): Promise<Record<string, any>> {
  const started = await h.call("ath_authorize", { provider, scopes });
  expect(started.isError).toBeUndefined();
  expect(started.structuredContent).toMatchObject({ status: "pending", provider_id: provider, scopes });
  const c = await consent(String(started.structuredContent?.authorization_url));
  expect(c.page.body).toContain("Authorization complete");
  const done = await h.call("ath_token", { provider, wait_seconds: 30 });
  expect(done.isError).toBeUndefined();
  return done.structuredContent ?? {};
}

async function credentials(home: string): Promise<any> {
  return JSON.parse(await readFile(join(home, "credentials.json"), "utf8"));
}

describe("ath mcp — tools/list", () => {
  test("the six tools, each with an input and an output JSON Schema that compiles, a title and a description", async () => {
    const { host: h } = await host();
    const { tools } = await h.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(TOOLS);
    const ajv = new Ajv({ strict: false });
    for (const t of tools) {
      expect({ tool: t.name, input: t.inputSchema.type, output: t.outputSchema?.type }).toEqual({ tool: t.name, input: "object", output: "object" });
      expect(() => ajv.compile(t.inputSchema)).not.toThrow();
      expect(() => ajv.compile(t.outputSchema as object)).not.toThrow();
      expect(t.title ?? "").not.toBe("");
      expect((t.description ?? "").length).toBeGreaterThan(20);
    }
    const request = tools.find((t) => t.name === "ath_request")!;
    expect(request.inputSchema.required).toEqual(["provider", "method", "path"]);
    expect(Object.keys(request.inputSchema.properties ?? {}).sort()).toEqual(["approval_id", "body", "headers", "method", "path", "provider", "query", "wait_seconds"]);
    expect(Object.keys((request.outputSchema as { properties: object }).properties).sort()).toEqual(["body", "body_encoding", "headers", "status", "truncated"]);
    const info = h.client.getServerVersion();
    expect(info).toMatchObject({ name: "ath", version: "0.1.0" });
  });

  test("ath_providers and ath_status answer structured content that matches their output schemas (checked by the SDK client)", async () => {
    const { host: h, home } = await host();
    const providers = await h.call("ath_providers");
    expect(providers.isError).toBeUndefined();
    expect(providers.structuredContent).toMatchObject({ gateway: w.baseUrl, agent_id: null, registered: false });
    const mail = providers.structuredContent?.providers.find((p: { provider_id: string }) => p.provider_id === "mail");
    expect(mail).toEqual({ provider_id: "mail", display_name: "Sample Mail", available_scopes: ["openid", "offline_access", "mail:read", "mail:send"], approved_scopes: [], token_held: false });
    expect(textOf(providers)).toContain("mail (Sample Mail)");
    const status = await h.call("ath_status");
    expect(status.structuredContent).toMatchObject({ home, registrations: [], identity: { agent_id: null, key_exists: false } });
  });
});

describe("ath mcp — the whole flow without elicitation (the host shows the URL)", () => {
  let h: Host;
  let home: string;

  beforeAll(async () => {
    ({ host: h, home } = await host());
  });

  test("ath_authorize registers first, answers pending with the consent URL; the approval reaches the loopback receiver; ath_token answers authorized", async () => {
    const started = await h.call("ath_authorize", { provider: "mail", scopes: ["openid", "mail:read", "mail:send"] });
    expect(started.structuredContent).toMatchObject({ status: "pending", gateway: w.baseUrl, provider_id: "mail", registered_now: true });
    expect(String(started.structuredContent?.authorization_url)).toStartWith(`${w.baseUrl}/ath/consent/`);
    expect(String(started.structuredContent?.ath_session_id)).toStartWith("ath_sess_");
    expect(textOf(started)).toContain(String(started.structuredContent?.authorization_url));
    expect(textOf(started)).toContain("ath_token");
    // the pending session is saved in the home, as `ath authorize` saves it
    const reg = Object.values((await credentials(home)).gateways[w.baseUrl].agents)[0] as { pending: Record<string, unknown> };
    expect(Object.keys(reg.pending)).toEqual([started.structuredContent?.ath_session_id]);

    const c = await consent(String(started.structuredContent?.authorization_url));
    expect(c.page.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
    const done = await h.call("ath_token", { provider: "mail", wait_seconds: 30 });
    expect(done.structuredContent).toMatchObject({ status: "authorized", gateway: w.baseUrl, provider_id: "mail", effective_scopes: ["openid", "mail:read", "mail:send"] });
    expect(Date.parse(String(done.structuredContent?.expires_at))).toBeGreaterThan(Date.now());
    // the host never sees the ATH token
    expect(JSON.stringify(done)).not.toContain("ath_tk_");
    // asked again, the saved token is the answer
    expect((await h.call("ath_token", { provider: "mail" })).structuredContent).toMatchObject({ status: "authorized", provider_id: "mail" });
    const providers = await h.call("ath_providers");
    expect(providers.structuredContent?.providers.find((p: { provider_id: string }) => p.provider_id === "mail")).toMatchObject({ token_held: true, approved_scopes: ["openid", "mail:read", "mail:send"] });
  });

  test("ath_authorize again for what the live token allows answers authorized at once: the person is not asked again", async () => {
    for (const args of [{ provider: "mail" }, { provider: "mail", scopes: ["mail:read"] }]) {
      const r = await h.call("ath_authorize", args);
      expect(r.structuredContent).toMatchObject({ status: "authorized", provider_id: "mail", effective_scopes: ["openid", "mail:read", "mail:send"] });
    }
    const reg = Object.values((await credentials(home)).gateways[w.baseUrl].agents)[0] as { pending: Record<string, unknown> };
    expect(reg.pending).toEqual({});
  });

  test("the CLI sees what the MCP server saved: same home, same key, same credentials", async () => {
    const { ath } = await import("../helpers/processes.ts");
    const r = await ath(["proxy", "-g", w.baseUrl, "mail", "GET", "/v1/messages"], { env: { ATH_HOME: home, HOME: home } });
    expect(r.stdout).toContain('"subject":"hello"');
  });

  test("ath_request GET: {status, headers, body} with the JSON body parsed and the upstream's headers", async () => {
    const r = await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/messages", query: { limit: "5", tag: ["a", "b"] } });
    expect(r.isError).toBeUndefined();
    expect(r.structuredContent).toMatchObject({ status: 200, body: { messages: [{ id: "m1", subject: "hello" }], query: "?limit=5&tag=a&tag=b" } });
    expect(r.structuredContent?.headers["x-upstream"]).toBe("sample-api");
    expect(textOf(r)).toStartWith("GET /v1/messages?limit=5&tag=a&tag=b → HTTP 200");
    expect(textOf(r)).toContain('"subject":"hello"');
  });

  test("ath_request POST: a JSON body is sent as application/json, a string as is, extra headers pass, the upstream sees no ATH token", async () => {
    w.api.clear();
    const json = await h.call("ath_request", { provider: "mail", method: "POST", path: "/v1/echo", body: { title: "hi", n: 1 }, headers: { "X-Trace": "t-1" } });
    expect(json.structuredContent?.status).toBe(200);
    const echoed = json.structuredContent?.body;
    expect(echoed).toMatchObject({ method: "POST", body: '{"title":"hi","n":1}' });
    expect(echoed.headers).toMatchObject({ "content-type": "application/json", "x-trace": "t-1" });
    const raw = await h.call("ath_request", { provider: "mail", method: "PUT", path: "/v1/echo", body: "plain words", headers: { "content-type": "text/plain" } });
    expect(raw.structuredContent?.body).toMatchObject({ method: "PUT", body: "plain words" });
    expect(w.api.requests.every((q) => !JSON.stringify(q.headers).includes("ath_tk_"))).toBe(true);
  });

  test("an upstream answer ≥ 400 is a normal result, not a tool error", async () => {
    const missing = await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/nothing-here" });
    expect(missing.isError).toBeUndefined();
    expect(missing.structuredContent).toMatchObject({ status: 404, body: { error: "not_found" } });
    const limited = await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/ratelimited" });
    expect(limited.isError).toBeUndefined();
    expect(limited.structuredContent).toMatchObject({ status: 429, headers: { "retry-after": "7" } });
  });

  test("a binary body comes as base64 with body_encoding; a body over 1 MiB is cut there and flagged truncated", async () => {
    const bin = await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/bytes", query: { size: "300", kind: "binary" } });
    expect(bin.structuredContent).toMatchObject({ status: 200, body_encoding: "base64" });
    const bytes = Buffer.from(String(bin.structuredContent?.body), "base64");
    expect([...bytes]).toEqual(Array.from({ length: 300 }, (_, i) => (i * 37 + 0x80) & 0xff));
    expect(bin.structuredContent?.truncated).toBeUndefined();

    const big = await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/bytes", query: { size: String(3 * MiB) } });
    expect(big.structuredContent).toMatchObject({ status: 200, truncated: true });
    expect(String(big.structuredContent?.body).length).toBe(MiB);
    expect(String(big.structuredContent?.body).slice(990, 1000)).toBe("cdefghijk#");
    const exact = await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/bytes", query: { size: String(MiB) } });
    expect(exact.structuredContent?.truncated).toBeUndefined();
    expect(String(exact.structuredContent?.body).length).toBe(MiB);
    const bigBinary = await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/bytes", query: { size: String(2 * MiB), kind: "binary" } });
    expect(bigBinary.structuredContent).toMatchObject({ truncated: true, body_encoding: "base64" });
    expect(Buffer.from(String(bigBinary.structuredContent?.body), "base64").length).toBe(MiB);
  });

  test("a call the host cancels (notifications/cancelled) is not a failure of the server: the next call is answered", async () => {
    const slow = h.client.callTool({ name: "ath_request", arguments: { provider: "mail", method: "GET", path: "/v1/slow", query: { ms: "3000" } } }, undefined, { signal: AbortSignal.timeout(200) });
    await expect(slow).rejects.toThrow();
    const next = await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/messages" });
    expect(next.structuredContent?.status).toBe(200);
    expect(h.stderr()).not.toContain("unexpected error");
  });

  test("20 concurrent ath_request calls all answer, each with its own result", async () => {
    const calls = Array.from({ length: 20 }, (_, i) => h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/messages", query: { n: String(i) } }));
    const results = await Promise.all(calls);
    expect(results.map((r) => [r.isError, r.structuredContent?.status, r.structuredContent?.body.query])).toEqual(
      Array.from({ length: 20 }, (_, i) => [undefined, 200, `?n=${i}`]),
    );
  });
});

describe("ath mcp — refusals and mistakes are tool errors; the server keeps serving", () => {
  test("bad arguments: a schema violation, an own header, a body on GET, an unknown tool", async () => {
    const { host: h } = await host();
    for (const [name, args, expected] of [
      ["ath_request", { provider: "mail", method: "G ET", path: "/x" }, "method"],
      ["ath_request", { provider: "mail", method: "TRACE", path: "/x" }, "method"],
      ["ath_request", { provider: "mail", method: "GET", path: "no-slash" }, "path"],
      ["ath_request", { provider: "mail", method: "GET" }, "path"],
      ["ath_request", { provider: "mail", method: "GET", path: "/", headers: { "bad name": "x" } }, "headers.bad name"],
      ["ath_request", { provider: "mail", method: "GET", path: "/", headers: { "x-a": "line\r\nbreak" } }, "control"],
      ["ath_authorize", { provider: "" }, "provider"],
      ["ath_authorize", { provider: "mail", wait_seconds: 601 }, "wait_seconds"],
    ] as const) {
      const r = await h.call(name, args);
      expect({ name, args, isError: r.isError, text: textOf(r) }).toEqual({ name, args, isError: true, text: expect.stringContaining(expected) });
    }
    for (const [args, message] of [
      [{ provider: "mail", method: "GET", path: "/", headers: { Authorization: "Bearer x" } }, "cannot be given"],
      [{ provider: "mail", method: "GET", path: "/", headers: { "X-ATH-Agent-ID": "x" } }, "cannot be given"],
      [{ provider: "mail", method: "GET", path: "/", body: { a: 1 } }, "cannot be sent with GET"],
    ] as const) {
      expect(athError(await h.call("ath_request", args))).toMatchObject({ code: "USAGE", message: expect.stringContaining(message) });
    }
    expect(athError(await h.call("ath_revoke", {}))).toMatchObject({ code: "USAGE" });
    // an unknown tool is a protocol error (MCP 2025-11-25, "Error Handling": -32602), not a tool's result
    await expect(h.call("ath_nothing")).rejects.toMatchObject({ code: -32602 });
    expect((await h.call("ath_status")).isError).toBeUndefined();
  });

  test("no token yet: NO_TOKEN (not registered: NOT_REGISTERED) naming ath_authorize as the next step", async () => {
    const { host: h } = await host();
    const r = await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/messages" });
    expect(athError(r).code).toBe("NOT_REGISTERED");
    expect(textOf(r)).toContain('Next: call ath_authorize {"provider":"mail"}');
    expect(athError(await h.call("ath_token", { provider: "mail" })).code).toBe("NOT_REGISTERED");
  });

  test("a gateway refusal is isError with the ATH code and status: scope_rules refuse a POST the token's scopes do not allow", async () => {
    const { host: h } = await host();
    await authorized(h, "mailrules", ["openid", "mail:read"]);
    expect((await h.call("ath_request", { provider: "mailrules", method: "GET", path: "/v1/messages" })).structuredContent?.status).toBe(200);
    w.api.clear();
    const refused = await h.call("ath_request", { provider: "mailrules", method: "POST", path: "/v1/messages", body: { to: "x" } });
    expect(athError(refused)).toMatchObject({ code: "SCOPE_NOT_APPROVED", status: 403 });
    expect(textOf(refused)).toStartWith("SCOPE_NOT_APPROVED: POST ");
    // the scope it needs, and the call that gets a token with it (issue 25)
    expect((athError(refused).details as { needed_scopes: string[] }).needed_scopes).toEqual(["mail:send"]);
    expect(textOf(refused)).toContain('Next: this request needs the scope mail:send, which the token lacks: call ath_authorize {"provider":"mailrules","scopes":["openid","mail:read","mail:send"]}');
    expect(w.api.requests).toEqual([]); // never reached the upstream
  });

  test("a provider the gateway does not offer: UNKNOWN_PROVIDER naming ath_providers, not ath_authorize", async () => {
    const { host: h } = await host();
    await authorized(h, "mail", ["openid"]);
    const r = await h.call("ath_request", { provider: "maill", method: "GET", path: "/v1/messages" });
    expect(athError(r)).toMatchObject({ code: "UNKNOWN_PROVIDER", details: { provider_id: "maill" } });
    expect(athError(r).message).toContain('(did you mean "mail"?)');
    expect(textOf(r)).toContain("Next: this gateway does not offer that provider: call ath_providers");
    expect(textOf(r)).not.toContain("ath_authorize");
  });

  test("a provider the agent is not approved for: the gateway's refusal at authorize is the tool error", async () => {
    const { host: h } = await host();
    await authorized(h, "mail", ["openid"]);
    const r = await h.call("ath_authorize", { provider: "calendar", scopes: ["calendar:read"] });
    expect(athError(r)).toMatchObject({ code: "PROVIDER_NOT_APPROVED", status: 403, details: { provider_id: "calendar" } });
    // without scopes there is nothing approved to ask for: a usage error naming the fix
    expect(athError(await h.call("ath_authorize", { provider: "calendar" }))).toMatchObject({ code: "USAGE", message: expect.stringContaining("no scopes for calendar") });
  });

  test("an agent awaiting the admin's approval: AGENT_UNAPPROVED naming the admin; once approved, the same call proceeds", async () => {
    const { host: h, home } = await host();
    const r = await h.call("ath_authorize", { provider: "mailmanual", scopes: ["openid", "mail:read"] });
    expect(athError(r)).toMatchObject({ code: "AGENT_UNAPPROVED", status: 403 });
    expect(textOf(r)).toContain("Next: the gateway's admin must approve this agent");
    const status = await h.call("ath_status");
    expect(status.structuredContent?.registrations[0]).toMatchObject({ gateway: w.baseUrl, agent_status: "pending", pending: [] });
    const clientId = (Object.values((await credentials(home)).gateways[w.baseUrl].agents)[0] as { client_id: string }).client_id;
    const approved = await fetch(`${w.baseUrl}/ath/admin/agents/${clientId}`, {
      method: "PATCH",
      headers: { "content-type": "application/json", "x-ath-user-token": w.gw.adminToken },
      body: JSON.stringify({ status: "approved" }),
    });
    expect(approved.status).toBe(200);
    const again = await h.call("ath_authorize", { provider: "mailmanual", scopes: ["openid", "mail:read"] });
    expect(again.structuredContent).toMatchObject({ status: "pending", provider_id: "mailmanual" });
  });

  test("the person denies: ath_token answers USER_DENIED and no token is saved", async () => {
    const { host: h } = await host();
    const started = await h.call("ath_authorize", { provider: "mail", scopes: ["openid"] });
    await consent(String(started.structuredContent?.authorization_url), { gateway: "Deny" });
    const r = await h.call("ath_token", { provider: "mail", wait_seconds: 30 });
    expect(athError(r).code).toBe("USER_DENIED");
    expect(athError(await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/messages" })).code).toBe("NO_TOKEN");
  });

  test("a token revoked elsewhere: ath_request gets TOKEN_REVOKED from the gateway; ath_revoke forgets it; then NO_TOKEN", async () => {
    const { host: h, home } = await host();
    await authorized(h, "mail", ["openid", "mail:read"]);
    const reg = Object.values((await credentials(home)).gateways[w.baseUrl].agents)[0] as { client_id: string; client_secret: string; tokens: Record<string, { access_token: string }> };
    const res = await fetch(`${w.baseUrl}/ath/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: reg.tokens.mail!.access_token, client_id: reg.client_id, client_secret: reg.client_secret }),
    });
    expect(res.status).toBe(200);
    const r = await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/messages" });
    expect(athError(r)).toMatchObject({ code: "TOKEN_REVOKED", status: 401 });
    expect(textOf(r)).toContain('Next: call ath_authorize {"provider":"mail"}');
    const revoked = await h.call("ath_revoke", { provider: "mail" });
    expect(revoked.structuredContent).toEqual({ gateway: w.baseUrl, revoked: ["mail"] });
    expect(athError(await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/messages" })).code).toBe("NO_TOKEN");
    expect((await h.call("ath_providers")).structuredContent?.providers.find((p: { provider_id: string }) => p.provider_id === "mail").token_held).toBe(false);
  });

  test("the gateway goes away mid-session: NETWORK_ERROR tool errors, local tools still answer, and the calls work again once it is back", async () => {
    const { host: h } = await host();
    await authorized(h, "mail", ["openid", "mail:read"]);
    await w.gw.stop();
    try {
      for (const [name, args] of [
        ["ath_request", { provider: "mail", method: "GET", path: "/v1/messages" }],
        ["ath_providers", {}],
        ["ath_authorize", { provider: "calendar", scopes: ["calendar:read"] }],
        ["ath_revoke", { provider: "mail" }],
      ] as const) {
        const r = await h.call(name, args);
        expect({ name, code: athError(r).code }).toEqual({ name, code: "NETWORK_ERROR" });
        expect(textOf(r)).toContain("unreachable");
      }
      const status = await h.call("ath_status");
      expect(status.structuredContent?.registrations[0].tokens[0]).toMatchObject({ provider_id: "mail", expired: false });
    } finally {
      await w.gw.restart();
    }
    const again = await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/messages" });
    expect(again.structuredContent?.status).toBe(200);
  });

  test("no gateway configured: every network tool answers NO_GATEWAY naming the fix; the server starts anyway", async () => {
    const { host: h } = await host([]);
    const r = await h.call("ath_providers");
    expect(athError(r).code).toBe("NO_GATEWAY");
    expect(textOf(r)).toContain("ath mcp -g");
    expect((await h.call("ath_status")).isError).toBeUndefined();
  });
});

describe("ath mcp — the code shown on the page (a browser on another machine)", () => {
  test("ath_authorize {code_on_page} answers pending; the gateway shows the person the code; ath_token {code} saves the token", async () => {
    const { host: h } = await host();
    const started = await h.call("ath_authorize", { provider: "mail", scopes: ["openid", "mail:read"], code_on_page: true });
    expect(started.structuredContent).toMatchObject({ status: "pending", provider_id: "mail" });
    expect(textOf(started)).toContain('ath_token {"code"');
    const c = await consent(String(started.structuredContent?.authorization_url));
    expect(c.code).toMatch(/^ath_code_/);
    expect(c.sessionId).toBe(started.structuredContent?.ath_session_id);
    // the host has nothing to wait for: no loopback receiver runs for this one
    expect(athError(await h.call("ath_token", { provider: "mail", wait_seconds: 1 })).code).toBe("NO_PENDING_SESSION");
    const wrong = await h.call("ath_token", { code: "ath_code_wrong" });
    expect(athError(wrong)).toMatchObject({ code: "INVALID_GRANT", status: 400 });
    const done = await h.call("ath_token", { code: String(c.code) });
    expect(done.structuredContent).toMatchObject({ status: "authorized", provider_id: "mail", effective_scopes: ["openid", "mail:read"] });
    // the same code again: the saved token, marked, nothing sent twice
    expect((await h.call("ath_token", { code: String(c.code) })).structuredContent).toMatchObject({ status: "authorized", already_exchanged: true });
    expect((await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/messages" })).structuredContent?.status).toBe(200);
  });

  test("ath_token without a code while the approval has not come: pending again, with the same URL; a host with a progressToken hears progress while it waits", async () => {
    const { host: h } = await host();
    const started = await h.call("ath_authorize", { provider: "mail", scopes: ["openid"] });
    const again = await h.call("ath_token", { provider: "mail", wait_seconds: 0 });
    expect(again.structuredContent).toMatchObject({ status: "pending", authorization_url: started.structuredContent?.authorization_url });
    const heard: { progress: number; message?: string }[] = [];
    const waited = await h.call("ath_token", { provider: "mail", wait_seconds: 6 }, 60_000, (p) => heard.push(p));
    expect(waited.structuredContent).toMatchObject({ status: "pending" });
    expect(heard[0]).toEqual({ progress: 1, message: "waiting for the person's approval" });
    // the receiver is still listening: the approval that comes now is picked up
    await consent(String(started.structuredContent?.authorization_url));
    expect((await h.call("ath_token", { provider: "mail", wait_seconds: 30 })).structuredContent).toMatchObject({ status: "authorized" });
  });

  test("closing the host's stdin ends the server with exit 0 (no signal needed), and it drops the pending session its wait held", async () => {
    const home = await tempDir("mcp-stdin");
    cleanups.push(home.remove);
    // a bare host, so nothing but the end of stdin can stop the server (the SDK client would SIGTERM after 2 s)
    const p = Bun.spawn([ensureBinary(), "mcp", "-g", w.baseUrl], { env: { PATH: process.env.PATH ?? "", HOME: home.path, ATH_HOME: home.path }, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    const send = (m: object) => p.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...m })}\n`);
    send({ id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bare", version: "1" } } });
    send({ method: "notifications/initialized" });
    send({ id: 2, method: "tools/call", params: { name: "ath_authorize", arguments: { provider: "mail", scopes: ["openid"] } } });
    await p.stdin.flush();
    const answer = await readUntil(p.stdout, /"id":2\}/);
    const sessionId = /"ath_session_id":"(ath_sess_[^"]+)"/.exec(answer.input ?? "")?.[1];
    expect(sessionId).toStartWith("ath_sess_");
    const before = Object.values((await credentials(home.path)).gateways[w.baseUrl].agents)[0] as { pending: Record<string, unknown> };
    expect(Object.keys(before.pending)).toEqual([sessionId as string]);
    await p.stdin.end();
    expect(await p.exited).toBe(0);
    expect(p.signalCode).toBeNull();
    const after = Object.values((await credentials(home.path)).gateways[w.baseUrl].agents)[0] as { pending: Record<string, unknown> };
    expect(after.pending).toEqual({});
  });
});
