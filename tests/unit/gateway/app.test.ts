/**
 * createGateway in process: the whole protocol through `app.fetch`, with the sandbox provider as the upstream and the
 * gateway's clock moved by the test — the seam that handler tests build on (the e2e suite keeps the real processes).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { PATHS } from "../../../src/protocol/index.ts";
import { makeAgent } from "../../helpers/attestations.ts";
import { expectError } from "../../helpers/expect-error.ts";
import { ADMIN_TOKEN, asError, authorized, inProcessGateway, postJson, registered, tokenFor, type InProcess } from "../../helpers/in-process.ts";

let g: InProcess;
beforeEach(async () => {
  g = await inProcessGateway();
});
afterEach(() => g.close());

async function post(path: string, body: unknown) {
  const r = await postJson(g, path, body);
  return { res: r.res, json: r.json };
}

describe("createGateway — the protocol in process", () => {
  test("register → authorize → consent → token → proxy → revoke, with no port and no process", async () => {
    const agent = await makeAgent();
    const { client, accessToken, json } = await tokenFor(g, agent);
    expect(json.effective_scopes).toEqual(["notes:read"]);
    expect(json.provider_id).toBe("demo");

    const notes = await g.fetch("/ath/proxy/demo/notes", { headers: { authorization: `Bearer ${accessToken}` } });
    expect(notes.status).toBe(200);
    expect(Array.isArray(((await notes.json()) as { notes: unknown[] }).notes)).toBe(true);

    const revoked = await post(PATHS.revoke, { token: accessToken, ...client });
    expect(revoked.res.status).toBe(200);
    const after = await g.fetch("/ath/proxy/demo/notes", { headers: { authorization: `Bearer ${accessToken}` } });
    expectError(await asError(after), "TOKEN_REVOKED");
  });

  test("an ATH token expires on the gateway's clock: accepted a second before expires_in, refused from then on", async () => {
    const { accessToken } = await tokenFor(g, await makeAgent());
    g.clock.advance(3599);
    expect((await g.fetch("/ath/proxy/demo/notes", { headers: { authorization: `Bearer ${accessToken}` } })).status).toBe(200);
    g.clock.advance(1);
    const res = await g.fetch("/ath/proxy/demo/notes", { headers: { authorization: `Bearer ${accessToken}` } });
    expectError(await asError(res), "TOKEN_EXPIRED");
  });

  test("a consent session expires on the gateway's clock: its page then says so, as HTML", async () => {
    const agent = await makeAgent();
    const session = await authorized(g, agent, await registered(g, agent));
    g.clock.advance(601);
    const page = await g.browser().navigate(session.url);
    expect(page.status).toBe(400);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.body).toContain("SESSION_EXPIRED");
  });
});

describe("the pipeline applies the route table", () => {
  test("an unknown path is 404 NOT_FOUND and a known path with another method 405 with Allow, as JSON", async () => {
    const missing = await g.fetch("/nowhere");
    expectError(await asError(missing), "NOT_FOUND");
    const wrong = await g.fetch(PATHS.token, { method: "GET" });
    expectError(await asError(wrong), "METHOD_NOT_ALLOWED");
    expect(wrong.headers.get("allow")).toBe("POST");
    expect(wrong.headers.get("x-ath-error")).toBe("METHOD_NOT_ALLOWED");
  });

  test("HEAD is answered by a GET route", async () => {
    const res = await g.fetch(PATHS.health, { method: "HEAD" });
    expect(res.status).toBe(200);
  });

  test("admin rows refuse a missing or wrong admin token before the handler runs, and admit the right one", async () => {
    for (const headers of [{}, { "x-ath-user-token": "wrong" }] as Record<string, string>[]) {
      const res = await g.fetch(PATHS.adminProviders, { headers });
      expectError(await asError(res), "UNAUTHORIZED");
    }
    const ok = await g.fetch(PATHS.adminProviders, { headers: { "x-ath-user-token": ADMIN_TOKEN } });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { providers: { provider_id: string }[] }).providers.map((p) => p.provider_id)).toEqual(["demo"]);
  });

  test("an error on a page route is an HTML page; the same kind of error on an API route is the JSON body", async () => {
    const page = await g.fetch(`${PATHS.consent}/no-such-handle`);
    expect(page.status).toBe(400);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(await page.text()).toContain("SESSION_NOT_FOUND");
    const api = await post(PATHS.token, { agent_attestation: "present" });
    expect(api.res.headers.get("content-type")).toBe("application/json");
    expect(api.json.code).toBe("INVALID_REQUEST");
  });

  test("a path parameter with malformed percent-encoding is 400 INVALID_REQUEST, not a 500", async () => {
    const res = await g.fetch(`${PATHS.adminProviders}/%E0%A4%A`, { headers: { "x-ath-user-token": ADMIN_TOKEN } });
    expectError(await asError(res), "INVALID_REQUEST");
  });
});
