/**
 * DESIGN §14 "Bounded work per input", identity-document fetches over real sockets: `Accept-Encoding: identity`,
 * an unasked `Content-Encoding` refused without inflating anything, the 64 KiB cap on the bytes as received, and the
 * connection made to the very address that was checked — a resolver that answers differently on a second lookup
 * (DNS rebinding) is asked once, and nothing reaches the address of its second answer; over https the certificate is
 * still verified against the name (Bun's fetch: `tls.serverName`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateKeyPem, loadKey, type AgentKey } from "../../../../src/agent/keys.ts";
import { createKeyResolver } from "../../../../src/gateway/identity/agent-keys.ts";
import { rejection } from "../../../helpers/expect-error.ts";

let key: AgentKey;
const seen: { at: string; headers: Headers; path: string }[] = [];
const servers: ReturnType<typeof Bun.serve>[] = [];
let tls: { cert: string; key: string; dir: string };

/** A document server on `address` (a loopback address of its own); `answer` decides per path. */
function serveAt(address: string, answer: (path: string, agentId: (path: string) => string) => Response, o: { tls?: boolean } = {}) {
  const s = Bun.serve({
    hostname: address,
    port: 0,
    ...(o.tls ? { tls: { cert: tls.cert, key: tls.key } } : {}),
    fetch(req) {
      const path = new URL(req.url).pathname;
      seen.push({ at: address, headers: req.headers, path });
      const host = req.headers.get("host")!;
      return answer(path, (p) => `${o.tls ? "https" : "http"}://${host}${p}`);
    },
  });
  servers.push(s);
  return s;
}

const doc = (agentId: string) =>
  Response.json({ ath_version: "0.1", agent_id: agentId, name: "Test agent", developer: { name: "Dev", id: "dev-1" }, public_key: key.publicJwk });

beforeAll(async () => {
  key = await loadKey(await generateKeyPem());
  const dir = await mkdtemp(join(tmpdir(), "ath-idfetch-"));
  const made = Bun.spawnSync([
    "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
    "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-subj", "/CN=agent.rebind.test", "-addext", "subjectAltName=DNS:agent.rebind.test",
  ]);
  if (made.exitCode !== 0) throw new Error(made.stderr.toString());
  tls = { cert: await readFile(join(dir, "cert.pem"), "utf8"), key: await readFile(join(dir, "key.pem"), "utf8"), dir };
});
afterAll(async () => {
  for (const s of servers) s.stop(true);
  await rm(tls.dir, { recursive: true, force: true });
});

/** A resolver that answers `first` once, then `later` (what a rebinding DNS server does); it counts its lookups. */
function rebinding(first: string, later: string) {
  const lookups: string[] = [];
  return {
    lookups,
    lookup: async (host: string) => {
      lookups.push(host);
      return [lookups.length === 1 ? first : later];
    },
  };
}

describe("the connection goes to the address that was checked (no second lookup)", () => {
  test("http (dev): the name is resolved once; the document comes from the checked address, the second answer sees nothing", async () => {
    const good = serveAt("127.0.0.2", (path, id) => doc(id(path)));
    const evil = serveAt("127.0.0.3", () => new Response("internal secrets", { status: 200 }));
    const dns = rebinding("127.0.0.2", "127.0.0.3");
    const keys = createKeyResolver({ dev: true, lookup: dns.lookup });
    // `agent.rebind.test` exists in no DNS: had fetch looked the name up again, it could not have connected at all
    const agentId = `http://agent.rebind.test:${good.port}/agent.json`;
    const k = await keys.get(agentId);
    expect(k.type).toBe("public");
    expect(dns.lookups).toEqual(["agent.rebind.test"]);
    expect(seen.filter((s) => s.at === "127.0.0.3")).toEqual([]);
    const hit = seen.find((s) => s.at === "127.0.0.2")!;
    expect(hit.headers.get("host")).toBe(`agent.rebind.test:${good.port}`);
    expect(hit.headers.get("accept-encoding")).toBe("identity");
    void evil;
  });

  test("https: connected to the checked address, the certificate verified against the name (and refused for another)", async () => {
    const good = serveAt("127.0.0.4", (path, id) => doc(id(path)), { tls: true });
    const trusting = ((input: string | URL | Request, init?: RequestInit & { tls?: Record<string, unknown> }) =>
      fetch(input, { ...init, tls: { ...init?.tls, ca: tls.cert } } as RequestInit)) as typeof fetch;
    const dns = rebinding("127.0.0.4", "127.0.0.5");
    const keys = createKeyResolver({ dev: true, lookup: dns.lookup, fetch: trusting });
    const k = await keys.get(`https://agent.rebind.test:${good.port}/agent.json`);
    expect(k.type).toBe("public");
    expect(dns.lookups).toEqual(["agent.rebind.test"]);
    // the same server under a name its certificate does not carry: refused by the TLS check, not fetched around it
    const other = createKeyResolver({ dev: true, lookup: async () => ["127.0.0.4"], fetch: trusting });
    const err = await rejection(other.get(`https://other.rebind.test:${good.port}/agent.json`));
    expect(err.message).toContain("the identity document could not be fetched");
  });
});

describe("bytes as received", () => {
  test("an unasked Content-Encoding (a gzip bomb) is refused without inflating it", async () => {
    const bomb = Bun.gzipSync(new Uint8Array(50 * 1024 * 1024)); // 50 MiB of zeros in ≈ 50 KiB
    expect(bomb.byteLength).toBeLessThan(64 * 1024);
    const s = serveAt("127.0.0.6", () => new Response(bomb, { headers: { "content-type": "application/json", "content-encoding": "gzip" } }));
    const keys = createKeyResolver({ dev: true });
    const err = await rejection(keys.get(`http://127.0.0.6:${s.port}/bomb.json`));
    expect(err.code).toBe("INVALID_ATTESTATION");
    expect(err.message).toContain('came with Content-Encoding "gzip", which was not asked for');
    expect(seen.find((x) => x.at === "127.0.0.6")!.headers.get("accept-encoding")).toBe("identity");
  });

  test("the 64 KiB cap counts the bytes on the wire: a compressed body sent without Content-Encoding is not inflated either", async () => {
    const big = Bun.gzipSync(new Uint8Array(4 * 1024 * 1024).fill(32)); // small, and garbage unless inflated
    const s = serveAt("127.0.0.7", (path) => (path === "/big" ? new Response(new Uint8Array(65 * 1024).fill(32)) : new Response(big)));
    const keys = createKeyResolver({ dev: true });
    expect((await rejection(keys.get(`http://127.0.0.7:${s.port}/big`))).message).toContain("larger than 64 KiB");
    expect((await rejection(keys.get(`http://127.0.0.7:${s.port}/gz`))).message).toContain("not JSON");
  });
});
