/**
 * What the official TypeScript SDK and the athx CLI rely on (DESIGN §8 "Interop with the official SDK and athx"),
 * checked in process: schema codes win over INVALID_REQUEST, the gateway's own callback as the agent's redirect URI,
 * `resource` in authorization_url, the attestation lifetime leeway of jose-based signers, and proxy methods.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { PATHS } from "../../../src/protocol/index.ts";
import { attest, craftAttestation, makeAgent, type TestAgent } from "../../helpers/attestations.ts";
import { formWithButton } from "../../helpers/browser.ts";
import { expectError } from "../../helpers/expect-error.ts";
import { BASE, inProcessGateway, type InProcess } from "../../helpers/in-process.ts";

let g: InProcess;
beforeEach(async () => {
  g = await inProcessGateway();
});
afterEach(() => g.close());

const CALLBACK = `${BASE}${PATHS.callback}`;

async function post(path: string, body: unknown) {
  const res = await g.fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function register(agent: TestAgent, extra: Record<string, unknown> = {}, attestation?: string) {
  return post(PATHS.register, {
    agent_id: agent.agentId,
    agent_attestation: attestation ?? (await attest(agent, BASE)),
    developer: { name: "Interop", id: "dev-interop" },
    requested_providers: [{ provider_id: "demo", scopes: ["notes:read"] }],
    ...extra,
  });
}

async function client(agent: TestAgent, extra: Record<string, unknown> = {}) {
  const r = await register(agent, extra);
  expect(r.status).toBe(201);
  return JSON.parse(r.text) as { client_id: string; client_secret: string };
}

async function authorizeBody(agent: TestAgent, clientId: string, over: Record<string, unknown> = {}) {
  return {
    client_id: clientId,
    agent_attestation: await attest(agent, BASE),
    provider_id: "demo",
    scopes: ["notes:read"],
    state: "interop-state-0123456789",
    ...over,
  };
}

describe("schema codes win over INVALID_REQUEST (DESIGN §8)", () => {
  test("a missing, short or long state at authorize is 400 STATE_MISMATCH naming the field", async () => {
    const agent = await makeAgent();
    const { client_id } = await client(agent);
    for (const state of [undefined, "short", "x".repeat(513), 42]) {
      const r = await post(PATHS.authorize, await authorizeBody(agent, client_id, { state }));
      expectError(r, "STATE_MISMATCH", { field: "state" });
    }
  });

  test("a missing agent_attestation is 401 INVALID_ATTESTATION at register, authorize and token", async () => {
    const agent = await makeAgent();
    const noAttestation = await register(agent, {}, "");
    expectError(noAttestation, "INVALID_ATTESTATION", { field: "agent_attestation" });
    const { client_id, client_secret } = await client(agent);
    const { agent_attestation: _, ...authorize } = await authorizeBody(agent, client_id);
    expectError(await post(PATHS.authorize, authorize), "INVALID_ATTESTATION", { field: "agent_attestation" });
    const token = { grant_type: "authorization_code", client_id, client_secret, code: "ath_code_x", ath_session_id: "ath_sess_x" };
    expectError(await post(PATHS.token, token), "INVALID_ATTESTATION", { field: "agent_attestation" });
  });

  test("other schema violations stay 400 INVALID_REQUEST", async () => {
    const agent = await makeAgent();
    const { client_id } = await client(agent);
    expectError(await post(PATHS.authorize, await authorizeBody(agent, client_id, { scopes: "notes:read" })), "INVALID_REQUEST", { field: "scopes" });
  });
});

describe("the agent's redirect URI and resource", () => {
  test("user_redirect_uri = the gateway's own /ath/callback shows the code page instead of redirecting the browser to itself", async () => {
    const agent = await makeAgent();
    const { client_id } = await client(agent, { redirect_uris: [CALLBACK] });
    const auth = await post(PATHS.authorize, await authorizeBody(agent, client_id, { user_redirect_uri: CALLBACK }));
    expect(auth.status).toBe(200);
    const { authorization_url, ath_session_id } = JSON.parse(auth.text) as { authorization_url: string; ath_session_id: string };
    const browser = g.browser();
    let page = await browser.navigate(authorization_url);
    page = await browser.submit(page, formWithButton(page, "Approve"), { button: "Approve" });
    page = await browser.submit(page, formWithButton(page, "Allow"), { button: "Allow" });
    expect(page.status).toBe(200);
    expect(new URL(page.url).pathname).toBe(PATHS.callback);
    expect(page.body).toMatch(/ath_code_[A-Za-z0-9_-]+/);
    expect(page.body).toContain(ath_session_id);
  });

  test("resource given to authorize appears in authorization_url", async () => {
    const agent = await makeAgent();
    const { client_id } = await client(agent);
    const r = await post(PATHS.authorize, await authorizeBody(agent, client_id, { resource: "https://api.example/notes" }));
    expect(r.status).toBe(200);
    const url = new URL((JSON.parse(r.text) as { authorization_url: string }).authorization_url);
    expect(url.searchParams.get("resource")).toBe("https://api.example/notes");
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
  });
});

describe("attestation lifetime leeway", () => {
  test("exp = iat + 3601 (a jose-based signer at a second boundary) is accepted; beyond iat + 3660 is refused", async () => {
    const now = Math.floor(g.clock.now() / 1000);
    const accepted = await makeAgent();
    const ok = await register(accepted, {}, await craftAttestation(accepted, BASE, { claims: { iat: now, exp: now + 3601 } }));
    expect(ok.status).toBe(201);
    const refused = await makeAgent();
    const r = await register(refused, {}, await craftAttestation(refused, BASE, { claims: { iat: now, exp: now + 3661 } }));
    expectError(r, "INVALID_ATTESTATION");
  });
});

describe("proxy methods", () => {
  test("TRACE and CONNECT are refused with 405 and the forwarded methods in Allow, before any token check", async () => {
    for (const method of ["TRACE", "CONNECT"]) {
      const res = await g.fetch("/ath/proxy/demo/notes", { method, headers: { authorization: "Bearer ath_tk_whatever" } });
      const err = expectError({ status: res.status, headers: res.headers, text: await res.text() }, "METHOD_NOT_ALLOWED");
      expect(err.message).toContain(method);
      expect(res.headers.get("allow")).toContain("PATCH");
      expect(res.headers.get("allow")).not.toContain("TRACE");
    }
  });
});
