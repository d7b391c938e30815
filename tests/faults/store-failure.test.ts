/**
 * Fault injection on the compiled gateway (DESIGN §14 "Never claim what did not happen"): its store fails — SQLite
 * on a full disk (the process's file-size limit dropped to 0 with prlimit: every write fails with EFBIG, as on a
 * full disk; SIGXFSZ is ignored by the launcher so the write fails instead of killing the process), PostgreSQL gone
 * (the gateway's connections go through a TCP forwarder that the test cuts). For every write endpoint the answer is
 * 503 SERVICE_UNAVAILABLE with Retry-After — never a success that did not happen — the CLI's `revoke` exits 5 and
 * keeps the saved token, and once the store is back every one of those requests works: nothing was half-done, and no
 * consent was burnt.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { authorize, call, consent, exchange, fullFlow, register, registeredAgent, type HttpResult } from "../helpers/agent.ts";
import { makeAgent } from "../helpers/attestations.ts";
import { ATH_BIN, ath, ensureBinary } from "../helpers/cli-binary.ts";
import { expectError } from "../helpers/expect-error.ts";
import { tempDir } from "../helpers/net.ts";
import { PG_URL } from "../helpers/store-harness.ts";
import { startForwarder, type TcpForwarder } from "../helpers/tcp-forwarder.ts";
import { startWorld, type World } from "../helpers/world.ts";

/** `exec`s the gateway with SIGXFSZ ignored (inherited across exec), so a write over the file-size limit fails with EFBIG. */
const IGNORE_SIGXFSZ = ["bash", "-c", 'trap "" XFSZ; exec "$@"', "ath-serve"];

interface Prepared {
  /** A token to revoke while the store fails. */
  victim: Awaited<ReturnType<typeof fullFlow>>;
  /** A consented session whose code is exchanged while the store fails, then after. */
  pending: { agent: Awaited<ReturnType<typeof makeAgent>>; client: { client_id: string; client_secret: string }; code: string; sessionId: string };
  /** An ATH_HOME holding a registration and a token, for the CLI. */
  home: string;
}

async function prepare(w: World, home: string): Promise<Prepared> {
  const victim = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
  const { agent, client } = await registeredAgent(w.baseUrl, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
  const a = await authorize(w.baseUrl, agent, client, { provider_id: "mail", scopes: ["mail:read"] });
  expect(a.status).toBe(200);
  const c = await consent(String(a.json.authorization_url));
  expect(c.code).toMatch(/^ath_code_/);
  // the CLI: registered, consented, token saved
  expect((await ath(home, ["register", "-g", w.baseUrl, "--provider", "mail", "--scopes", "mail:read"])).code).toBe(0);
  const started = (await ath(home, ["authorize", "-g", w.baseUrl, "--provider", "mail", "--no-wait", "--format", "json"])).json();
  const cc = await consent(started.authorization_url);
  expect((await ath(home, ["token", "-g", w.baseUrl, "--code", String(cc.code)])).code).toBe(0);
  return { victim, pending: { agent, client, code: String(c.code), sessionId: String(a.json.ath_session_id) }, home };
}

const proxied = (w: World, token: string) => call(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${token}` } });

/** Every write endpoint, once, while the store fails. */
async function writesWhileFailing(w: World, p: Prepared): Promise<Record<string, HttpResult>> {
  const admin = { "x-ath-user-token": w.gw.adminToken };
  const fresh = await makeAgent();
  return {
    revoke: await call(`${w.baseUrl}/ath/revoke`, { form: { token: p.victim.accessToken, ...p.victim.client } }),
    register: await register(w.baseUrl, fresh, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] }),
    authorize: await authorize(w.baseUrl, p.victim.agent, p.victim.client, { provider_id: "mail", scopes: ["mail:read"] }),
    token: await exchange(w.baseUrl, p.pending.agent, p.pending.client, { code: p.pending.code, ath_session_id: p.pending.sessionId }),
    "admin: suspend agent": await call(`${w.baseUrl}/ath/admin/agents/${p.victim.client.client_id}`, { method: "PATCH", json: { status: "suspended" }, headers: admin }),
    "admin: add provider": await call(`${w.baseUrl}/ath/admin/providers`, {
      json: { provider_id: "extra", display_name: "Extra", available_scopes: ["a"], authorize_endpoint: "https://x.example/a", token_endpoint: "https://x.example/t", client_id: "c", client_secret: "s" },
      headers: admin,
    }),
  };
}

function expectAllUnavailable(results: Record<string, HttpResult>): void {
  const seen = Object.fromEntries(Object.entries(results).map(([k, r]) => [k, { status: r.status, code: r.json.code, retryAfter: r.headers.get("retry-after") }]));
  const want = Object.fromEntries(Object.keys(results).map((k) => [k, { status: 503, code: "SERVICE_UNAVAILABLE", retryAfter: "1" }]));
  expect(seen).toEqual(want);
}

/** After recovery: the same requests succeed, and what failed had left nothing half-done. */
async function expectRecovered(w: World, p: Prepared): Promise<void> {
  const revoke = await call(`${w.baseUrl}/ath/revoke`, { form: { token: p.victim.accessToken, ...p.victim.client } });
  expect({ status: revoke.status, body: revoke.json }).toEqual({ status: 200, body: {} });
  expectError(await proxied(w, p.victim.accessToken), "TOKEN_REVOKED");
  // the consent given before the fault was not burnt by the failed exchange
  const t = await exchange(w.baseUrl, p.pending.agent, p.pending.client, { code: p.pending.code, ath_session_id: p.pending.sessionId });
  expect(t.status).toBe(200);
  expect((await proxied(w, String(t.json.access_token))).status).toBe(200);
  const reg = await register(w.baseUrl, await makeAgent(), { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
  expect(reg.status).toBe(201);
  // the suspension that failed did not happen: the agent is still approved
  const agent = await call(`${w.baseUrl}/ath/admin/agents/${p.pending.client.client_id}`, { headers: { "x-ath-user-token": w.gw.adminToken } });
  expect(agent.json.agent_status).toBe("approved");
  const cli = await ath(p.home, ["revoke", "-g", w.baseUrl, "--provider", "mail", "--format", "json"]);
  expect({ code: cli.code, out: cli.json() }).toEqual({ code: 0, out: { gateway: w.baseUrl, revoked: ["mail"] } });
}

async function cliRevokeWhileFailing(w: World, p: Prepared): Promise<void> {
  const r = await ath(p.home, ["revoke", "-g", w.baseUrl, "--provider", "mail", "--format", "json"]);
  expect({ code: r.code, error: r.json().error.code }).toEqual({ code: 5, error: "SERVICE_UNAVAILABLE" });
  const status = (await ath(p.home, ["status", "-g", w.baseUrl, "--format", "json"])).json();
  expect(status.registrations[0].tokens.map((t: { provider_id: string }) => t.provider_id)).toEqual(["mail"]);
}

beforeAll(() => ensureBinary(), 120_000);

describe("SQLite on a full disk", () => {
  let w: World;
  let home: Awaited<ReturnType<typeof tempDir>>;
  let p: Prepared;
  const prlimit = (fsize: string) => {
    const r = Bun.spawnSync(["prlimit", "--pid", String(w.gw.pid()), `--fsize=${fsize}`]);
    if (r.exitCode !== 0) throw new Error(`prlimit failed: ${r.stderr.toString()}`);
  };

  beforeAll(async () => {
    w = await startWorld({ binary: ATH_BIN, launcher: IGNORE_SIGXFSZ });
    home = await tempDir("faults-cli");
    p = await prepare(w, home.path);
  }, 60_000);
  afterAll(async () => {
    await w?.stop();
    await home?.remove();
  });

  test("every write answers 503 SERVICE_UNAVAILABLE with Retry-After while nothing can be written; the revoked-that-was-not token still works", async () => {
    prlimit("0:unlimited"); // the soft limit only: raising a hard limit needs CAP_SYS_RESOURCE
    try {
      expectAllUnavailable(await writesWhileFailing(w, p));
      // the revocation did not happen, and nobody was told it did: the token still works
      expect((await proxied(w, p.victim.accessToken)).status).toBe(200);
      // liveness is not readiness
      expect((await call(`${w.baseUrl}/health`)).status).toBe(200);
      await cliRevokeWhileFailing(w, p);
    } finally {
      prlimit("unlimited:unlimited");
    }
  }, 30_000);

  test("with the disk back, the same requests succeed: the revocation, the pending exchange (consent not burnt), a registration, the CLI's revoke", async () => {
    await expectRecovered(w, p);
  }, 30_000);
});

describe("PostgreSQL gone", () => {
  const schema = `ath_faults_${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex")}`;
  let w: World;
  let fwd: TcpForwarder;
  let home: Awaited<ReturnType<typeof tempDir>>;
  let p: Prepared;

  beforeAll(async () => {
    const pg = new URL(PG_URL);
    fwd = await startForwarder({ host: pg.hostname, port: Number(pg.port || 5432) });
    const db = new URL(PG_URL);
    db.port = String(fwd.port);
    db.searchParams.set("schema", schema);
    w = await startWorld({ binary: ATH_BIN, extraArgs: ["--db", db.href] });
    home = await tempDir("faults-cli-pg");
    p = await prepare(w, home.path);
  }, 60_000);
  afterAll(async () => {
    await w?.stop();
    await fwd?.close();
    await home?.remove();
    const sql = new SQL(PG_URL);
    try {
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await sql.close();
    }
  });

  test("every write answers 503 SERVICE_UNAVAILABLE with Retry-After; the proxy cannot vouch for a token either (503, not a guess)", async () => {
    await fwd.cut();
    try {
      expectAllUnavailable(await writesWhileFailing(w, p));
      const r = await proxied(w, p.victim.accessToken);
      expect({ status: r.status, code: r.json.code }).toEqual({ status: 503, code: "SERVICE_UNAVAILABLE" });
      // liveness is not readiness: /health stays 200, /ready says the store does not answer (issue 10, finding 10)
      expect((await call(`${w.baseUrl}/health`)).status).toBe(200);
      const ready = await call(`${w.baseUrl}/ready`);
      expect({ status: ready.status, code: ready.json.code }).toEqual({ status: 503, code: "NOT_READY" });
      const cliProxy = await ath(p.home, ["proxy", "-g", w.baseUrl, "mail", "GET", "/v1/messages"]);
      expect({ code: cliProxy.code, stderr: cliProxy.stderr }).toMatchObject({ code: 5, stderr: expect.stringContaining("SERVICE_UNAVAILABLE") });
      await cliRevokeWhileFailing(w, p);
    } finally {
      await fwd.restore();
    }
  }, 60_000);

  test("with PostgreSQL back, the same requests succeed", async () => {
    await expectRecovered(w, p);
    expect((await call(`${w.baseUrl}/ready`)).status).toBe(200);
  }, 30_000);
});
