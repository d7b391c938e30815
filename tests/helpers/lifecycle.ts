/**
 * Helpers for the upstream token lifecycle tests: a recording forwarder in front of the provider's token and
 * revocation endpoints (so a test sees which refresh token the gateway sent and which one it got back), a scripted
 * provider API (401 once), direct introspection at the provider, and read-only row counts of a gateway's SQLite file.
 */
import { Database } from "bun:sqlite";
import type { UpstreamAuth } from "./upstream-auth.ts";

export interface ForwardedCall {
  path: string;
  /** The form the gateway sent (client credentials included: test memory only). */
  form: Record<string, string>;
  authorization: string | null;
  status: number;
  response: Record<string, unknown> | null;
}

export interface Recorder {
  url: string;
  calls: ForwardedCall[];
  /** refresh_token grant requests, in order. */
  refreshes(): ForwardedCall[];
  /** Sets where `/token` and `/revocation` are forwarded (known once the provider has started). */
  forward(targets: { token: string; revocation: string }): void;
  stop(): Promise<void>;
}

/** A loopback server that forwards POST /token and POST /revocation to the provider and records both sides. */
export function startRecorder(): Recorder {
  const calls: ForwardedCall[] = [];
  let targets: { token: string; revocation: string } | undefined;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const target = path === "/token" ? targets?.token : path === "/revocation" ? targets?.revocation : undefined;
      if (target === undefined) return new Response("no target", { status: 404 });
      const body = await req.text();
      const headers: Record<string, string> = { "content-type": req.headers.get("content-type") ?? "" };
      const authorization = req.headers.get("authorization");
      if (authorization !== null) headers.authorization = authorization;
      const res = await fetch(target, { method: "POST", headers, body });
      const text = await res.text();
      let response: Record<string, unknown> | null = null;
      try {
        response = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // RFC 7009 answers 200 with an empty body
      }
      calls.push({ path, form: Object.fromEntries(new URLSearchParams(body)), authorization, status: res.status, response });
      return new Response(text, { status: res.status, headers: { "content-type": res.headers.get("content-type") ?? "application/json" } });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    calls,
    refreshes: () => calls.filter((c) => c.path === "/token" && c.form.grant_type === "refresh_token"),
    forward(t) {
      targets = t;
    },
    stop: () => server.stop(true),
  };
}

export interface ScriptedRequest {
  method: string;
  path: string;
  bearer: string | null;
  bodyBytes: number;
  contentLength: string | null;
}

export interface ScriptedApi {
  url: string;
  requests: ScriptedRequest[];
  /** Requests whose path starts with `prefix`. */
  to(prefix: string): ScriptedRequest[];
  stop(): Promise<void>;
}

/**
 * A provider API with scripted answers (it does not check tokens; it records which one it got):
 * `/once401/<key>` answers 401 to the first request per key and 200 after; anything else 200.
 */
export function startScriptedApi(): ScriptedApi {
  const requests: ScriptedRequest[] = [];
  const seen = new Set<string>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 30,
    async fetch(req) {
      const url = new URL(req.url);
      const bytes = (await req.arrayBuffer()).byteLength;
      const bearer = /^Bearer (.+)$/.exec(req.headers.get("authorization") ?? "")?.[1] ?? null;
      requests.push({ method: req.method, path: url.pathname, bearer, bodyBytes: bytes, contentLength: req.headers.get("content-length") });
      const unauthorized = () => Response.json({ error: "invalid_token" }, { status: 401, headers: { "www-authenticate": 'Bearer error="invalid_token"' } });
      if (url.pathname.startsWith("/once401/")) {
        if (!seen.has(url.pathname)) {
          seen.add(url.pathname);
          return unauthorized();
        }
        return Response.json({ ok: true, body_bytes: bytes });
      }
      return Response.json({ ok: true, body_bytes: bytes });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    to: (prefix) => requests.filter((r) => r.path.startsWith(prefix)),
    stop: () => server.stop(true),
  };
}

/** Introspects a token at the provider (RFC 7662) as the resource server's client. */
export async function introspect(auth: UpstreamAuth, token: string): Promise<{ active: boolean }> {
  const res = await fetch(auth.introspectionEndpoint, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${btoa(`${auth.apiClient.client_id}:${auth.apiClient.client_secret}`)}`,
    },
    body: new URLSearchParams({ token }).toString(),
  });
  if (!res.ok) throw new Error(`introspection answered ${res.status}`);
  return { active: ((await res.json()) as { active?: boolean }).active === true };
}

/** Presents a refresh token to the provider's token endpoint directly, as the gateway's client_secret_post client. */
export async function presentRefreshToken(auth: UpstreamAuth, refreshToken: string): Promise<{ status: number; error?: string }> {
  const res = await fetch(auth.tokenEndpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: refreshToken, ...auth.postClient }).toString(),
  });
  const json = (await res.json()) as { error?: string };
  return { status: res.status, ...(json.error === undefined ? {} : { error: json.error }) };
}

/** Refresh-token grant requests the provider has processed (granted or refused). */
export function providerRefreshes(auth: UpstreamAuth): { granted: number; refused: number } {
  return { granted: auth.count("grant.success:refresh_token"), refused: auth.count("grant.error:refresh_token") };
}

export const LIFECYCLE_TABLES = ["sessions", "jti", "tokens", "refresh_tokens", "grants"] as const;

/** Row counts of the gateway's SQLite file, opened read-only next to the running gateway. */
export function countRows(dbPath: string): Record<(typeof LIFECYCLE_TABLES)[number], number> & { audit: (type: string) => number } {
  const db = new Database(dbPath, { readonly: true });
  try {
    const count = (sql: string, ...params: string[]) => (db.query(sql).get(...params) as { n: number }).n;
    const out = Object.fromEntries(LIFECYCLE_TABLES.map((t) => [t, count(`SELECT COUNT(*) AS n FROM ${t}`)]));
    const audit = new Map<string, number>();
    for (const row of db.query("SELECT type, COUNT(*) AS n FROM audit GROUP BY type").all() as { type: string; n: number }[]) audit.set(row.type, row.n);
    return { ...(out as Record<(typeof LIFECYCLE_TABLES)[number], number>), audit: (type) => audit.get(type) ?? 0 };
  } finally {
    db.close();
  }
}

/** Polls `check` every 100 ms until it returns true; throws with `what` after `limitMs` (a hang guard, not a timing assertion). */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, limitMs = 20_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what}`);
    await Bun.sleep(100);
  }
}
