/**
 * Self-test of the e2e harness against oidc-provider alone: the upstream authorization server really requires
 * PKCE, issues rotating refresh tokens and honours partial consent and denial, and the sample API really checks
 * tokens by introspection. If these fail, the gateway tests built on them mean nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Browser, formWithButton } from "../helpers/browser.ts";
import { freePort, randomString } from "../helpers/net.ts";
import { startUpstreamApi, type UpstreamApi } from "../helpers/upstream-api.ts";
import { startUpstreamAuth, type UpstreamAuth } from "../helpers/upstream-auth.ts";

let auth: UpstreamAuth;
let api: UpstreamApi;
let redirectUri: string;

beforeAll(async () => {
  redirectUri = `http://127.0.0.1:${await freePort()}/ath/callback`;
  auth = await startUpstreamAuth({ redirectUris: [redirectUri] });
  api = await startUpstreamApi(auth);
});
afterAll(async () => {
  await api?.stop();
  await auth?.stop();
});

async function pkce() {
  const verifier = randomString(32);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return { verifier, challenge: Buffer.from(digest).toString("base64url") };
}

/** Runs the browser part of a code flow; returns the redirect back to the client. */
async function authorize(scope: string, challenge: string | undefined, form: { decision?: string; scopes?: string } = {}) {
  const state = randomString();
  const url = new URL(auth.authorizeEndpoint);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: auth.postClient.client_id,
    redirect_uri: redirectUri,
    scope,
    state,
    ...(challenge === undefined ? {} : { code_challenge: challenge, code_challenge_method: "S256" }),
  }).toString();
  const browser = new Browser();
  const stopAt = (u: URL) => u.href.startsWith(redirectUri);
  const login = await browser.navigate(url.href, { stopAt });
  if (stopAt(new URL(login.url))) return { back: new URL(login.url), state };
  const fields: Record<string, string> = {};
  if (form.scopes !== undefined) fields.scopes = form.scopes;
  const back = await browser.submit(login, formWithButton(login, "Approve"), { button: form.decision ?? "Approve", fields, stopAt });
  return { back: new URL(back.url), state };
}

async function exchange(body: Record<string, string>) {
  const response = await fetch(auth.tokenEndpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ...auth.postClient, ...body }).toString(),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

describe("harness — upstream authorization server (oidc-provider)", () => {
  test("an authorization request without PKCE is refused", async () => {
    const { back } = await authorize("openid mail:read", undefined);
    expect(back.searchParams.get("error")).toBe("invalid_request");
    expect(back.searchParams.get("code")).toBeNull();
  });

  test("a code+PKCE flow yields an introspectable access token and a rotating refresh token", async () => {
    const { verifier, challenge } = await pkce();
    const { back, state } = await authorize("openid offline_access mail:read", challenge);
    expect(back.searchParams.get("state")).toBe(state);
    const code = back.searchParams.get("code") ?? "";
    expect(code).not.toBe("");

    const wrongVerifier = await exchange({ grant_type: "authorization_code", code, redirect_uri: redirectUri, code_verifier: "x".repeat(43) });
    expect(wrongVerifier.json.error).toBe("invalid_grant");

    // a failed PKCE check consumes the code at oidc-provider, so run a fresh flow for the real exchange
    const second = await pkce();
    const again = await authorize("openid offline_access mail:read", second.challenge);
    const tokens = await exchange({
      grant_type: "authorization_code",
      code: again.back.searchParams.get("code") ?? "",
      redirect_uri: redirectUri,
      code_verifier: second.verifier,
    });
    expect(tokens.status).toBe(200);
    expect(String(tokens.json.scope).split(" ")).toContain("mail:read");
    expect(typeof tokens.json.refresh_token).toBe("string");
    expect(typeof tokens.json.id_token).toBe("string");

    const call = await fetch(`${api.baseUrl}/v1/messages`, { headers: { authorization: `Bearer ${tokens.json.access_token}` } });
    expect(call.status).toBe(200);
    const bad = await fetch(`${api.baseUrl}/v1/messages`, { headers: { authorization: "Bearer nope" } });
    expect(bad.status).toBe(401);

    const before = auth.count("grant.success:refresh_token");
    const refreshed = await exchange({ grant_type: "refresh_token", refresh_token: String(tokens.json.refresh_token) });
    expect(refreshed.status).toBe(200);
    expect(refreshed.json.refresh_token).not.toBe(tokens.json.refresh_token);
    expect(auth.count("grant.success:refresh_token")).toBe(before + 1);
    const reused = await exchange({ grant_type: "refresh_token", refresh_token: String(tokens.json.refresh_token) });
    expect(reused.json.error).toBe("invalid_grant");
  });

  test("the login form can grant only some of the requested scopes", async () => {
    const { verifier, challenge } = await pkce();
    const { back } = await authorize("openid mail:read mail:send", challenge, { scopes: "openid mail:read" });
    const tokens = await exchange({ grant_type: "authorization_code", code: back.searchParams.get("code") ?? "", redirect_uri: redirectUri, code_verifier: verifier });
    expect(String(tokens.json.scope).split(" ").sort()).toEqual(["mail:read", "openid"]);
    const send = await fetch(`${api.baseUrl}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${tokens.json.access_token}` },
      body: "{}",
    });
    expect(send.status).toBe(403);
  });

  test("pressing Deny returns error=access_denied to the client", async () => {
    const { challenge } = await pkce();
    const { back } = await authorize("openid mail:read", challenge, { decision: "Deny" });
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect(back.searchParams.get("code")).toBeNull();
  });
});
