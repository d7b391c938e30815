/**
 * DESIGN §14 "Bounded work per input" through the compiled gateway: unauthenticated registrations whose agent_id names
 * a gzip bomb (≈ 200 KiB on the wire, 200 MiB inflated, `Content-Encoding: gzip` though `identity` was asked) are
 * refused with INVALID_ATTESTATION, and the gateway's peak RSS (VmHWM) barely moves — before, each cost 160–220 MB.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { register } from "../helpers/agent.ts";
import { makeAgent } from "../helpers/attestations.ts";
import { ATH_BIN, ensureBinary } from "../helpers/cli-binary.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";

let gw: Gateway;
let bombServer: ReturnType<typeof Bun.serve>;
const asked: (string | null)[] = [];

beforeAll(async () => {
  ensureBinary();
  const bomb = Bun.gzipSync(new Uint8Array(200 * 1024 * 1024), { level: 9 });
  bombServer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      asked.push(req.headers.get("accept-encoding"));
      return new Response(bomb, { headers: { "content-type": "application/json", "content-encoding": "gzip" } });
    },
  });
  gw = await startGateway({ binary: ATH_BIN, providers: {} });
}, 60_000);
afterAll(async () => {
  await gw?.cleanup();
  bombServer?.stop(true);
});

/** Peak resident set of the gateway process so far, in MiB (Linux /proc). */
function peakRssMiB(pid: number): number {
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
  return kb / 1024;
}

describe("a gzip bomb as identity document", () => {
  test("each registration is refused INVALID_ATTESTATION, and the peak RSS grows by less than 32 MiB over 5 of them", async () => {
    const pid = gw.pid()!;
    const before = peakRssMiB(pid);
    for (let i = 0; i < 5; i++) {
      const agent = await makeAgent(`http://127.0.0.1:${bombServer.port}/agents/${i}.json`);
      const r = await register(gw.baseUrl, agent, { providers: [{ provider_id: "none", scopes: ["x"] }] });
      expect({ status: r.status, code: r.json.code }).toEqual({ status: 401, code: "INVALID_ATTESTATION" });
      expect(String(r.json.message)).toContain("Content-Encoding");
    }
    const after = peakRssMiB(pid);
    console.info(`[identity-bomb] gateway peak RSS ${before.toFixed(1)} → ${after.toFixed(1)} MiB over 5 bomb registrations`);
    expect(after - before).toBeLessThan(32);
    expect(asked).toEqual(["identity", "identity", "identity", "identity", "identity"]);
  });
});
