/**
 * Persistence of `ath serve` (DESIGN §4, §6, §8): state survives a SIGKILL (live tokens work, revoked stay revoked,
 * agents and admin-added providers remain), SIGTERM stops it cleanly, and no file in the data dir — including the
 * SQLite -wal/-shm files — holds a secret or token in plaintext.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { call, fullFlow, register } from "../helpers/agent.ts";
import { expectError } from "../helpers/expect-error.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
let live: Awaited<ReturnType<typeof fullFlow>>;
let revoked: Awaited<ReturnType<typeof fullFlow>>;

beforeAll(async () => {
  w = await startWorld();
  live = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["openid", "mail:read"] });
  revoked = await fullFlow(w.baseUrl, { provider_id: "mailrules", scopes: ["mail:read"] });
  // use both once so upstream grants are exercised (and, for `mailrules`, revoked at the provider)
  for (const [p, t] of [["mail", live.accessToken], ["mailrules", revoked.accessToken]] as const) {
    const r = await call(`${w.baseUrl}/ath/proxy/${p}/v1/messages`, { headers: { authorization: `Bearer ${t}` } });
    if (r.status !== 200) throw new Error(r.text);
  }
  const rv = await call(`${w.baseUrl}/ath/revoke`, { form: { token: revoked.accessToken, ...revoked.client } });
  if (rv.status !== 200) throw new Error(rv.text);
});
afterAll(() => w?.stop());

async function readTree(dir: string): Promise<{ path: string; bytes: Buffer }[]> {
  const out: { path: string; bytes: Buffer }[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await readTree(path)));
    else if (entry.isFile()) out.push({ path, bytes: await readFile(path) });
  }
  return out;
}

describe("at rest", () => {
  test("no file in the data dir contains a client secret, an ATH token or an upstream token in plaintext", async () => {
    const files = await readTree(w.gw.dataDir);
    expect(files.some((f) => f.path.endsWith(".db") || f.path.includes("sqlite"))).toBe(true);
    const secrets: [string, string][] = [
      ["provider client secret (post)", w.auth.postClient.client_secret],
      ["provider client secret (basic)", w.auth.basicClient.client_secret],
      ["agent client secret", live.client.client_secret],
      ["agent client secret (revoked flow)", revoked.client.client_secret],
      ["ATH token", live.accessToken],
      ["revoked ATH token", revoked.accessToken],
      ["admin token", w.gw.adminToken],
      ...w.auth.issuedTokens.map((t): [string, string] => [`upstream ${t.kind}`, t.value]),
    ];
    expect(w.auth.issuedTokens.some((t) => t.kind === "RefreshToken")).toBe(true);
    expect(w.auth.issuedTokens.some((t) => t.kind === "AccessToken")).toBe(true);
    const leaks: string[] = [];
    for (const f of files) {
      for (const [name, secret] of secrets) {
        // raw bytes, in UTF-8 and UTF-16LE (SQLite may store text either way)
        if (f.bytes.includes(Buffer.from(secret, "utf8")) || f.bytes.includes(Buffer.from(secret, "utf16le"))) leaks.push(`${name} in ${f.path}`);
      }
    }
    expect(leaks).toEqual([]);
    // the scan does see stored data: the (public) agent_id is there
    expect(files.some((f) => f.bytes.includes(Buffer.from(live.agent.agentId)))).toBe(true);
  });
});

describe("restart", () => {
  test("after SIGKILL and a restart on the same data dir, the live token works and the revoked one stays revoked", async () => {
    const added = await call(`${w.baseUrl}/ath/admin/providers`, {
      headers: { "x-ath-user-token": w.gw.adminToken },
      json: {
        provider_id: "persisted",
        display_name: "Persisted",
        available_scopes: ["mail:read"],
        authorize_endpoint: w.auth.authorizeEndpoint,
        token_endpoint: w.auth.tokenEndpoint,
        client_id: w.auth.postClient.client_id,
        client_secret: w.auth.postClient.client_secret,
      },
    });
    expect(added.status).toBe(201);

    await w.gw.kill();
    await w.gw.restart();

    const ok = await call(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${live.accessToken}` } });
    expect(ok.status).toBe(200);
    const before = w.api.requests.length;
    expectError(await call(`${w.baseUrl}/ath/proxy/mailrules/v1/messages`, { headers: { authorization: `Bearer ${revoked.accessToken}` } }), "TOKEN_REVOKED");
    expect(w.api.requests.length).toBe(before);
    // the agent is still registered and the admin-added provider is still there
    expectError(await register(w.baseUrl, live.agent, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] }), "AGENT_ALREADY_REGISTERED");
    const discovery = await call(`${w.baseUrl}/.well-known/ath.json`);
    expect((discovery.json.supported_providers as { provider_id: string }[]).map((p) => p.provider_id)).toContain("persisted");
  });

  test("SIGTERM stops the gateway with exit code 0 and it starts again on the same data dir", async () => {
    expect(await w.gw.stop("SIGTERM")).toBe(0);
    await w.gw.restart();
    expect((await call(`${w.baseUrl}/health`)).status).toBe(200);
    expect((await call(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${live.accessToken}` } })).status).toBe(200);
  });
});
