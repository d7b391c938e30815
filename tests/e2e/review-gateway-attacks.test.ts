/**
 * Security review regression guards against a running `ath serve`: attacks on the proxy (upstream redirects,
 * request smuggling, hop-by-hop headers), on Phase B in the browser (link forwarding, consent CSRF, callback
 * replay), attestation replay across endpoints, mass assignment at the admin API, and odd JSON that must never
 * reach a 500. Each test states the property that holds today.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { authorize, call, consent, fullFlow, register } from "../helpers/agent.ts";
import { attest, makeAgent } from "../helpers/attestations.ts";
import { Browser, formWithButton } from "../helpers/browser.ts";
import { expectError } from "../helpers/expect-error.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
/** The `redir` provider's API: answers every request with a 302 to the canary, recording what it received. */
let redirecting: ReturnType<typeof Bun.serve>;
const redirectingSeen: Headers[] = [];
let canary: ReturnType<typeof Bun.serve>;
const canaryHits: string[] = [];
let mail: Awaited<ReturnType<typeof fullFlow>>;

beforeAll(async () => {
  canary = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => (canaryHits.push(req.url), new Response("canary")) });
  redirecting = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      redirectingSeen.push(req.headers);
      return new Response(null, { status: 302, headers: { location: `http://127.0.0.1:${canary.port}/stolen` } });
    },
  });
  w = await startWorld({
    providers: (auth) => ({
      redir: {
        display_name: "Redirecting API",
        available_scopes: ["openid", "mail:read"],
        authorize_endpoint: auth.authorizeEndpoint,
        token_endpoint: auth.tokenEndpoint,
        api_base_url: `http://127.0.0.1:${redirecting.port}/api`,
        client_id: auth.postClient.client_id,
        client_secret: auth.postClient.client_secret,
      },
    }),
  });
  mail = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["openid", "mail:read"] });
});
afterAll(async () => {
  await w?.stop();
  await redirecting?.stop(true);
  await canary?.stop(true);
});

/** Writes `request` verbatim on a new connection and returns the status line of the answer. */
function rawStatusLine(request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(w.gw.port, "127.0.0.1");
    let out = "";
    socket.on("connect", () => socket.write(request));
    socket.on("data", (c: Buffer) => (out += c.toString("latin1")));
    socket.on("error", reject);
    socket.on("end", () => resolve(out.split("\r\n")[0] ?? ""));
  });
}

describe("review — proxy", () => {
  test("an upstream 3xx is relayed with its Location and never followed, so the upstream token never reaches the redirect target", async () => {
    const flow = await fullFlow(w.baseUrl, { provider_id: "redir", scopes: ["mail:read"] });
    const before = canaryHits.length;
    const r = await fetch(`${w.baseUrl}/ath/proxy/redir/anything`, { headers: { authorization: `Bearer ${flow.accessToken}` }, redirect: "manual" });
    await r.body?.cancel();
    expect(r.status).toBe(302);
    expect(r.headers.get("location")).toBe(`http://127.0.0.1:${canary.port}/stolen`);
    expect(canaryHits.length).toBe(before);
    const upstreamToken = (redirectingSeen.at(-1)?.get("authorization") ?? "").replace(/^Bearer /, "");
    expect(upstreamToken.length).toBeGreaterThan(10);
    r.headers.forEach((value) => expect(value).not.toContain(upstreamToken));
  });

  test("conflicting Content-Length/Transfer-Encoding and bare CR or LF in a header are refused before anything is forwarded", async () => {
    const auth = `Authorization: Bearer ${mail.accessToken}`;
    const before = w.api.requests.length;
    const smuggled = [
      `POST /ath/proxy/mail/v1/echo HTTP/1.1\r\nHost: x\r\n${auth}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\nGET /ath/proxy/mail/v1/echo?smuggled HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET /ath/proxy/mail/v1/echo HTTP/1.1\r\nHost: x\r\n${auth}\r\nX-Split: a\nX-Injected: 1\r\nConnection: close\r\n\r\n`,
      `GET /ath/proxy/mail/v1/echo HTTP/1.1\r\nHost: x\r\n${auth}\r\nX-Split: a\rX-Injected: 1\r\nConnection: close\r\n\r\n`,
    ];
    for (const request of smuggled) expect(await rawStatusLine(request)).toStartWith("HTTP/1.1 400");
    expect(w.api.requests.slice(before)).toEqual([]);
  });

  test("hop-by-hop headers, headers named in Connection, Proxy-Authorization, Forwarded and X-Forwarded-* are not forwarded", async () => {
    const before = w.api.requests.length;
    const r = await call(`${w.baseUrl}/ath/proxy/mail/v1/echo`, {
      headers: {
        authorization: `Bearer ${mail.accessToken}`,
        connection: "x-private-hop",
        "x-private-hop": "1",
        "proxy-authorization": "Basic c2VjcmV0",
        forwarded: "for=10.0.0.1;host=internal",
        "x-forwarded-for": "10.0.0.1",
        "x-forwarded-host": "internal.example",
        "x-forwarded-proto": "https",
        "keep-alive": "timeout=5",
        "x-kept": "yes",
      },
    });
    expect(r.status).toBe(200);
    const seen = w.api.requests.slice(before)[0]?.headers ?? {};
    for (const h of ["x-private-hop", "proxy-authorization", "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "keep-alive"]) {
      expect({ [h]: seen[h] }).toEqual({ [h]: undefined });
    }
    expect(seen["x-kept"]).toBe("yes");
  });
});

describe("review — Phase B in the browser", () => {
  async function pendingSession() {
    const agent = await makeAgent();
    const reg = await register(w.baseUrl, agent, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    const client = { client_id: String(reg.json.client_id), client_secret: String(reg.json.client_secret) };
    const a = await authorize(w.baseUrl, agent, client, { provider_id: "mail", scopes: ["mail:read"] });
    expect(a.status).toBe(200);
    return { agent, client, url: String(a.json.authorization_url), sessionId: String(a.json.ath_session_id) };
  }

  test("a link previewer opening the consent link first does not lock the person out", async () => {
    const { url } = await pendingSession();
    // chat unfurlers and mail scanners fetch links (GET and HEAD) without the person's cookies
    await fetch(url, { method: "HEAD", headers: { "user-agent": "Slackbot-LinkExpanding 1.0" } });
    await fetch(url, { headers: { "user-agent": "Slackbot-LinkExpanding 1.0" } });
    const person = new Browser();
    const page = await person.navigate(url);
    expect(page.status).toBe(200);
    const done = await person.submit(page, formWithButton(page, "Approve"), { button: "Approve" });
    expect(done.history.some((u) => u.startsWith(w.auth.issuer))).toBe(true);
  });

  test("once a browser has answered the consent page, another can neither open nor approve it", async () => {
    const { url } = await pendingSession();
    const person = new Browser();
    const page = await person.navigate(url);
    const intruder = new Browser();
    const intruderPage = await intruder.navigate(url);
    expect(intruderPage.status).toBe(200); // nobody has answered yet
    const answered = await person.submit(page, formWithButton(page, "Approve"), { button: "Approve" });
    expect(answered.history.some((u) => u.startsWith(w.auth.issuer))).toBe(true);

    const opened = await intruder.navigate(url);
    expect(opened.status).toBe(400);
    expect(opened.body).not.toContain("Approve");
    // the intruder's own form (its own cookie and CSRF token), submitted after the person answered
    const approved = await intruder.submit(intruderPage, formWithButton(intruderPage, "Approve"), { button: "Approve" });
    expect(approved.status).toBe(400);
    expect(approved.history.some((u) => u.startsWith(w.auth.issuer))).toBe(false);
    // and the person's form replayed with the intruder's cookie jar fails its CSRF check
    const replayed = await intruder.submit(page, formWithButton(page, "Approve"), { button: "Approve" });
    expect(replayed.status).toBe(400);
  });

  test("Approve without the page's CSRF token is refused, and the person can still approve afterwards", async () => {
    const { url } = await pendingSession();
    const person = new Browser();
    const page = await person.navigate(url);
    const form = formWithButton(page, "Approve");
    for (const csrf of ["", "0".repeat(64)]) {
      const forged = await person.submit(page, form, { button: "Approve", fields: { csrf } });
      expect(forged.status).toBe(400);
      expect(forged.history.some((u) => u.startsWith(w.auth.issuer))).toBe(false);
    }
    const done = await consent(url, { browser: person });
    expect(done.code).toMatch(/^ath_code_/);
  });

  test("replaying the provider's callback URL after the flow completed issues no second code", async () => {
    const { agent, client, url, sessionId } = await pendingSession();
    const done = await consent(url);
    expect(done.code).toMatch(/^ath_code_/);
    const callbackUrl = done.page.history.find((u) => new URL(u).pathname === "/ath/callback");
    expect(callbackUrl).toBeDefined();
    const replay = await done.browser.navigate(String(callbackUrl));
    expect(replay.status).toBe(400);
    expect(replay.body).not.toMatch(/ath_code_/);
    const token = await call(`${w.baseUrl}/ath/token`, {
      form: {
        grant_type: "authorization_code",
        ...client,
        agent_attestation: await attest(agent, `${w.baseUrl}/ath/token`),
        code: String(done.code),
        ath_session_id: sessionId,
      },
    });
    expect(token.status).toBe(200);
  });
});

describe("review — attestation and admin", () => {
  test("an attestation used at register cannot be replayed at authorize (one jti cache for every endpoint)", async () => {
    const agent = await makeAgent();
    const attestation = await attest(agent, w.baseUrl);
    const reg = await register(w.baseUrl, agent, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }], attestation });
    expect(reg.status).toBe(201);
    const replay = await authorize(w.baseUrl, agent, { client_id: String(reg.json.client_id) }, { provider_id: "mail", scopes: ["mail:read"], attestation });
    expectError(replay, "INVALID_ATTESTATION");
  });

  test("POST /ath/admin/providers ignores fields outside the provider schema (source, sealed secret, __proto__)", async () => {
    const body = `{"provider_id":"massassign","display_name":"M","available_scopes":["a"],"authorize_endpoint":"http://127.0.0.1:1/a","token_endpoint":"http://127.0.0.1:1/t","client_id":"c","client_secret":"s","source":"file","client_secret_sealed":"v1.x.y","__proto__":{"consent_screen":false}}`;
    const created = await call(`${w.baseUrl}/ath/admin/providers`, { body, headers: { "content-type": "application/json", "x-ath-user-token": w.gw.adminToken } });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ source: "admin", client_secret: "********", consent_screen: true });
    expect(created.json).not.toHaveProperty("client_secret_sealed");
  });
});

describe("review — odd JSON never reaches a 500", () => {
  test("odd types, prototype keys, NUL, lone surrogates and huge numbers at every JSON endpoint answer a 4xx or success, never 5xx or a stack", async () => {
    const agent = await makeAgent();
    const reg = await register(w.baseUrl, agent, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }], redirect_uris: ["http://127.0.0.1/cb"] });
    const clientId = String(reg.json.client_id);
    const odd: unknown[] = [null, true, 0, -1, 1e308, 1.5, "", "\u0000", "\ud800", "x".repeat(5000), [], [null], {}, { __proto__: { polluted: 1 } }, "did:key:z" + "1".repeat(2000), "javascript:alert(1)"];
    const bodies: Record<string, Record<string, unknown>> = {
      "/ath/agents/register": { ...reg.body },
      "/ath/authorize": { client_id: clientId, agent_attestation: "a.b.c", provider_id: "mail", scopes: ["mail:read"], state: "s".repeat(20) },
      "/ath/token": { grant_type: "authorization_code", client_id: clientId, client_secret: "x", agent_attestation: "a.b.c", code: "c", ath_session_id: "s" },
      "/ath/revoke": { token: "t", client_id: clientId, client_secret: "x" },
      "/ath/admin/providers": { provider_id: "p" },
    };
    const failures: string[] = [];
    for (const [path, base] of Object.entries(bodies)) {
      for (const key of [...Object.keys(base), "__proto__", "constructor"]) {
        for (const value of odd) {
          const text = JSON.stringify(base).replace(/}$/, `,${JSON.stringify(key)}:${JSON.stringify(value)}}`);
          const r = await call(`${w.baseUrl}${path}`, { body: text, headers: { "content-type": "application/json", "x-ath-user-token": w.gw.adminToken } });
          if (r.status >= 500 || /\n\s+at |\.ts:\d+/.test(r.text)) failures.push(`${path} ${key}=${JSON.stringify(value).slice(0, 30)} → ${r.status}`);
        }
      }
    }
    expect(failures).toEqual([]);
  });
});
