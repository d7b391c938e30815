/**
 * The compiled `ath` as a process, where only a real process shows it: a reader that closes the pipe early
 * (`ath … | head`) gets no stack trace and no `ath: EPIPE`, and Ctrl-C during `authorize --wait` exits 130 having
 * dropped its pending session. The gateway is the same compiled binary as `ath serve --demo` on a loopback port.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { tempDir } from "../helpers/net.ts";
import { ATH_BIN, ath, athEnv, ensureBinary, readUntil, spawnAth } from "../helpers/cli-binary.ts";

let gw: Gateway | undefined;
let base = "";

beforeAll(async () => {
  ensureBinary();
  gw = await startGateway({ binary: ATH_BIN, providers: {}, extraArgs: ["--demo"] });
  base = gw.baseUrl;
}, 120_000);
afterAll(async () => {
  await gw?.cleanup();
});

/** A config.json far larger than a pipe's buffer, so the writer meets a closed pipe mid-way. */
async function bigHome(): Promise<{ path: string; remove: () => Promise<void> }> {
  const home = await tempDir("epipe");
  const gateways = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`g${i}`, `http://127.0.0.1:${1000 + i}`]));
  await writeFile(join(home.path, "config.json"), JSON.stringify({ gateways }), { mode: 0o600 });
  return home;
}

describe("a reader that goes away (EPIPE)", () => {
  for (const format of ["json", "text"]) {
    test(`${format} mode: ath ends quietly with its own exit code, no stack trace, no \`ath: EPIPE\``, async () => {
      const home = await bigHome();
      try {
        const p = Bun.spawn([ATH_BIN, "config", "show", "--format", format], { env: athEnv(home.path), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
        const reader = p.stdout.getReader();
        await reader.read();
        await reader.cancel(); // like `| head -c1`
        const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
        expect(stderr).toBe("");
        expect(code).toBe(0);
      } finally {
        await home.remove();
      }
    });
  }
});

describe("Ctrl-C during authorize --wait", () => {
  test("exits 130 and the pending session it saved is gone", async () => {
    const home = await tempDir("sigint");
    try {
      expect((await ath(home.path, ["register", "-g", base, "--provider", "demo", "--scopes", "notes:read"])).code).toBe(0);
      const p = spawnAth(home.path, ["authorize", "-g", base, "--provider", "demo", "--wait", "--no-open", "--timeout", "120"]);
      await readUntil(p.stderr, /waiting for the redirect on http:\/\/127\.0\.0\.1:\d+\/callback/);
      const saved = async () => JSON.parse(await readFile(join(home.path, "credentials.json"), "utf8")).gateways[base].agents;
      const pending = async () => Object.values(await saved()).flatMap((r) => Object.keys((r as { pending: object }).pending));
      expect(await pending()).toHaveLength(1);
      p.kill("SIGINT");
      expect(await p.exited).toBe(130);
      expect(await pending()).toEqual([]);
    } finally {
      await home.remove();
    }
  });

  test("with --format json, SIGINT and SIGTERM still print one error document (CANCELLED) on stdout", async () => {
    const home = await tempDir("sigint-json");
    try {
      expect((await ath(home.path, ["register", "-g", base, "--provider", "demo", "--scopes", "notes:read"])).code).toBe(0);
      for (const [signal, exit] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
        const p = spawnAth(home.path, ["authorize", "-g", base, "--provider", "demo", "--wait", "--no-open", "--timeout", "120", "--format", "json"]);
        await readUntil(p.stderr, /"redirect_uri":"http:\/\/127\.0\.0\.1:\d+\/callback"/);
        p.kill(signal);
        const [stdout, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
        expect(code).toBe(exit);
        expect(JSON.parse(stdout)).toEqual({ error: { code: "CANCELLED", message: `${signal} while waiting for approval; the session was abandoned` } });
      }
    } finally {
      await home.remove();
    }
  });
});
