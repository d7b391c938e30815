/**
 * The verifiable audit log (DESIGN §20) end to end: `dist/ath serve --demo` writes the chain (agent registration,
 * consent, token, proxied calls audited as proxy.call without bodies), `ath admin audit export` takes it out,
 * `ath admin audit verify` checks it offline — exit 0 intact; every mutation (a flipped byte, a dropped, reordered or
 * inserted record, a checkpoint signed by another key, a line with a name twice) exit 1 naming the first bad seq; an
 * export cut anywhere — right after a checkpoint, down to its key line — exit 1 "truncated" (issue 35, finding 6) —
 * and `ath admin audit key` gives the key to pin with `--key`. `--since` starts at a checkpoint and verifies alone.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync, sign } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { verifyAuditExport } from "../../src/agent/audit-verify.ts";
import { auditKeyId, checkpointMessage, endMessage } from "../../src/protocol/audit-chain.ts";
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

const records = (ls = lines) => ls.filter((l) => l.type !== "key" && l.type !== "checkpoint" && l.type !== "end");
let later: Record<string, any>[] | undefined;
/** A second export, after more records: the first export's head checkpoint now stands inside the chain. */
async function laterExport(): Promise<Record<string, any>[]> {
  if (later) return later;
  await registeredAgent(gw.baseUrl, { providers: [{ provider_id: "demo", scopes: ["notes:read"] }] });
  const r = await admin("audit", "export");
  expect(r.code).toBe(0);
  return (later = r.stdout.trim().split("\n").map((l) => JSON.parse(l)));
}

describe("the export", () => {
  test("key line first, records seq 1… with prev_hash chained from 64 zeros, a signed checkpoint of the head, then the closing line", () => {
    expect(lines[0]).toMatchObject({ type: "key", jwk: { kty: "OKP", crv: "Ed25519" } });
    const rs = records();
    expect(rs.map((r) => r.seq)).toEqual(rs.map((_, i) => i + 1));
    expect(rs[0]!.prev_hash).toBe("0".repeat(64));
    for (const r of rs) expect(r.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(lines.at(-2)).toMatchObject({ type: "checkpoint", seq: rs.length, hash: rs.at(-1)!.hash });
    expect(lines.at(-1)).toMatchObject({ type: "end", seq: rs.length, hash: rs.at(-1)!.hash });
    expect(lines.at(-1)!.signature).toMatch(/^[\w-]{86}$/);
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
    expect(own.stdout).toContain(`closed at seq ${records().length}, signed ${lines.at(-1)!.time}`);
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
    // the last record, before the checkpoint of the head and the closing line
    const last = lines.length - 3;
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
    const i = lines.length - 2;
    const last = lines[i]!;
    const resigned = { ...last, signature: sign(null, checkpointMessage(last as never), privateKey).toString("base64url") };
    expect((await verify(lines.map((l, j) => (j === i ? resigned : l)))).slice(0, 2)).toEqual([1, last.seq]);
    // the closing line too
    const end = lines.at(-1)!;
    const endResigned = { ...end, signature: sign(null, endMessage(end as never), privateKey).toString("base64url") };
    expect(await verify([...lines.slice(0, -1), endResigned])).toEqual([1, end.seq, expect.stringContaining("the closing line at seq")]);
    const x = publicKey.export({ format: "jwk" }).x!;
    const foreign = file("foreign.json", JSON.stringify({ kty: "OKP", crv: "Ed25519", x, kid: auditKeyId(x) }));
    const [code, seq] = await verify(lines, "--key", foreign);
    expect([code, seq]).toEqual([1, lines.find((l) => l.type === "checkpoint")!.seq]);
  });

  test("an export cut right after any signed checkpoint, or down to its key line, is truncated: exit 1 naming it", async () => {
    const ls = await laterExport();
    const cuts = ls.flatMap((l, j) => (l.type === "checkpoint" ? [j + 1] : []));
    expect(cuts.length).toBeGreaterThanOrEqual(2); // the first export's checkpoint inside, and the head's
    expect(verifyAuditExport(jsonl(ls))).toMatchObject({ ok: true });
    for (const cut of [...cuts, 1, ls.length - 1, ls.length - 3]) {
      const r = await admin("audit", "verify", file(`cut-${cut}.jsonl`, jsonl(ls.slice(0, cut))));
      expect({ cut, code: r.code }).toEqual({ cut, code: 1 });
      expect(r.stderr).toMatch(/^ath: truncated: the export has no closing line: it was cut after (seq \d+|its key line)/);
    }
    const json = await admin("audit", "verify", file("cut-json.jsonl", jsonl(lines.slice(0, 1))), "--format", "json");
    expect(json.code).toBe(1);
    expect(json.json()).toMatchObject({ error: { code: "AUDIT_EXPORT_TRUNCATED", details: { kind: "truncated", seq: null } } });
  });

  test("a checkpoint relabelled as the closing line, or a closing line moved up, does not pass", async () => {
    const cp = lines.at(-2)!;
    expect((await verify([...lines.slice(0, -1), { ...cp, type: "end" }])).slice(0, 2)).toEqual([1, cp.seq]);
    const ls = await laterExport();
    const early = ls.findIndex((l) => l.type === "checkpoint");
    expect(early).toBeLessThan(ls.length - 2);
    const [code, , said] = await verify([...ls.slice(0, early + 1), ls.at(-1)!, ...ls.slice(early + 1, -1)]);
    expect(code).toBe(1);
    expect(said).toContain("the closing line at seq");
    // nothing may follow it
    expect((await verify([...lines, records()[0]]))[2]).toContain("a line after the export's closing line");
  });

  test("a record line with a name twice is a bad line, whichever value JSON.parse would keep: exit 1 at its seq", async () => {
    const k = 9;
    const i = lines.findIndex((l) => l.seq === k && l.type !== "checkpoint");
    const text = jsonl(lines).split("\n");
    // the forged value first: a last-wins parser keeps the hashed one, another reader the forged one
    const forgedFirst = text[i]!.replace(/^\{/, '{"type":"token.revoked",');
    const nested = text[i]!.replace(/"data":(null|\{)/, (_m, v: string) => (v === "null" ? '"data":{"a":1,"a":2}' : '"data":{"a":1,"a":2,'));
    for (const line of [forgedFirst, nested]) {
      const r = await admin("audit", "verify", file(`dup-${crypto.randomUUID()}.jsonl`, text.map((l, j) => (j === i ? line : l)).join("\n")));
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`broken at seq ${k}: a line is not strict JSON`);
      expect(r.stderr).toMatch(/appears twice in one object/);
    }
  });

  test("a missing file is a usage error (exit 2)", async () => {
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
    const fullEnd = (later ?? lines).at(-2)!; // the head checkpoint of the newest export before T
    expect(part[1]).toMatchObject({ type: "checkpoint", seq: fullEnd.seq, hash: fullEnd.hash });
    expect(part[2]).toMatchObject({ seq: fullEnd.seq + 1, prev_hash: fullEnd.hash, type: "agent.registered" });
    const ok = await admin("audit", "verify", file("since.jsonl", r.stdout));
    expect(ok.code).toBe(0);
    expect((await admin("audit", "export", "--since", "yesterday-ish")).code).toBe(2);
  });
});
