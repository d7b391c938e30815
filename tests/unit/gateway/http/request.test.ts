/**
 * Reading protocol requests, in process (DESIGN §3 "Errors", §8): malformed JSON, bodies that are not objects, wrong
 * types and missing fields, unsupported content types and oversized bodies all answer the JSON error shape
 * `{code, message, details?}` with a 4xx naming what is wrong — and odd values anywhere never reach a 500.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { call, register } from "../../../helpers/agent.ts";
import { craftAttestation, makeAgent } from "../../../helpers/attestations.ts";
import { expectError, expectInvalidRequestNaming } from "../../../helpers/expect-error.ts";
import { ADMIN_TOKEN, BASE, inProcessGateway, type InProcess } from "../../../helpers/in-process.ts";
import { PG_URL, postgresHarness, type Harness } from "../../../helpers/store-harness.ts";

let g: InProcess;
let pg: Harness | undefined;
beforeEach(async () => {
  g = await inProcessGateway();
});
afterEach(async () => {
  await g.close();
  await pg?.dispose();
  pg = undefined;
});

/** The gateway on a fresh PostgreSQL schema instead of SQLite. */
async function onPostgres(): Promise<InProcess> {
  await g.close();
  pg = postgresHarness(PG_URL);
  g = await inProcessGateway({ store: await pg.open() });
  return g;
}

const JSON_ENDPOINTS = ["/ath/agents/register", "/ath/authorize", "/ath/token"];
const send = (path: string, init: Parameters<typeof call>[1] = {}) => call(`${BASE}${path}`, { ...init, fetch: g.fetch });

describe("bad input → JSON error, 4xx", () => {
  test("malformed JSON is 400 INVALID_REQUEST (field body) at every JSON endpoint", async () => {
    for (const path of JSON_ENDPOINTS) {
      for (const body of ["{", "{\"a\":", "[1,2", "nul", "\u0000", "{\"agent_id\": \"x\",}"]) {
        expectError(await send(path, { body, headers: { "content-type": "application/json" } }), "INVALID_REQUEST", { field: "body" });
      }
    }
  });

  test("a JSON body that is not an object is 400 INVALID_REQUEST (field body)", async () => {
    for (const path of JSON_ENDPOINTS) {
      for (const value of [null, 1, "str", true, [], [{}]]) {
        expectError(await send(path, { json: value }), "INVALID_REQUEST", { field: "body" });
      }
    }
  });

  test("wrong types and missing fields are 400 INVALID_REQUEST naming the field", async () => {
    // (a missing agent_attestation would be 401 INVALID_ATTESTATION: schema codes win, DESIGN §8)
    expectInvalidRequestNaming(await send("/ath/agents/register", { json: { agent_attestation: "x" } }), "agent_id");
    expectInvalidRequestNaming(await send("/ath/authorize", { json: { client_id: 5, agent_attestation: "x", provider_id: "mail", scopes: ["a"], state: "s".repeat(20) } }), "client_id");
    expectInvalidRequestNaming(await send("/ath/authorize", { json: { client_id: "ath_x", agent_attestation: "x", provider_id: "mail", scopes: "a", state: "s".repeat(20) } }), "scopes");
    expectInvalidRequestNaming(await send("/ath/token", { form: { grant_type: "authorization_code", agent_attestation: "x" } }), "client_id");
  });

  test("an unsupported content type is 400 INVALID_REQUEST naming content-type", async () => {
    for (const path of JSON_ENDPOINTS) {
      expectError(await send(path, { body: "<xml/>", headers: { "content-type": "application/xml" } }), "INVALID_REQUEST", { field: "content-type" });
    }
  });

  test("a body over the size limit is 413 PAYLOAD_TOO_LARGE, declared or not", async () => {
    const big = JSON.stringify({ agent_id: "x".repeat(200 * 1024) });
    expectError(await send("/ath/agents/register", { body: big, headers: { "content-type": "application/json" } }), "PAYLOAD_TOO_LARGE");
    // no Content-Length: the reader stops at the limit
    const chunk = new TextEncoder().encode(" ".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if ((sent += chunk.byteLength) > 1024 * 1024) c.close();
        else c.enqueue(chunk);
      },
    });
    const res = await g.fetch("/ath/agents/register", { method: "POST", body: stream, headers: { "content-type": "application/json" } });
    expectError({ status: res.status, headers: res.headers, text: await res.text() }, "PAYLOAD_TOO_LARGE");
    expect(sent).toBeLessThan(1024 * 1024);
  });
});

describe("odd JSON never reaches a 500", () => {
  async function oddJsonFailures(): Promise<string[]> {
    const agent = await makeAgent();
    const reg = await register(g, agent, { providers: [{ provider_id: "demo", scopes: ["notes:read"] }], redirect_uris: ["http://127.0.0.1/cb"] });
    const clientId = String(reg.json.client_id);
    const odd: unknown[] = [null, true, 0, -1, 1e308, 1.5, "", "\u0000", "\ud800", "x".repeat(5000), [], [null], {}, { __proto__: { polluted: 1 } }, "did:key:z" + "1".repeat(2000), "javascript:alert(1)"];
    const bodies: Record<string, Record<string, unknown>> = {
      "/ath/agents/register": { ...reg.body },
      "/ath/authorize": { client_id: clientId, agent_attestation: "a.b.c", provider_id: "demo", scopes: ["notes:read"], state: "s".repeat(20) },
      "/ath/token": { grant_type: "authorization_code", client_id: clientId, client_secret: "x", agent_attestation: "a.b.c", code: "c", ath_session_id: "s" },
      "/ath/revoke": { token: "t", client_id: clientId, client_secret: "x" },
      "/ath/admin/providers": { provider_id: "p" },
    };
    const failures: string[] = [];
    for (const [path, base] of Object.entries(bodies)) {
      for (const key of [...Object.keys(base), "__proto__", "constructor"]) {
        for (const value of odd) {
          const text = JSON.stringify(base).replace(/}$/, `,${JSON.stringify(key)}:${JSON.stringify(value)}}`);
          const r = await send(path, { body: text, headers: { "content-type": "application/json", "x-ath-user-token": ADMIN_TOKEN } });
          if (r.status >= 500 || /\n\s+at |\.ts:\d+/.test(r.text)) failures.push(`${path} ${key}=${JSON.stringify(value).slice(0, 30)} → ${r.status}`);
        }
      }
    }
    return failures;
  }

  test("odd types, prototype keys, NUL, lone surrogates and huge numbers at every JSON endpoint answer a 4xx or success, never 5xx or a stack", async () => {
    expect(await oddJsonFailures()).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test.skipIf(!PG_URL)("the same odd JSON never reaches a 500 on PostgreSQL either", async () => {
    await onPostgres();
    expect(await oddJsonFailures()).toEqual([]);
  });
});

describe("U+0000 is refused at the door (PostgreSQL text cannot hold it)", () => {
  test("a NUL anywhere in a JSON or form body — value or key, however deep — is 400 INVALID_REQUEST naming where", async () => {
    const bodies: [string, Parameters<typeof call>[1], string][] = [
      ["/ath/agents/register", { json: { agent_id: "did:key:z6Mk", purpose: "a\u0000b" } }, "purpose"],
      ["/ath/agents/register", { json: { developer: { name: "x", id: "\u0000" } } }, "developer.id"],
      ["/ath/authorize", { json: { scopes: ["ok", "no\u0000pe"] } }, "scopes.1"],
      ["/ath/authorize", { json: { "ke\u0000y": 1 } }, "ke"],
      ["/ath/token", { form: { grant_type: "authorization_code", client_id: "ath_\u0000" } }, "client_id"],
    ];
    for (const [path, init, field] of bodies) {
      const e = expectError(await send(path, init), "INVALID_REQUEST");
      expect({ path, field: String(e.details?.field ?? "") }).toEqual({ path, field: expect.stringContaining(field) });
      expect(e.message).toContain("U+0000");
    }
  });

  test.skipIf(!PG_URL)("on PostgreSQL, NUL in a body, a path parameter, the callback's state or an attestation's jti answers a 4xx, never a 500", async () => {
    await onPostgres();
    const agent = await makeAgent();
    expectError(await register(g, agent, { providers: [{ provider_id: "demo", scopes: ["notes:read"] }], body: { purpose: "a\u0000b" } }), "INVALID_REQUEST", { field: "purpose" });
    expectError(await send("/ath/admin/providers/x%00y", { headers: { "x-ath-user-token": ADMIN_TOKEN } }), "INVALID_REQUEST", { field: "path" });
    const callback = await g.browser().navigate(`${BASE}/ath/callback?code=c&state=s%00t`);
    expect(callback.status).toBe(400);
    expect(callback.body).toContain("STATE_MISMATCH");
    const jti = await craftAttestation(agent, BASE, { claims: { jti: "j\u0000ti" } });
    const r = await register(g, agent, { providers: [{ provider_id: "demo", scopes: ["notes:read"] }], attestation: jti });
    expectError(r, "INVALID_ATTESTATION");
    expect(await g.gw.store.getAgentByAgentId(agent.agentId)).toBeNull();
  });
});
