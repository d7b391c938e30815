/**
 * The verifiable audit log (DESIGN §20) end to end: `dist/ath serve --demo` writes the chain (agent registration,
 * consent, token, proxied calls audited as proxy.call without bodies), `ath admin audit export` takes it out,
 * `ath admin audit verify` checks it offline — exit 0 intact; every mutation (a flipped byte, a dropped, reordered or
 * inserted record, a checkpoint signed by another key) exit 1 naming the first bad seq — and `ath admin audit key`
 * gives the key to pin with `--key`. `--since` starts at a checkpoint and verifies alone.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync, sign } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { auditKeyId, checkpointMessage } from "../../src/protocol/audit-chain.ts";
import { authorize, call, consent, exchange, registeredAgent } from "../helpers/agent.ts";
import { ath, ensureBinary } from "../helpers/cli-binary.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { tempDir } from "../helpers/net.ts";

let gw: Gateway;
let home: { path: string; remove: () => Promise<void> };
let exported = "";
let lines: Record<string, any>[] = [];
const PROXIED = 30;

const admin = (...args: string[]) => ath(home.path, ["admin", ...args, "-g", gw.baseUrl], { ATH_ADMIN_TOKEN: gw.adminToken });
const file = (name: string, text: string) => {
  const p = join(home.path, name);
  writeFileSync(p, text);
  return p;
};
const jsonl = (ls: unknown[]) => ls.map((l) => JSON.stringify(l)).join("\n") + "\n";
/** Runs verify on `ls` and returns [exit code, the seq its message names]. */
async function verify(ls: unknown[], ...extra: string[]): Promise<[number, number | null, string]> {
  const r = await admin("audit", "verify", file(`v-${crypto.randomUUID()}.jsonl`, jsonl(ls)), ...extra);
  const m = /broken at seq (\d+)/.exec(r.stderr);
  return [r.code, m ? Number(m[1]) : null, r.stderr + r.stdout];
}

beforeAll(async () => {
  ensureBinary();
  gw = await startGateway({ binary: true, providers: {}, extraArgs: ["--demo", "--approval", "auto"] });
  home = await tempDir("audit-chain");
  const base = gw.baseUrl;
  const agent = await registeredAgent(base, { providers: [{ provider_id: "demo", scopes: ["notes:read"] }] });
  const authz = await authorize(base, agent.agent, agent.client, { provider_id: "demo", scopes: ["notes:read"] });
  const consented = await consent(String(authz.json.authorization_url));
  const token = await exchange(base, agent.agent, agent.client, { code: consented.code!, ath_session_id: String(authz.json.ath_session_id) });
  expect(token.status).toBe(200);
  const bearer = String(token.json.access_token);
  for (let i = 0; i < PROXIED; i++) {
    const r = await call(`${base}/ath/proxy/demo/notes?secret_query=q${i}`, { headers: { authorization: `Bearer ${bearer}` } });
    expect(r.status).toBe(200);
    // A token's calls of one audit batch (50 ms) are one record: most calls here wait out the batch, so the chain has
    // enough records for the mutation cases below; the last few go back to back.
    if (i < PROXIED - 5) await Bun.sleep(60);
  }
  const r = await admin("audit", "export");
  expect(r.code).toBe(0);
  exported = r.stdout;
  lines = exported.trim().split("\n").map((l) => JSON.parse(l));
  expect(exported).not.toContain(bearer);
  expect(exported).not.toContain("secret_query");
}, 180_000);
afterAll(async () => {
  await home?.remove();
  await gw?.cleanup();
});

const records = () => lines.filter((l) => l.type !== "key" && l.type !== "checkpoint");

describe("the export", () => {
  test("key line first, records seq 1… with prev_hash chained from 64 zeros, ending on a signed checkpoint of the head", () => {
    expect(lines[0]).toMatchObject({ type: "key", jwk: { kty: "OKP", crv: "Ed25519" } });
    const rs = records();
    expect(rs.map((r) => r.seq)).toEqual(rs.map((_, i) => i + 1));
    expect(rs[0]!.prev_hash).toBe("0".repeat(64));
    for (const r of rs) expect(r.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(lines.at(-1)).toMatchObject({ type: "checkpoint", seq: rs.length, hash: rs.at(-1)!.hash });
    expect(rs.map((r) => r.type)).toContain("token.issued");
  });

  test("proxied calls are records of type proxy.call, a token's calls of one batch in one: each request line (method, path, status) with every call's time — no query, no body, no token", () => {
    const grouped = records().filter((r) => r.type === "proxy.call");
    const lines = grouped.flatMap((r) => (r.data as { calls: Record<string, unknown>[] }).calls);
    for (const l of lines) {
      expect(Object.keys(l).sort()).toEqual(["method", "ms", "path", "status"]);
      expect(l).toMatchObject({ method: "GET", path: "/notes", status: 200 });
    }
    // every call once, at the record's time plus its offset, in the order made
    const times = grouped.flatMap((r) => (r.data as { calls: { ms: number[] }[] }).calls.flatMap((l) => l.ms.map((ms) => Date.parse(String(r.at)) + ms)));
    expect(times).toHaveLength(PROXIED);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    for (const r of grouped) expect((r.data as { calls: { ms: number[] }[] }).calls[0]!.ms[0]).toBe(0); // a record's at is its first call's
    // the calls made back to back (the last five) share records: fewer records than calls
    expect(grouped.length).toBeLessThan(PROXIED);
    expect(Math.max(...lines.map((l) => (l.ms as number[]).length))).toBeGreaterThan(1);
    expect(grouped[0]).toMatchObject({ provider_id: "demo" });
    expect(grouped[0]!.client_id).toMatch(/^ath_/);
    expect(JSON.stringify(grouped)).not.toContain("secret_query");
  });

  test("the key at /.well-known/ath-audit-key and `ath admin audit key` is the export's", async () => {
    const wellKnown = await call(`${gw.baseUrl}/.well-known/ath-audit-key`);
    expect(wellKnown.json).toEqual(lines[0]!.jwk);
    const r = await admin("audit", "key");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(lines[0]!.jwk);
    expect(lines[0]!.jwk.kid).toBe(auditKeyId(lines[0]!.jwk.x));
  });
});

describe("ath admin audit verify", () => {
  test("intact: exit 0, saying which key it trusted — the export's own, or the one given with --key", async () => {
    const own = await admin("audit", "verify", file("a.jsonl", exported));
    expect(own.code).toBe(0);
    expect(own.stdout).toContain(`intact: ${records().length} record(s)`);
    expect(own.stdout).toContain("the export's own key");
    const keyFile = file("key.json", (await admin("audit", "key")).stdout);
    const pinned = await admin("audit", "verify", join(home.path, "a.jsonl"), "--key", keyFile);
    expect(pinned.code).toBe(0);
    expect(pinned.stdout).toContain("the given key");
    const json = await admin("audit", "verify", join(home.path, "a.jsonl"), "--format", "json");
    expect(json.json()).toMatchObject({ ok: true, records: records().length, range: [1, records().length], keySource: "export" });
  });

  test("a flipped byte in a record: exit 1 at that seq", async () => {
    const k = 7;
    const i = lines.findIndex((l) => l.seq === k && l.type !== "checkpoint");
    const mutated = lines.map((l, j) => (j === i ? { ...l, at: l.at.replace(/\d(?=Z$)/, (d: string) => String((Number(d) + 1) % 10)) } : l));
    expect(await verify(mutated)).toEqual([1, k, expect.stringContaining("altered")]);
  });

  test("a dropped record: exit 1 at its seq", async () => {
    const i = lines.findIndex((l) => l.seq === 12 && l.type !== "checkpoint");
    expect((await verify(lines.filter((_, j) => j !== i))).slice(0, 2)).toEqual([1, 12]);
    // the first record: nothing anchors the start
    expect((await verify(lines.filter((_, j) => j !== 1))).slice(0, 2)).toEqual([1, 1]);
    // the last record, before the closing checkpoint
    const last = lines.length - 2;
    expect((await verify(lines.filter((_, j) => j !== last))).slice(0, 2)).toEqual([1, records().length]);
  });

  test("two records swapped: exit 1 at the first of them", async () => {
    const i = lines.findIndex((l) => l.seq === 20 && l.type !== "checkpoint");
    const swapped = [...lines];
    [swapped[i], swapped[i + 1]] = [swapped[i + 1]!, swapped[i]!];
    expect((await verify(swapped)).slice(0, 2)).toEqual([1, 20]);
  });

  test("an inserted record, even a well-formed link: exit 1 at the first seq that no longer fits", async () => {
    const i = lines.findIndex((l) => l.seq === 15 && l.type !== "checkpoint");
    const forged: Record<string, any> = { ...lines[i], seq: 16, prev_hash: lines[i]!.hash, type: "token.revoked" };
    const { hash: _, ...body } = forged;
    const { canonicalize } = await import("../../src/protocol/jcs.ts");
    forged.hash = new Bun.CryptoHasher("sha256").update(canonicalize(body)).digest("hex");
    const withForgery = [...lines.slice(0, i + 1), forged, ...lines.slice(i + 1)];
    expect((await verify(withForgery)).slice(0, 2)).toEqual([1, 16]);
  });

  test("a checkpoint signed by another key: exit 1 at its seq; --key with a foreign key fails at the first checkpoint", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const last = lines.at(-1)!;
    const resigned = { ...last, signature: sign(null, checkpointMessage(last as never), privateKey).toString("base64url") };
    expect((await verify([...lines.slice(0, -1), resigned])).slice(0, 2)).toEqual([1, last.seq]);
    const x = publicKey.export({ format: "jwk" }).x!;
    const foreign = file("foreign.json", JSON.stringify({ kty: "OKP", crv: "Ed25519", x, kid: auditKeyId(x) }));
    const [code, seq] = await verify(lines, "--key", foreign);
    expect([code, seq]).toEqual([1, lines.find((l) => l.type === "checkpoint")!.seq]);
  });

  test("an export whose tail is cut (no closing checkpoint) fails; a missing file is a usage error (exit 2)", async () => {
    expect((await verify(lines.slice(0, -1))).slice(0, 2)).toEqual([1, 1]);
    expect((await admin("audit", "verify", join(home.path, "nope.jsonl"))).code).toBe(2);
    expect((await admin("audit", "verify")).code).toBe(2);
    expect((await admin("audit", "frobnicate")).code).toBe(2);
  });
});

describe("--since", () => {
  test("starts at the last checkpoint signed before T and verifies alone", async () => {
    const since = new Date().toISOString();
    await Bun.sleep(5);
    // new records after T (three more proxied calls would need the token: agent registrations are enough)
    await registeredAgent(gw.baseUrl, { providers: [{ provider_id: "demo", scopes: ["notes:read"] }] });
    const r = await admin("audit", "export", "--since", since);
    expect(r.code).toBe(0);
    const part = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
    const fullEnd = lines.at(-1)!;
    expect(part[1]).toMatchObject({ type: "checkpoint", seq: fullEnd.seq, hash: fullEnd.hash });
    expect(part[2]).toMatchObject({ seq: fullEnd.seq + 1, prev_hash: fullEnd.hash, type: "agent.registered" });
    const ok = await admin("audit", "verify", file("since.jsonl", r.stdout));
    expect(ok.code).toBe(0);
    expect((await admin("audit", "export", "--since", "yesterday-ish")).code).toBe(2);
  });
});
