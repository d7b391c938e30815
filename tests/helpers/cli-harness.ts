/**
 * In-process harness for the CLI unit tests: a fake ATH gateway as a fetch function (it verifies every
 * attestation's signature and audience, records every request, and follows the protocol's shapes), a temp
 * ATH_HOME, and `runAth(argv)` which runs `main()` with captured stdout/stderr and chosen TTY flags.
 */
import { afterEach, beforeEach, expect } from "bun:test";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { importJWK, jwtVerify } from "jose";
import { jwkFromDidKey } from "../../src/protocol/did-key.ts";
import { loadAgent, type Agent, type AgentOptions } from "../../src/agent/flows/agent.ts";
import { setDeps, type Deps } from "../../src/cli/kit/deps.ts";
import { main } from "../../src/main.ts";

export const GW = "http://127.0.0.1:8787";

/** What the fake upstream answers at `…/binary`: bytes that are not UTF-8 (a lone 0xff, a NUL, a cut sequence). */
export const BINARY_BODY = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe, 0xe2, 0x82]);

export interface Recorded {
  method: string;
  path: string;
  contentType: string | null;
  body: Record<string, unknown>;
  headers: Headers;
}

export interface FakeGateway {
  fetch: Deps["fetch"];
  requests: Recorded[];
  /** Set to make the next /ath/token answer this ATH error. */
  tokenError?: { status: number; code: string; message: string };
  /** What the fake upstream API saw through the proxy. */
  proxied: Recorded[];
  revoked: string[];
  registered: Set<string>;
}

/** A fake gateway offering provider "github" (repo, read:user) and "gitlab" (api); also a native service "notes" (/api). */
export function fakeGateway(base = GW): FakeGateway {
  const gw: FakeGateway = { requests: [], proxied: [], revoked: [], registered: new Set(), fetch: async () => new Response() };
  const tokens = new Map<string, { provider: string; scopes: string[] }>();
  const sessions = new Map<string, { provider: string; scopes: string[]; code: string }>();
  let n = 0;
  gw.fetch = async (input, init) => {
    const req = new Request(input as string, init);
    const url = new URL(req.url);
    const text = req.method === "GET" ? "" : await req.text();
    const contentType = req.headers.get("content-type");
    const body: Record<string, unknown> = contentType?.includes("json") ? JSON.parse(text || "{}") : Object.fromEntries(new URLSearchParams(text));
    const rec = { method: req.method, path: url.pathname + url.search, contentType, body, headers: req.headers };
    gw.requests.push(rec);
    const json = (status: number, v: unknown) => Response.json(v, { status });
    // Like the real gateway (src/gateway/http.ts), every error it produces itself carries X-ATH-Error.
    const err = (status: number, code: string, message: string) => Response.json({ code, message }, { status, headers: { "x-ath-error": code } });
    const attested = async (aud: string) => {
      const jwt = String(body.agent_attestation ?? "");
      const sub = JSON.parse(atob(jwt.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/"))).sub as string;
      const key = await importJWK(jwkFromDidKey(sub), "ES256");
      await jwtVerify(jwt, key, { audience: aud, algorithms: ["ES256"] });
      return sub;
    };
    switch (url.pathname) {
      case "/.well-known/ath.json":
        return json(200, {
          ath_version: "0.1",
          gateway_id: "fake",
          agent_registration_endpoint: `${base}/ath/agents/register`,
          supported_providers: [
            { provider_id: "github", display_name: "GitHub", available_scopes: ["repo", "read:user"], auth_mode: "OAUTH2", agent_approval_required: true },
            { provider_id: "gitlab", display_name: "GitLab", available_scopes: ["api"], auth_mode: "OAUTH2", agent_approval_required: true },
          ],
        });
      case "/.well-known/ath-app.json":
        return json(200, {
          ath_version: "0.1",
          app_id: "notes",
          name: "Notes",
          auth: {
            type: "oauth2",
            authorization_endpoint: `${base}/ath/authorize`,
            token_endpoint: `${base}/ath/token`,
            registration_endpoint: `${base}/ath/agents/register`,
            scopes_supported: ["notes:read", "notes:write"],
            agent_attestation_required: true,
          },
          api_base: `${base}/api`,
        });
      case "/ath/agents/register": {
        const sub = await attested(base);
        if (gw.registered.has(sub)) return err(409, "AGENT_ALREADY_REGISTERED", "This agent_id is already registered");
        gw.registered.add(sub);
        const requested = body.requested_providers as { provider_id: string; scopes: string[] }[];
        return json(201, {
          client_id: `ath_client${++n}`,
          client_secret: `ath_secret_s3cr3tvalue${n}`,
          agent_status: "approved",
          approved_providers: requested.map((p) => ({ provider_id: p.provider_id, approved_scopes: p.scopes.filter((s) => s !== "admin"), denied_scopes: p.scopes.filter((s) => s === "admin") })),
          approval_expires: "2099-01-01T00:00:00.000Z",
        });
      }
      case "/ath/authorize": {
        await attested(base);
        const id = `ath_sess_${++n}`;
        sessions.set(id, { provider: String(body.provider_id), scopes: body.scopes as string[], code: `ath_code_${n}` });
        return json(200, { authorization_url: `${base}/ath/consent/h${n}?code_challenge=x&code_challenge_method=S256`, ath_session_id: id });
      }
      case "/ath/token": {
        await attested(`${base}/ath/token`);
        if (gw.tokenError !== undefined) {
          const e = gw.tokenError;
          delete gw.tokenError;
          return err(e.status, e.code, e.message);
        }
        const s = sessions.get(String(body.ath_session_id));
        if (s === undefined) return err(400, "SESSION_NOT_FOUND", "The authorization session was not found or was already used");
        if (body.code !== s.code) return err(400, "INVALID_GRANT", "The authorization code is invalid");
        sessions.delete(String(body.ath_session_id));
        const token = `ath_tk_tokenvalue${++n}`;
        tokens.set(token, { provider: s.provider, scopes: s.scopes });
        return json(200, {
          access_token: token,
          token_type: "Bearer",
          expires_in: 3600,
          effective_scopes: s.scopes,
          provider_id: s.provider,
          agent_id: "x",
          scope_intersection: { agent_approved: s.scopes, user_consented: s.scopes, effective: s.scopes },
        });
      }
      case "/ath/revoke":
        gw.revoked.push(String(body.token));
        tokens.delete(String(body.token));
        return json(200, {});
    }
    if (url.pathname.startsWith("/ath/proxy/") || url.pathname.startsWith("/api/")) {
      const t = tokens.get((req.headers.get("authorization") ?? "").replace(/^Bearer /, ""));
      if (t === undefined) {
        // The native service's own API (/api/…) checks the token itself and answers a bare ATH error body.
        if (url.pathname.startsWith("/api/")) return json(401, { code: "TOKEN_INVALID", message: "The access token is invalid" });
        return err(401, "TOKEN_INVALID", "The access token is invalid");
      }
      gw.proxied.push(rec);
      if (url.pathname.endsWith("/missing")) return json(404, { message: "Not Found" });
      // An upstream error whose body looks like an ATH error (the gateway strips any X-ATH-* it sets).
      if (url.pathname.endsWith("/binary")) return new Response(BINARY_BODY, { headers: { "content-type": "application/octet-stream" } });
      if (url.pathname.endsWith("/plain")) return new Response("no newline at the end", { headers: { "content-type": "text/plain" } });
      // What ath serve relays from the provider is marked X-ATH-Upstream (a refusal of its own carries X-ATH-Error).
      if (url.pathname.endsWith("/lookalike")) return relayed(json(401, { code: "TOKEN_REVOKED", message: "upstream: your upstream token was revoked" }));
      // A gateway that marks neither (the official SDK's): its refusal is an ATH error body alone.
      if (url.pathname.endsWith("/foreign-refusal")) return json(401, { code: "TOKEN_REVOKED", message: "The access token has been revoked" });
      return json(200, { ok: true, method: req.method, path: url.pathname, query: url.search, body: text === "" ? null : req.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text });
    }
    return err(404, "NOT_FOUND", "Not found");
  };
  return gw;
}

/** The code the fake gateway minted for a session (`ath_sess_N` → `ath_code_N`). */
export function codeFor(sessionId: string): string {
  return sessionId.replace("ath_sess_", "ath_code_");
}

export interface RunResult {
  code: number;
  /** stdout decoded as UTF-8. */
  stdout: string;
  stderr: string;
  /** stdout exactly as written. */
  stdoutBytes: Uint8Array;
}

export interface RunOptions {
  tty?: boolean;
  fetch?: Deps["fetch"];
  openUrl?: Deps["openUrl"];
  env?: Record<string, string>;
  now?: () => number;
  /** What stdin holds (`--body -`). */
  stdin?: string;
}

/** Runs `ath argv` in process against `home`. */
export async function runAth(home: string, argv: string[], o: RunOptions = {}): Promise<RunResult> {
  const stdout: Uint8Array[] = [];
  let stderr = "";
  const tty = o.tty ?? false;
  const restore = setDeps({
    env: { ATH_HOME: home, ...o.env },
    stdout: (s) => void stdout.push(typeof s === "string" ? new TextEncoder().encode(s) : s.slice()),
    stderr: (s) => void (stderr += s),
    readStdin: async () => o.stdin ?? "",
    stdinTTY: tty,
    stdoutTTY: tty,
    stderrTTY: false,
    ...(o.fetch === undefined ? {} : { fetch: o.fetch }),
    ...(o.now === undefined ? {} : { now: o.now }),
    openUrl: o.openUrl ?? (async () => {}),
  });
  try {
    const code = await main(argv, (s) => void stdout.push(new TextEncoder().encode(s)));
    const stdoutBytes = new Uint8Array(Buffer.concat(stdout));
    return { code, stdout: new TextDecoder().decode(stdoutBytes), stderr, stdoutBytes };
  } finally {
    restore();
  }
}

/** A fresh temp ATH_HOME; `cleanup` removes it. */
export async function tempHome(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "ath-cli-"));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Per test: a fresh temporary home (beforeEach/afterEach), for tests that need no gateway. */
export function homeFixture() {
  let current: { dir: string; cleanup: () => Promise<void> } | undefined;
  beforeEach(async () => {
    current = await tempHome();
  });
  afterEach(() => current?.cleanup());
  return {
    get home() {
      if (!current) throw new TypeError("homeFixture is used outside a test");
      return current;
    },
  };
}

/**
 * Per test: a fresh temporary home and fake gateway (beforeEach/afterEach), `ath(argv, tty)` bound to them, the
 * steps most tests start from (registered, authorized), readers of what credentials.json holds, and `agent()`: the
 * Agent the flows act as on that home and gateway, built as a front end other than the CLI (`ath mcp`) builds it.
 */
export function cliFixture() {
  let current: { home: { dir: string; cleanup: () => Promise<void> }; gw: FakeGateway } | undefined;
  beforeEach(async () => {
    current = { home: await tempHome(), gw: fakeGateway() };
  });
  afterEach(() => current?.home.cleanup());
  const live = () => {
    if (!current) throw new TypeError("cliFixture is used outside a test");
    return current;
  };
  return {
    get home() {
      return live().home;
    },
    get gw() {
      return live().gw;
    },
    ath,
    agent: (o: AgentOptions = {}): Promise<Agent> => loadAgent({ env: { ATH_HOME: live().home.dir }, fetch: live().gw.fetch, ...o }),
    registered,
    authorized,
    credentials,
    pendingIds,
  };
  function ath(argv: string[], tty = false): Promise<RunResult> {
    return runAth(live().home.dir, argv, { fetch: live().gw.fetch, tty });
  }
  /** `ath register` for github with `scopes`; the test fails unless it exits 0. */
  async function registered(scopes = "repo,read:user"): Promise<void> {
    expect((await ath(["register", "-g", GW, "--provider", "github", "--scopes", scopes])).code).toBe(0);
  }
  /** Registered, authorized (`--no-wait`) and exchanged: a saved github token. Returns its ath_session_id. */
  async function authorized(scopes = "repo,read:user"): Promise<string> {
    await registered(scopes);
    const a = await ath(["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"]);
    expect(a.code).toBe(0);
    const session = JSON.parse(a.stdout).ath_session_id as string;
    expect((await ath(["token", "-g", GW, "--code", codeFor(session)])).code).toBe(0);
    return session;
  }
  /** credentials.json, parsed. */
  async function credentials() {
    return JSON.parse(await readFile(join(live().home.dir, "credentials.json"), "utf8"));
  }
  /** The ath_session_ids of the pending sessions saved for the one registered agent, oldest first. */
  async function pendingIds(): Promise<string[]> {
    return Object.keys((Object.values((await credentials()).gateways[GW].agents)[0] as { pending: object }).pending);
  }
}

/** An answer as ath serve's proxy relays it: marked as the provider's (X-ATH-Upstream). */
function relayed(res: Response): Response {
  res.headers.set("x-ath-upstream", "true");
  return res;
}
