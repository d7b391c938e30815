/**
 * `ath serve` as an operator meets it, through the compiled binary: configuration errors name provider and field,
 * the admin token is generated once and printed once, the master key is private, plain http off loopback is refused,
 * and SIGTERM stops it cleanly.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { register } from "../helpers/agent.ts";
import { makeAgent } from "../helpers/attestations.ts";
import { ATH_BIN, ensureBinary } from "../helpers/cli-binary.ts";
import { freePort } from "../helpers/net.ts";

const BIN = ATH_BIN;
beforeAll(() => void ensureBinary());
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tmp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), "ath-serve-"));
  dirs.push(d);
  return d;
}

const PROVIDER = {
  display_name: "Mail",
  available_scopes: ["mail:read"],
  authorize_endpoint: "https://auth.example/authorize",
  token_endpoint: "https://auth.example/token",
  api_base_url: "https://api.example",
  client_id: "client",
  client_secret: "${MAIL_SECRET}",
};

/** Whether a plain fetch of `url` fails to connect (closed port, untrusted certificate). */
async function fetchFails(url: string): Promise<boolean> {
  try {
    await fetch(url);
    return false;
  } catch {
    return true;
  }
}

/** Runs `ath serve` to completion (for start-up failures). */
async function serveFails(args: string[], env: Record<string, string> = {}) {
  const home = await tmp();
  const p = Bun.spawn([BIN, "serve", "--data-dir", join(home, "data"), ...args], {
    env: { ...process.env, ATH_HOME: home, NO_COLOR: "1", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code, out, err };
}

/** Starts `ath serve` and resolves once it printed `listening on`. */
async function serve(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawn([BIN, "serve", "--port", String(await freePort()), ...args], {
    env: { ...process.env, NO_COLOR: "1", ATH_LOG_FORMAT: "text", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = p.stdout.getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const url = /^listening on (\S+)$/m.exec(out)?.[1];
  if (!url) throw new Error(`ath serve did not start: ${out}`);
  return { p, url, stderr: () => new Response(p.stderr).text() };
}

describe("ath serve — configuration errors", () => {
  test("an invalid providers file stops the start with exit 2, naming every provider and field at once", async () => {
    const dir = await tmp();
    const file = join(dir, "providers.json");
    await writeFile(file, JSON.stringify({ mail: { ...PROVIDER, token_endpoint: "not a url", available_scopes: "mail:read" }, "Bad Id": PROVIDER }));
    const r = await serveFails(["--providers", file], { MAIL_SECRET: "s" });
    expect(r.code).toBe(2);
    expect(r.out).toBe("");
    expect(r.err).toContain("providers.mail.token_endpoint");
    expect(r.err).toContain("providers.mail.available_scopes");
    expect(r.err).toContain("Bad Id");
    expect(r.err).not.toContain("    at "); // no stack trace
  });

  test("an unknown field is named with its provider, with the field it was probably meant to be (a misspelt scope_rules would allow every path)", async () => {
    const dir = await tmp();
    const file = join(dir, "providers.json");
    await writeFile(file, JSON.stringify({ mail: { ...PROVIDER, scope_rule: { "mail:read": ["GET /v1/**"] }, revocation_endpont: "https://auth.example/revoke" } }));
    const r = await serveFails(["--providers", file], { MAIL_SECRET: "s" });
    expect(r.code).toBe(2);
    const lines = r.err.trim().split("\n");
    expect(lines).toContain('  providers.mail: unknown field "scope_rule" (did you mean "scope_rules"?)');
    expect(lines).toContain('  providers.mail: unknown field "revocation_endpont" (did you mean "revocation_endpoint"?)');
  });

  test("a JSON syntax error is reported with its line and column", async () => {
    const dir = await tmp();
    const file = join(dir, "providers.json");
    await writeFile(file, '{\n  "mail": {\n    "display_name": "Mail",\n    "client_id": "c",\n  }\n}\n');
    const r = await serveFails(["--providers", file]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`providers file ${file} is not valid JSON: line 5, column 3: a trailing comma before '}'`);
    expect(r.err).not.toContain("    at ");
  });

  test("a provider without scope_rules starts with a warning naming it and --strict-scopes; with --strict-scopes no warning", async () => {
    const dir = await tmp();
    const file = join(dir, "providers.json");
    await writeFile(file, JSON.stringify({ mail: PROVIDER, ruled: { ...PROVIDER, scope_rules: { "mail:read": ["GET /v1/**"] } } }));
    for (const strict of [false, true]) {
      const s = await serve(["--data-dir", join(dir, `data-${strict}`), "--providers", file, ...(strict ? ["--strict-scopes"] : [])], { MAIL_SECRET: "s", ATH_HOME: dir });
      s.p.kill("SIGTERM");
      await s.p.exited;
      const err = await s.stderr();
      if (strict) expect(err).not.toContain("scope_rules");
      else {
        expect(err).toContain("provider mail has no scope_rules");
        expect(err).toContain("--strict-scopes");
        expect(err).not.toContain("provider ruled");
      }
    }
  });

  test("an unset or empty ${ENV} is named with its provider and field", async () => {
    const dir = await tmp();
    const file = join(dir, "providers.json");
    await writeFile(file, JSON.stringify({ mail: PROVIDER }));
    const r = await serveFails(["--providers", file], { MAIL_SECRET: "" });
    expect(r.code).toBe(2);
    expect(r.err).toContain("providers.mail.client_secret: environment variable MAIL_SECRET is not set (or empty)");
  });

  test("--db: an unknown store is a usage error naming the flag; one that cannot be reached names it too, password hidden", async () => {
    const scheme = await serveFails(["--db", "mysql://root@127.0.0.1/x"]);
    expect(scheme.code).toBe(2);
    expect(scheme.err).toContain('--db: unsupported store "mysql"');
    const down = await serveFails(["--db", "postgres://ath:hunter2secret@127.0.0.1:1/x"]);
    expect(down.code).toBe(1);
    expect(down.err).toContain("--db postgres://ath:***@127.0.0.1:1/x: cannot open the store");
    expect(down.err).not.toContain("hunter2secret");
  });

  test("a missing providers file, a bad port and plain http on a public address are usage errors", async () => {
    expect((await serveFails(["--providers", "/nonexistent/providers.json"])).err).toContain("cannot read providers file");
    const port = await serveFails(["--port", "70000"]);
    expect(port.code).toBe(2);
    expect(port.err).toContain("--port must be an integer from 0 to 65535");
    const open = await serveFails(["--host", "0.0.0.0", "--port", "0"]);
    expect(open.code).toBe(2);
    expect(open.err).toContain("refusing plain http on 0.0.0.0");
    expect((await serveFails(["--bogus"])).code).toBe(2);
  });
});

describe("ath serve — first start, admin token, master key, shutdown", () => {
  test("without --admin-token a token is generated, printed once, works, and is kept only as a hash", async () => {
    const home = await tmp();
    const dataDir = join(home, "data");
    const first = await serve(["--data-dir", dataDir], { ATH_HOME: home });
    first.p.kill("SIGTERM");
    expect(await first.p.exited).toBe(0);
    const token = /admin token \(shown once, store it now\): (ath_admin_\S+)/.exec(await first.stderr())?.[1];
    expect(token).toBeDefined();

    const second = await serve(["--data-dir", dataDir], { ATH_HOME: home });
    const ok = await fetch(`${second.url}/ath/admin/providers`, { headers: { "x-ath-user-token": token! } });
    expect(ok.status).toBe(200);
    const wrong = await fetch(`${second.url}/ath/admin/providers`, { headers: { "x-ath-user-token": `${token}x` } });
    expect(wrong.status).toBe(401);
    second.p.kill("SIGTERM");
    expect(await second.p.exited).toBe(0);
    expect(await second.stderr()).not.toContain("admin token");

    const key = join(dataDir, "master.key");
    expect(statSync(key).mode & 0o777).toBe(0o600);
    for (const f of ["ath.db", "ath.db-wal", "master.key"]) {
      if (existsSync(join(dataDir, f))) expect(await Bun.file(join(dataDir, f)).text()).not.toContain(token!);
    }
  });

  test("a first start whose port is taken fails without keeping an admin token, so the next start generates and prints one", async () => {
    const home = await tmp();
    const dataDir = join(home, "data");
    const taken = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("busy") });
    try {
      const failed = await serveFails(["--port", String(taken.port), "--data-dir", dataDir]);
      expect(failed.code).not.toBe(0);
      expect(failed.err).not.toContain("admin token");
    } finally {
      taken.stop(true);
    }
    const next = await serve(["--data-dir", dataDir], { ATH_HOME: home });
    next.p.kill("SIGTERM");
    expect(await next.p.exited).toBe(0);
    expect(await next.stderr()).toMatch(/admin token \(shown once, store it now\): ath_admin_\S+/);
  });

  test("SIGTERM stops accepting and exits 0; the default data dir is $ATH_HOME/gateway", async () => {
    const home = await tmp();
    const s = await serve(["--admin-token", "t0ken-for-test-24-characters"], { ATH_HOME: home });
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    s.p.kill("SIGTERM");
    expect(await s.p.exited).toBe(0);
    expect(existsSync(join(home, "gateway", "ath.db"))).toBe(true);
    expect(existsSync(join(home, "gateway", "master.key"))).toBe(true);
    expect(await fetchFails(`${s.url}/health`)).toBe(true);
  });

  test("it runs with the runtime settings it re-executes itself for (the fetch pool, the allocator), an operator's own value of each kept", async () => {
    /** The environment the running process was (re-)executed with. */
    const environ = (pid: number) => Object.fromEntries(readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]));
    const plain = await serve(["--admin-token", "t0ken-for-test-24-characters"], { ATH_HOME: await tmp() });
    const own = await serve(["--admin-token", "t0ken-for-test-24-characters"], { ATH_HOME: await tmp(), MIMALLOC_PURGE_HOLES: "1" });
    try {
      expect(environ(plain.p.pid)).toMatchObject({ BUN_CONFIG_MAX_HTTP_REQUESTS: "65336", MIMALLOC_PURGE_HOLES: "0" });
      expect(environ(own.p.pid)).toMatchObject({ BUN_CONFIG_MAX_HTTP_REQUESTS: "65336", MIMALLOC_PURGE_HOLES: "1" });
      expect((await fetch(`${plain.url}/health`)).status).toBe(200);
    } finally {
      plain.p.kill("SIGTERM");
      own.p.kill("SIGTERM");
      expect([await plain.p.exited, await own.p.exited]).toEqual([0, 0]);
    }
  });

  test("audit events still queued when SIGTERM arrives are written before the process exits", async () => {
    const home = await tmp();
    const s = await serve(["--admin-token", "t0ken-for-test-24-characters"], { ATH_HOME: home });
    // a registration is audited (agent.registered); SIGTERM follows at once
    const registered = await register(s.url, await makeAgent(), { providers: [{ provider_id: "none", scopes: ["x"] }] });
    expect(registered.status).toBe(201);
    s.p.kill("SIGTERM");
    expect(await s.p.exited).toBe(0);
    const db = new Database(join(home, "gateway", "ath.db"), { readonly: true });
    try {
      const types = db.query<{ type: string }, []>("SELECT type FROM audit").all().map((r) => r.type);
      expect(types).toContain("agent.registered");
    } finally {
      db.close();
    }
  });
});

describe("ath serve — TLS", () => {
  test("--tls-cert/--tls-key serve HTTPS on an https base URL, refusing TLS below 1.2 (spec §5)", async () => {
    const dir = await tmp();
    const [cert, key] = [join(dir, "cert.pem"), join(dir, "key.pem")];
    const made = Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
      "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert]);
    expect(made.exitCode).toBe(0);
    const s = await serve(["--tls-cert", cert, "--tls-key", key, "--data-dir", join(dir, "data"), "--admin-token", "t0ken-for-test-24-characters"], { ATH_HOME: dir });
    try {
      expect(s.url.startsWith("https://127.0.0.1:")).toBe(true);
      const tls = { ca: await Bun.file(cert).text() };
      const health = await fetch(`${s.url}/health`, { tls } as RequestInit);
      expect(health.status).toBe(200);
      const doc = (await (await fetch(`${s.url}/.well-known/ath.json`, { tls } as RequestInit)).json()) as { agent_registration_endpoint: string };
      expect(doc.agent_registration_endpoint).toBe(`${s.url}/ath/agents/register`);
      // an untrusted certificate is refused by a client that checks it: this really is TLS
      expect(await fetchFails(`${s.url}/health`)).toBe(true);
      const port = new URL(s.url).port;
      // SECLEVEL=0 lets the client offer TLS 1.1, so a refusal is the server's ("alert protocol version")
      const handshake = (version: string) =>
        Bun.spawnSync(["openssl", "s_client", "-connect", `127.0.0.1:${port}`, version, "-cipher", "DEFAULT@SECLEVEL=0"], {
          stdin: new TextEncoder().encode("Q\n"),
          timeout: 10_000,
        });
      expect(handshake("-tls1_2").exitCode).toBe(0);
      const old = handshake("-tls1_1");
      expect(old.exitCode).not.toBe(0);
      expect(old.stderr.toString()).toContain("alert protocol version");
      // the CLI against a self-signed gateway: exit 5 with how to trust it, and trusting it works
      const home = { ...process.env, ATH_HOME: dir, NO_COLOR: "1" };
      const untrusted = Bun.spawnSync([BIN, "discover", "-g", s.url], { env: home });
      expect(untrusted.exitCode).toBe(5);
      expect(untrusted.stderr.toString()).toContain("SELF_SIGNED_CERT");
      expect(untrusted.stderr.toString()).toContain("NODE_EXTRA_CA_CERTS=<ca.pem> (or SSL_CERT_FILE)");
      expect(Bun.spawnSync([BIN, "discover", "-g", s.url], { env: { ...home, NODE_EXTRA_CA_CERTS: cert } }).exitCode).toBe(0);
    } finally {
      s.p.kill("SIGTERM");
      await s.p.exited;
    }
  });

  test("TLS files that cannot be read or used are usage errors naming the flag", async () => {
    const missing = await serveFails(["--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/nonexistent/key.pem"]);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("--tls-cert /nonexistent/cert.pem: cannot read it: no such file");
    const dir = await tmp();
    const notPem = join(dir, "not.pem");
    await writeFile(notPem, "not a certificate");
    const bad = await serveFails(["--tls-cert", notPem, "--tls-key", notPem]);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain("--tls-cert/--tls-key:");
  });

  test("--tls-cert without --tls-key is a usage error", async () => {
    const r = await serveFails(["--tls-cert", "/nonexistent.pem"]);
    expect(r.code).toBe(2);
    expect(r.err).toContain("--tls-cert and --tls-key go together");
  });
});

