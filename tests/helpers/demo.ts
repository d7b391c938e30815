/** Driving the sandbox provider (src/gateway/demo/) directly: sign-in, token requests and API calls through its fetch. */
import { expect } from "bun:test";
import type { Demo } from "../../src/gateway/demo/index.ts";
import { createPkce } from "../../src/gateway/oauth/pkce.ts";

export const BASE = "http://127.0.0.1:8787";
export const CALLBACK = `${BASE}/ath/callback`;

export function authorizeUrl(demo: Demo, over: Record<string, string | null> = {}, challenge = createPkce().challenge): string {
  const u = new URL(`${BASE}/demo/oauth/authorize`);
  const params: Record<string, string | null> = {
    response_type: "code",
    client_id: String(demo.config.client_id),
    redirect_uri: CALLBACK,
    scope: "notes:read notes:write",
    state: "st_1234567890abcdef",
    code_challenge: challenge,
    code_challenge_method: "S256",
    ...over,
  };
  for (const [k, v] of Object.entries(params)) if (v !== null) u.searchParams.set(k, v);
  return u.href;
}

/** The browser half: load the sign-in page, answer it; returns the redirect. */
export async function signIn(demo: Demo, url: string, decision = "allow", user = "Ada Lovelace"): Promise<Response> {
  const page = await demo.fetch(new Request(url));
  expect(page.status).toBe(200);
  const html = await page.text();
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
  const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0]!;
  const body = new URLSearchParams({ request: field("request"), csrf: field("csrf"), user, decision });
  return demo.fetch(new Request(`${BASE}/demo/oauth/authorize`, { method: "POST", body, headers: { cookie, "content-type": "application/x-www-form-urlencoded" } }));
}

export function tokenRequest(demo: Demo, params: Record<string, string>, auth: "post" | "basic" = "post"): Promise<Response> {
  const body = new URLSearchParams(params);
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (auth === "post") {
    body.set("client_id", String(demo.config.client_id));
    body.set("client_secret", String(demo.config.client_secret));
  } else {
    headers.authorization = `Basic ${btoa(`${encodeURIComponent(String(demo.config.client_id))}:${encodeURIComponent(String(demo.config.client_secret))}`)}`;
  }
  return demo.fetch(new Request(`${BASE}/demo/oauth/token`, { method: "POST", body, headers }));
}

export async function codeFor(demo: Demo, scope = "notes:read notes:write") {
  const pkce = createPkce();
  const res = await signIn(demo, authorizeUrl(demo, { scope }, pkce.challenge));
  expect(res.status).toBe(303);
  const loc = new URL(res.headers.get("location")!);
  return { code: loc.searchParams.get("code")!, verifier: pkce.verifier, location: loc };
}

export async function tokens(demo: Demo, scope?: string) {
  const { code, verifier } = await codeFor(demo, scope);
  const res = await tokenRequest(demo, { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier });
  expect(res.status).toBe(200);
  return (await res.json()) as { access_token: string; refresh_token: string; scope: string; expires_in: number; token_type: string; id_token?: string };
}

export function api(demo: Demo, method: string, path: string, token?: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  if (body !== undefined) headers["content-type"] = "application/json";
  return demo.fetch(new Request(`${BASE}/demo/api${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }));
}
