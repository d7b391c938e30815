/**
 * Refresh tokens at POST /ath/token in process (DESIGN §17), with a clock the test moves: every token response carries
 * an `ath_rt_` refresh token; `grant_type=refresh_token` rotates it; a spent one presented again within 2 s is a race
 * (nothing revoked), later it is reuse (the whole family revoked, audited); `scope` narrows, never widens; scopes are
 * cut to what the agent is approved for now; and the family dies with /ath/revoke of any member, the agent's
 * suspension, an admin's revocation, a dead upstream grant, --refresh-idle and --refresh-ttl.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { DiscoveryDocument, TokenResponse } from "../../../../src/protocol/index.ts";
import { call, fullFlow, type ClientCredentials } from "../../../helpers/agent.ts";
import { attest, craftAttestation, type TestAgent } from "../../../helpers/attestations.ts";
import { expectError, expectInvalidRequestNaming } from "../../../helpers/expect-error.ts";
import { ADMIN_TOKEN, BASE, INTROSPECTION_TOKEN, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";

const IDLE_S = 600;
const TTL_S = 1500;

let g: InProcess;
beforeEach(async () => {
  ({ g } = await scriptedGateway((p) => ({ mail: p.config({ available_scopes: ["mail:read", "mail:send"] }) }), {
    refreshIdleSeconds: IDLE_S,
    refreshTtlSeconds: TTL_S,
  }));
});
afterEach(() => g.close());

interface Family {
  agent: TestAgent;
  client: ClientCredentials;
  token: TokenResponse;
}

async function family(scopes = ["mail:read", "mail:send"]): Promise<Family> {
  const f = await fullFlow(g, { provider_id: "mail", scopes });
  return { agent: f.agent, client: f.client, token: TokenResponse.parse(f.token.json) };
}

async function refresh(f: Pick<Family, "agent" | "client">, refreshToken: string, extra: Record<string, string> = {}) {
  return call(`${BASE}/ath/token`, {
    form: {
      grant_type: "refresh_token",
      ...f.client,
      agent_attestation: await attestNow(f.agent),
      refresh_token: refreshToken,
      ...extra,
    },
    fetch: g.fetch,
  });
}

/** An attestation dated by the gateway's clock (which the tests move). */
function attestNow(agent: TestAgent): Promise<string> {
  const now = Math.floor(g.clock.now() / 1000);
  return craftAttestation(agent, `${BASE}/ath/token`, { claims: { iat: now, exp: now + 120 } });
}

async function rotated(f: Family, refreshToken: string, extra: Record<string, string> = {}): Promise<TokenResponse> {
  const r = await refresh(f, refreshToken, extra);
  if (r.status !== 200) throw new Error(`refresh: ${r.status} ${r.text}`);
  return TokenResponse.parse(r.json);
}

async function active(token: string): Promise<boolean> {
  const r = await call(`${BASE}/ath/introspect`, { form: { token }, headers: { authorization: `Bearer ${INTROSPECTION_TOKEN}` }, fetch: g.fetch });
  return r.json.active === true;
}

const proxied = (token: string) => call(`${BASE}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${token}` }, fetch: g.fetch });
const admin = (method: string, path: string, json?: unknown) =>
  call(`${BASE}${path}`, { method, ...(json === undefined ? {} : { json }), headers: { "x-ath-user-token": ADMIN_TOKEN }, fetch: g.fetch });

describe("Refresh tokens — issue and rotation", () => {
  test("the code exchange answers a refresh token (ath_rt_) with refresh_expires_in the earlier of --refresh-idle and --refresh-ttl; discovery advertises the grant", async () => {
    const f = await family();
    expect(f.token.refresh_token).toStartWith("ath_rt_");
    expect(f.token.refresh_expires_in).toBe(IDLE_S);
    const d = DiscoveryDocument.parse((await call(`${BASE}/.well-known/ath.json`, { fetch: g.fetch })).json);
    expect(d.grant_types_supported).toEqual(["authorization_code", "refresh_token"]);
  });

  test("a refresh gives a new access token and a new refresh token; both old and new access tokens work; the successor rotates again", async () => {
    const f = await family();
    g.clock.advance(30);
    const next = await rotated(f, f.token.refresh_token!);
    expect(next.access_token).not.toBe(f.token.access_token);
    expect(next.refresh_token).not.toBe(f.token.refresh_token);
    expect(next.token_type).toBe("Bearer");
    expect(next.expires_in).toBe(3600);
    expect(next.effective_scopes.sort()).toEqual(["mail:read", "mail:send"]);
    expect((await proxied(next.access_token)).status).toBe(200);
    expect(await active(f.token.access_token)).toBe(true);
    const third = await rotated(f, next.refresh_token!);
    expect((await proxied(third.access_token)).status).toBe(200);
    expect(await g.audited("token.refreshed")).toBe(2);
  });

  test("the spent token again within 2 s is refresh_token_spent and revokes nothing; after 2 s it is reuse: the whole family dies, audited", async () => {
    const f = await family();
    const next = await rotated(f, f.token.refresh_token!);
    g.clock.advance(1);
    expectError(await refresh(f, f.token.refresh_token!), "INVALID_GRANT", { reason: "refresh_token_spent" });
    expect(await active(next.access_token)).toBe(true);
    expect(await g.audited("refresh.reuse_detected")).toBe(0);

    g.clock.advance(2);
    expectError(await refresh(f, f.token.refresh_token!), "INVALID_GRANT", { reason: "refresh_token_reused" });
    expect(await g.audited("refresh.reuse_detected")).toBe(1);
    expect(await active(next.access_token)).toBe(false);
    expect(await active(f.token.access_token)).toBe(false);
    expectError(await proxied(next.access_token), "TOKEN_REVOKED");
    // the successor the thief (or the rightful owner) holds is dead too
    expectError(await refresh(f, next.refresh_token!), "INVALID_GRANT", { reason: "refresh_token_revoked" });
  });

  test("scope narrows (space-separated), never widens: a wider scope is 400 scope_widening and spends nothing; the narrowed family stays narrow", async () => {
    const f = await family(["mail:read"]);
    expectError(await refresh(f, f.token.refresh_token!, { scope: "mail:read mail:send" }), "INVALID_REQUEST", { reason: "scope_widening" });
    const all = await family();
    const narrow = await rotated(all, all.token.refresh_token!, { scope: "mail:read" });
    expect(narrow.effective_scopes).toEqual(["mail:read"]);
    expectError(await refresh(all, narrow.refresh_token!, { scope: "mail:send" }), "INVALID_REQUEST", { reason: "scope_widening" });
    // the refused widening spent nothing
    expect((await rotated(f, f.token.refresh_token!)).effective_scopes).toEqual(["mail:read"]);
  });

  test("the new token's scopes are cut to what the agent is approved for now", async () => {
    const f = await family();
    const agent = (await g.gw.store.getAgentByClientId(f.client.client_id))!;
    await g.gw.store.updateAgent(f.client.client_id, {
      approvals: agent.approvals.map((a) => ({ ...a, approved_scopes: a.approved_scopes.filter((s) => s !== "mail:send") })),
    });
    const next = await rotated(f, f.token.refresh_token!);
    expect(next.effective_scopes).toEqual(["mail:read"]);
  });

  test("another client's refresh token is unknown to this client (INVALID_GRANT) and stays usable by its owner", async () => {
    const a = await family();
    const b = await family();
    const r = await refresh(b, a.token.refresh_token!);
    expectError(r, "INVALID_GRANT");
    expect((r.json as { details?: { reason?: string } }).details?.reason).toBeUndefined();
    expect((await rotated(a, a.token.refresh_token!)).access_token).toStartWith("ath_tk_");
  });

  test("malformed refresh requests: no refresh_token names it, an unknown one is INVALID_GRANT, an empty scope names scope", async () => {
    const f = await family();
    const form = { grant_type: "refresh_token", ...f.client, agent_attestation: await attest(f.agent, `${BASE}/ath/token`) };
    expectInvalidRequestNaming(await call(`${BASE}/ath/token`, { form, fetch: g.fetch }), "refresh_token");
    expectError(await refresh(f, "ath_rt_not-a-token"), "INVALID_GRANT");
    expectInvalidRequestNaming(await refresh(f, f.token.refresh_token!, { scope: " " }), "scope");
    expectError(await refresh({ ...f, client: { ...f.client, client_secret: "ath_secret_wrong" } }, f.token.refresh_token!), "INVALID_CLIENT");
  });
});

describe("Refresh tokens — the family dies", () => {
  test("--refresh-idle: unused that long, the refresh token has expired; each use restarts the idle clock until --refresh-ttl", async () => {
    const idle = await family();
    const f = await family();
    let rt = f.token.refresh_token!;
    for (let used = 0; used + 500 < TTL_S; used += 500) {
      g.clock.advance(500);
      const next = await rotated(f, rt);
      expect(next.refresh_expires_in).toBeLessThanOrEqual(IDLE_S);
      rt = next.refresh_token!;
    }
    // unused for 1000 s > --refresh-idle
    expectError(await refresh(idle, idle.token.refresh_token!), "INVALID_GRANT", { reason: "refresh_token_expired" });
    g.clock.advance(501);
    expectError(await refresh(f, rt), "INVALID_GRANT", { reason: "refresh_token_expired" });
  });

  test("/ath/revoke of the access token kills the family; /ath/revoke of a refresh token kills its access tokens", async () => {
    const a = await family();
    await call(`${BASE}/ath/revoke`, { form: { token: a.token.access_token, ...a.client }, fetch: g.fetch });
    expectError(await refresh(a, a.token.refresh_token!), "INVALID_GRANT", { reason: "refresh_token_revoked" });

    const b = await family();
    const next = await rotated(b, b.token.refresh_token!);
    await call(`${BASE}/ath/revoke`, { form: { token: next.refresh_token!, ...b.client }, fetch: g.fetch });
    expect(await active(next.access_token)).toBe(false);
    expect(await active(b.token.access_token)).toBe(false);
    expectError(await refresh(b, next.refresh_token!), "INVALID_GRANT", { reason: "refresh_token_revoked" });
  });

  test("suspension kills the family for good (approving again does not revive it); an admin's revocation by token_id kills its family", async () => {
    const f = await family();
    expect((await admin("PATCH", `/ath/admin/agents/${f.client.client_id}`, { status: "suspended" })).status).toBe(200);
    expectError(await refresh(f, f.token.refresh_token!), "AGENT_UNAPPROVED");
    expect((await admin("PATCH", `/ath/admin/agents/${f.client.client_id}`, { status: "approved" })).status).toBe(200);
    expectError(await refresh(f, f.token.refresh_token!), "INVALID_GRANT", { reason: "refresh_token_revoked" });

    const h = await family();
    const next = await rotated(h, h.token.refresh_token!);
    const listed = await admin("GET", `/ath/admin/tokens?client_id=${h.client.client_id}`);
    const first = (listed.json.tokens as { token_id: string; created_at: string }[]).at(-1)!;
    expect((await admin("POST", "/ath/admin/tokens/revoke", { token_id: first.token_id })).json).toEqual({ revoked: 2 });
    expect(await active(next.access_token)).toBe(false);
    expectError(await refresh(h, next.refresh_token!), "INVALID_GRANT", { reason: "refresh_token_revoked" });
  });

  test("a dead upstream grant kills the family: the refresh is refresh_token_revoked naming the upstream", async () => {
    const f = await family();
    const token = await g.gw.store.listTokens({ client_id: f.client.client_id }, { now: g.clock.now(), limit: 1 });
    await g.gw.store.deleteGrant(token[0]!.grant_id!);
    expectError(await refresh(f, f.token.refresh_token!), "INVALID_GRANT", { reason: "refresh_token_revoked", upstream: "upstream_grant_revoked" });
    expect(await active(f.token.access_token)).toBe(false);
  });

  test("deleting the agent deletes its refresh tokens", async () => {
    const f = await family();
    expect((await admin("DELETE", `/ath/admin/agents/${f.client.client_id}`)).status).toBe(200);
    expect(await g.gw.store.getRefreshToken((await import("../../../../src/gateway/crypto/secrets.ts")).hashSecret(f.token.refresh_token!))).toBeNull();
  });
});
