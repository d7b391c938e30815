/**
 * Ready means configured (DESIGN §14): the compiled gateway, started fresh on PostgreSQL with a providers file of 150
 * entries, is probed from the moment it is spawned — /health in a tight loop — and the first answer it gives already
 * comes from a gateway whose every provider is in the store: discovery lists all 150, and a registration for the last
 * one is approved. Several fresh starts (before: "unknown provider" in 2 of 20 under load).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { register } from "../helpers/agent.ts";
import { makeAgent } from "../helpers/attestations.ts";
import { ATH_BIN, ensureBinary } from "../helpers/cli-binary.ts";
import { freePort } from "../helpers/net.ts";
import { PG_URL } from "../helpers/store-harness.ts";

const PROVIDERS = 150;
const STARTS = 4;
const schemas: string[] = [];

afterAll(async () => {
  const sql = new SQL(PG_URL);
  try {
    for (const s of schemas) await sql.unsafe(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  } finally {
    await sql.close();
  }
});

function providersFile(dir: string): string {
  const entries = Object.fromEntries(
    Array.from({ length: PROVIDERS }, (_, i) => [
      `p${i}`,
      {
        display_name: `Provider ${i}`,
        available_scopes: ["read"],
        authorize_endpoint: "https://provider.example/authorize",
        token_endpoint: "https://provider.example/token",
        client_id: `client-${i}`,
        client_secret: `secret-${i}`,
      },
    ]),
  );
  const path = join(dir, "providers.json");
  writeFileSync(path, JSON.stringify(entries));
  return path;
}

/** GET /health until something answers (connection refused until the port is bound). */
async function firstAnswer(base: string): Promise<number> {
  for (let i = 0; i < 2_000; i++) {
    try {
      return (await fetch(`${base}/health`)).status;
    } catch {
      await Bun.sleep(2);
    }
  }
  throw new Error("the gateway never answered");
}

describe("ready means configured", () => {
  test(`${STARTS} fresh starts on PostgreSQL: the first answer comes from a gateway with all ${PROVIDERS} providers in the store`, async () => {
    ensureBinary();
    for (let start = 0; start < STARTS; start++) {
      const dir = mkdtempSync(join(tmpdir(), "ath-ready-"));
      const schema = `ath_ready_${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex")}`;
      schemas.push(schema);
      const db = new URL(PG_URL);
      db.searchParams.set("schema", schema);
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const proc = Bun.spawn(
        [ATH_BIN, "serve", "--port", String(port), "--db", db.href, "--data-dir", dir, "--providers", providersFile(dir), "--admin-token", "admin-ready-test-token-of-24"],
        { env: { ...process.env, ATH_HOME: dir }, stdout: "ignore", stderr: "pipe" },
      );
      try {
        expect(await firstAnswer(base)).toBe(200);
        const listed = ((await (await fetch(`${base}/.well-known/ath.json`)).json()) as { supported_providers: unknown[] }).supported_providers;
        expect(listed.length).toBe(PROVIDERS);
        const r = await register(base, await makeAgent(), { providers: [{ provider_id: `p${PROVIDERS - 1}`, scopes: ["read"] }] });
        expect({ start, status: r.status, agent_status: r.json.agent_status }).toEqual({ start, status: 201, agent_status: "approved" });
      } finally {
        proc.kill("SIGKILL");
        await proc.exited;
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }, 120_000);
});
