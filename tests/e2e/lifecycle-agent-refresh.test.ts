/**
 * An agent's life past its first token, through the compiled `ath` against a real `ath serve`, oidc-provider and the
 * sample API (DESIGN §17): with `--token-ttl 2`, `ath proxy` keeps working across three token lifetimes without a
 * person (the CLI refreshes by itself, with DPoP proofs by its key); two `ath token --refresh` started together make
 * exactly one refresh at the gateway (counted in its audit log); `ath status` names both expiries; `ath mcp`'s
 * ath_request refreshes the same way (the official SDK's client drives dist/ath mcp); and on a gateway with
 * `--refresh-idle 3 --refresh-ttl 8` the family ends — unused for 3 s, and 8 s after the consent however used — with
 * exit 4 naming the `ath authorize` to run. Three lifetimes prove what many would: each one crossed is a refresh.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { consent } from "../helpers/agent.ts";
import { ath, ensureBinary } from "../helpers/cli-binary.ts";
import { startHost } from "../helpers/mcp-host.ts";
import { tempDir } from "../helpers/net.ts";
import { startWorld, type World } from "../helpers/world.ts";

let short: World;
let ending: World;
const homes: { path: string; remove: () => Promise<void> }[] = [];

beforeAll(async () => {
  ensureBinary();
  [short, ending] = await Promise.all([
    startWorld({ extraArgs: ["--token-ttl", "2"] }),
    startWorld({ extraArgs: ["--token-ttl", "1", "--refresh-idle", "3", "--refresh-ttl", "8"] }),
  ]);
}, 120_000);
afterAll(async () => {
  for (const h of homes) await h.remove();
  await short?.stop();
  await ending?.stop();
});

/** A new home registered at `w` and holding a token for mail:read, got the way a person would give it. */
async function authorizedHome(w: World): Promise<string> {
  const home = await tempDir("life");
  homes.push(home);
  const gw = w.baseUrl;
  expect((await ath(home.path, ["register", "-g", gw, "--provider", "mail", "--scopes", "mail:read"])).code).toBe(0);
  const a = await ath(home.path, ["authorize", "-g", gw, "--provider", "mail", "--scopes", "mail:read", "--format", "json"]);
  expect(a.code).toBe(0);
  const c = await consent(a.json().authorization_url);
  const t = await ath(home.path, ["token", "-g", gw, "--code", String(c.code), "--format", "json"]);
  expect(t.code).toBe(0);
  const doc = t.json();
  // bound to the agent's key (DPoP) and refreshable; secrets masked
  expect(doc).toMatchObject({ token_type: "DPoP", refresh_token: expect.stringMatching(/^ath_.{0,8}…$/), refresh_expires_in: expect.any(Number) });
  return home.path;
}

async function audited(w: World, type: string): Promise<number> {
  const r = await fetch(`${w.baseUrl}/ath/admin/audit?type=${type}&limit=500`, { headers: { "x-ath-user-token": w.gw.adminToken } });
  return ((await r.json()) as { events: unknown[] }).events.length;
}

/** Past a token's whole life on the `short` gateway (--token-ttl 2). */
const LIFETIME_MS = 2_200;

const proxy = (home: string, w: World) => ath(home, ["proxy", "-g", w.baseUrl, "mail", "GET", "/v1/messages", "--format", "json"]);

describe("The CLI refreshes by itself (--token-ttl 2)", () => {
  test("ath proxy keeps working across three token lifetimes without a person; the gateway saw a refresh for each and no reuse", async () => {
    const home = await authorizedHome(short);
    const before = await audited(short, "token.refreshed");
    for (let call = 0; call < 4; call++) {
      if (call > 0) await Bun.sleep(LIFETIME_MS); // the token of the call before has expired
      const r = await proxy(home, short);
      if (r.code !== 0) throw new Error(`call ${call} failed (exit ${r.code}): ${r.stdout} ${r.stderr}`);
      expect(r.json().status).toBe(200);
    }
    await Bun.sleep(300); // the gateway's audit batch
    expect(await audited(short, "token.refreshed")).toBeGreaterThanOrEqual(before + 3);
    expect(await audited(short, "refresh.reuse_detected")).toBe(0);
    const status = await ath(home, ["status", "-g", short.baseUrl, "--format", "json"]);
    const [token] = status.json().registrations[0].tokens;
    expect(token.provider_id).toBe("mail");
    expect(Date.parse(token.refresh_expires_at)).toBeGreaterThan(Date.parse(token.expires_at));
    const text = await ath(home, ["status", "-g", short.baseUrl]);
    expect(text.stdout).toContain("refresh until ");
  }, 60_000);

  test("two `ath token --refresh` started together make exactly one refresh at the gateway; both print the saved token", async () => {
    const home = await authorizedHome(short);
    await Bun.sleep(300);
    const before = await audited(short, "token.refreshed");
    const [a, b] = await Promise.all([
      ath(home, ["token", "-g", short.baseUrl, "--refresh", "--format", "json"]),
      ath(home, ["token", "-g", short.baseUrl, "--refresh", "--format", "json"]),
    ]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect([a.json().refreshed, b.json().refreshed].sort()).toEqual([false, true]);
    expect(a.json().access_token).toBe(b.json().access_token);
    await Bun.sleep(300);
    expect(await audited(short, "token.refreshed")).toBe(before + 1);
    expect((await proxy(home, short)).code).toBe(0);
  }, 60_000);
});

describe("`ath status --refresh` refreshes too", () => {
  test("an expired token is refreshed and shown live; without --refresh nothing is asked", async () => {
    const home = await authorizedHome(short);
    await Bun.sleep(LIFETIME_MS);
    const offline = await ath(home, ["status", "-g", short.baseUrl, "--format", "json"]);
    expect(offline.json().registrations[0].tokens[0].expired).toBe(true);
    const before = await audited(short, "token.refreshed");
    const live = await ath(home, ["status", "-g", short.baseUrl, "--refresh", "--format", "json"]);
    expect(live.code).toBe(0);
    expect(live.json().registrations[0].tokens[0].expired).toBe(false);
    await Bun.sleep(300);
    expect(await audited(short, "token.refreshed")).toBe(before + 1);
  }, 60_000);
});

describe("`ath mcp` refreshes by itself too (--token-ttl 2)", () => {
  test("ath_request keeps answering 200 across three token lifetimes, the home's token refreshed and saved", async () => {
    const home = await authorizedHome(short);
    const before = await audited(short, "token.refreshed");
    const h = await startHost({ home, args: ["-g", short.baseUrl] });
    try {
      for (let i = 0; i < 3; i++) {
        await Bun.sleep(LIFETIME_MS);
        const r = await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/messages" });
        expect(r.isError).toBeUndefined();
        expect(r.structuredContent?.status).toBe(200);
      }
    } finally {
      await h.close();
    }
    await Bun.sleep(300);
    expect(await audited(short, "token.refreshed")).toBeGreaterThanOrEqual(before + 3);
  }, 60_000);
});

describe("The family ends (--refresh-idle 3, --refresh-ttl 8)", () => {
  test("unused for longer than --refresh-idle: exit 4 TOKEN_EXPIRED naming ath authorize — and the same again, the token kept dead", async () => {
    const home = await authorizedHome(ending);
    expect((await proxy(home, ending)).code).toBe(0);
    await Bun.sleep(4_000);
    const r = await proxy(home, ending);
    expect(r.code).toBe(4);
    expect(r.json().error).toMatchObject({ code: "TOKEN_EXPIRED", details: { reason: "refresh_token_expired" } });
    expect(r.json().error.message).toContain(`ath authorize -g ${ending.baseUrl} --provider mail`);
    // one condition, one exit code (issue 40: it was 4, then 3 NO_TOKEN)
    const again = await proxy(home, ending);
    expect({ code: again.code, error: again.json().error.code }).toEqual({ code: 4, error: "TOKEN_EXPIRED" });
  }, 60_000);

  test("used all along, it still ends --refresh-ttl after the consent", async () => {
    const home = await authorizedHome(ending);
    const started = Date.now();
    let last = await proxy(home, ending);
    while (last.code === 0 && Date.now() - started < 20_000) {
      await Bun.sleep(1_000);
      last = await proxy(home, ending);
    }
    const lived = Date.now() - started;
    expect(last.code).toBe(4);
    expect(last.json().error.code).toBe("TOKEN_EXPIRED");
    expect(lived).toBeGreaterThan(5_000); // it lived on by refreshing well past --token-ttl and --refresh-idle
  }, 60_000);
});
