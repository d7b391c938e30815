/**
 * The sample provider API behind the gateway's proxy in the e2e tests (Bun.serve on a loopback port). It accepts a
 * request only if its Bearer token is active at the upstream authorization server's introspection endpoint (the
 * API authenticates as its own client), and it records every request it receives, so tests can assert what the
 * upstream saw — and that it never saw the ATH token, cookies or X-ATH-* headers.
 */
import type { UpstreamAuth } from "./upstream-auth.ts";

export interface RecordedRequest {
  method: string;
  path: string;
  /** The raw query string including the leading `?`, or "". */
  query: string;
  headers: Record<string, string>;
  body: string;
  /** Whether introspection said the bearer token was active. */
  active: boolean;
  /** Scopes of the token according to introspection. */
  scopes: string[];
}

export interface UpstreamApi {
  baseUrl: string;
  port: number;
  requests: RecordedRequest[];
  /** Requests whose bearer token was accepted. */
  accepted(): RecordedRequest[];
  clear(): void;
  stop(): Promise<void>;
}

/** Which scope each route needs, checked after introspection like a real resource server would. */
const ROUTE_SCOPES: Record<string, string> = {
  "GET /v1/messages": "mail:read",
  "POST /v1/messages": "mail:send",
};

export async function startUpstreamApi(auth: UpstreamAuth): Promise<UpstreamApi> {
  const requests: RecordedRequest[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const body = await req.text();
      const headers: Record<string, string> = {};
      req.headers.forEach((value, name) => {
        headers[name] = value;
      });
      const bearer = /^Bearer (.+)$/.exec(req.headers.get("authorization") ?? "")?.[1];
      const intro = bearer === undefined ? { active: false, scopes: [] } : await introspect(auth, bearer);
      const record: RecordedRequest = { method: req.method, path: url.pathname, query: url.search, headers, body, ...intro };
      requests.push(record);
      if (!intro.active) {
        return Response.json({ error: "invalid_token" }, { status: 401, headers: { "www-authenticate": 'Bearer error="invalid_token"' } });
      }
      const needed = ROUTE_SCOPES[`${req.method} ${url.pathname}`];
      if (needed !== undefined && !intro.scopes.includes(needed)) {
        return Response.json({ error: "insufficient_scope", scope: needed }, { status: 403 });
      }
      return route(req.method, url, body, record);
    },
  });
  const baseUrl = `http://127.0.0.1:${server.port}`;
  return {
    baseUrl,
    port: server.port ?? 0,
    requests,
    accepted: () => requests.filter((r) => r.active),
    clear: () => {
      requests.length = 0;
    },
    stop: () => server.stop(true),
  };
}

// internal

async function route(method: string, url: URL, body: string, record: RecordedRequest): Promise<Response> {
  const path = url.pathname;
  if (path === "/v1/messages" && method === "GET") {
    return Response.json(
      { messages: [{ id: "m1", subject: "hello" }], query: url.search },
      { headers: { "set-cookie": "upstream_session=secret; Path=/", "x-ath-error": "TOKEN_REVOKED", "x-upstream": "sample-api", "cache-control": "no-store" } },
    );
  }
  if (path === "/v1/messages" && method === "POST") {
    return Response.json({ received: body === "" ? null : JSON.parse(body) }, { status: 201 });
  }
  if (path === "/v1/echo") {
    // never echo the bearer token: the test checks the agent never sees the upstream token
    const { authorization: _, ...headers } = record.headers;
    return Response.json({ method: record.method, path: record.path, query: record.query, headers, body });
  }
  if (path === "/v1/bytes") {
    // `size` bytes: a PNG-like binary (not UTF-8) with kind=binary, else ASCII text whose every 1,000th byte is "#"
    const size = Number(url.searchParams.get("size") ?? "16");
    const binary = url.searchParams.get("kind") === "binary";
    const bytes = new Uint8Array(size).map((_, i) => (binary ? (i * 37 + 0x80) & 0xff : i % 1000 === 999 ? 0x23 : 0x61 + (i % 26)));
    return new Response(bytes, { headers: { "content-type": binary ? "image/png" : "text/plain; charset=utf-8" } });
  }
  if (path === "/v1/slow") {
    await Bun.sleep(Number(url.searchParams.get("ms") ?? "200"));
    return Response.json({ slow: true });
  }
  if (path === "/v1/ratelimited") {
    return Response.json({ error: "slow down" }, { status: 429, headers: { "retry-after": "7" } });
  }
  if (path === "/v1/gzip") {
    const gz = Bun.gzipSync(new TextEncoder().encode(JSON.stringify({ compressed: true, filler: "x".repeat(2048) })));
    return new Response(gz, { headers: { "content-type": "application/json", "content-encoding": "gzip" } });
  }
  if (path === "/v1/stream") {
    const chunks = Number(url.searchParams.get("chunks") ?? "5");
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        for (let i = 0; i < chunks; i++) controller.enqueue(new TextEncoder().encode(`chunk ${i}\n`));
        controller.close();
      },
    });
    return new Response(stream, { headers: { "content-type": "text/plain" } });
  }
  return Response.json({ error: "not_found", path }, { status: 404 });
}

async function introspect(auth: UpstreamAuth, token: string): Promise<{ active: boolean; scopes: string[] }> {
  const response = await fetch(auth.introspectionEndpoint, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${btoa(`${auth.apiClient.client_id}:${auth.apiClient.client_secret}`)}`,
    },
    body: new URLSearchParams({ token }).toString(),
  });
  if (!response.ok) return { active: false, scopes: [] };
  const json = (await response.json()) as { active?: boolean; scope?: string };
  return { active: json.active === true, scopes: (json.scope ?? "").split(" ").filter(Boolean) };
}
