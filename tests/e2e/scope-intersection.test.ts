/**
 * Spec §1.8 at the token endpoint when the provider narrows the grant: a provider that grants none of the requested
 * scopes leaves an empty intersection → 403 SCOPE_NOT_APPROVED with the breakdown, no token, the upstream grant
 * dropped (and revoked at the provider). oidc-provider cannot be made to issue such a token (it answers
 * access_denied instead), so this file runs a minimal authorization server that does.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { authorize, consent, exchange, register } from "../helpers/agent.ts";
import { makeAgent } from "../helpers/attestations.ts";
import { expectError } from "../helpers/expect-error.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";

/** Grants whatever `grantedScope` says, whatever was asked; records revocations. */
function narrowingProvider() {
  const state = { grantedScope: "unrelated" as string | null, revoked: [] as string[], tokens: 0 };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === "/authorize") {
        const back = new URL(url.searchParams.get("redirect_uri")!);
        back.searchParams.set("code", "c0de");
        back.searchParams.set("state", url.searchParams.get("state")!);
        return Response.redirect(back.href, 302);
      }
      if (url.pathname === "/token") {
        state.tokens++;
        const scope = state.grantedScope === null ? {} : { scope: state.grantedScope };
        return Response.json({ access_token: `at-${state.tokens}`, refresh_token: `rt-${state.tokens}`, token_type: "Bearer", expires_in: 3600, ...scope });
      }
      if (url.pathname === "/revoke") {
        state.revoked.push(new URLSearchParams(await req.text()).get("token") ?? "");
        return new Response(null, { status: 200 });
      }
      return new Response("not found", { status: 404 });
    },
  });
  return { server, state, base: `http://127.0.0.1:${server.port}` };
}

let p: ReturnType<typeof narrowingProvider>;
let gw: Gateway;
beforeAll(async () => {
  p = narrowingProvider();
  gw = await startGateway({
    providers: {
      narrow: {
        display_name: "Narrowing",
        available_scopes: ["a", "b"],
        authorize_endpoint: `${p.base}/authorize`,
        token_endpoint: `${p.base}/token`,
        revocation_endpoint: `${p.base}/revoke`,
        api_base_url: `${p.base}/api`,
        client_id: "gw",
        client_secret: "gw-secret",
      },
    },
  });
});
afterAll(async () => {
  await gw?.cleanup();
  p?.server.stop(true);
});

async function flowWithGrantedScope(granted: string | null) {
  p.state.grantedScope = granted;
  const agent = await makeAgent();
  const reg = await register(gw.baseUrl, agent, { providers: [{ provider_id: "narrow", scopes: ["a", "b"] }] });
  const client = { client_id: String(reg.json.client_id), client_secret: String(reg.json.client_secret) };
  const auth = await authorize(gw.baseUrl, agent, client, { provider_id: "narrow", scopes: ["a"] });
  const c = await consent(String(auth.json.authorization_url));
  expect(c.code).toBeDefined();
  return exchange(gw.baseUrl, agent, client, { code: c.code!, ath_session_id: String(auth.json.ath_session_id) });
}

describe("Phase B — POST /ath/token, scope intersection", () => {
  test("a provider granting none of the requested scopes → 403 SCOPE_NOT_APPROVED, no token, upstream grant revoked", async () => {
    const before = p.state.revoked.length;
    const r = await flowWithGrantedScope("unrelated b");
    expectError(r, "SCOPE_NOT_APPROVED", {
      scope_intersection: { agent_approved: ["a", "b"], user_consented: ["unrelated", "b"], effective: [] },
    });
    expect(r.text).not.toContain("ath_tk_");
    expect(p.state.revoked.length).toBeGreaterThan(before);
  });

  test("a provider granting a subset keeps only that subset", async () => {
    const r = await flowWithGrantedScope("a");
    expect(r.status).toBe(200);
    expect(r.json.effective_scopes).toEqual(["a"]);
  });

  test("a token response without `scope` means the requested scopes were granted (RFC 6749 §5.1)", async () => {
    const r = await flowWithGrantedScope(null);
    expect(r.status).toBe(200);
    expect(r.json.scope_intersection).toEqual({ agent_approved: ["a", "b"], user_consented: ["a"], effective: ["a"] });
  });

  test("an explicitly empty `scope` is an empty grant: nothing is effective", async () => {
    expectError(await flowWithGrantedScope(""), "SCOPE_NOT_APPROVED");
  });
});
