/**
 * A registration that is not what the agent needs is not a dead end (issue 13, item 10), through the compiled CLI
 * against a real `dist/ath serve --approval manual`: `ath status --refresh` reads the live status an admin set
 * (GET /ath/agents/status, HTTP Basic) and saves it; `ath identity new` makes a new key current, and that identity
 * registers afresh for other scopes — the gateway's one-registration-per-agent_id rule (409) stays as the spec has it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ath, ensureBinary } from "../helpers/cli-binary.ts";
import { tempDir } from "../helpers/net.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
let home: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  ensureBinary();
  [w, home] = await Promise.all([startWorld({ binary: true, extraArgs: ["--approval", "manual"] }), tempDir("cli-identity")]);
  expect((await ath(home.path, ["config", "set-gateway", "local", w.baseUrl])).code).toBe(0);
}, 120_000);
afterAll(async () => {
  await w?.stop();
  await home?.remove();
});

const admin = (clientId: string, status: string) =>
  fetch(`${w.baseUrl}/ath/admin/agents/${clientId}`, { method: "PATCH", headers: { "x-ath-user-token": w.gw.adminToken, "content-type": "application/json" }, body: JSON.stringify({ status }) });

describe("status --refresh", () => {
  test("shows and saves what an admin decided since registration (approved, then suspended); without --refresh nothing is asked", async () => {
    const reg = await ath(home.path, ["register", "--provider", "mail", "--scopes", "mail:read", "--format", "json"]);
    expect(reg.code).toBe(0);
    expect(reg.json().agent_status).toBe("pending");
    const clientId = reg.json().client_id as string;

    expect((await admin(clientId, "approved")).status).toBe(200);
    const offline = await ath(home.path, ["status", "--format", "json"]);
    expect(offline.json().registrations[0].agent_status).toBe("pending"); // saved, not asked
    const live = await ath(home.path, ["status", "--refresh", "--format", "json"]);
    expect(live.code).toBe(0);
    expect(live.json().registrations[0]).toMatchObject({ client_id: clientId, agent_status: "approved", refreshed: true });
    expect(live.json().registrations[0].client_secret).toEndWith("…"); // still masked
    expect((await ath(home.path, ["status", "--format", "json"])).json().registrations[0].agent_status).toBe("approved"); // saved

    expect((await admin(clientId, "suspended")).status).toBe(200);
    const text = await ath(home.path, ["status", "--refresh"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/agent_status\s+suspended \(live\)/);
  });

  test("a gateway that cannot be reached: exit 0, the saved values, and the refresh error per registration", async () => {
    const other = await tempDir("cli-identity-down");
    try {
      const reg = await ath(other.path, ["register", "-g", w.baseUrl, "--provider", "mail", "--scopes", "mail:read", "--format", "json"]);
      expect(reg.code).toBe(0);
      // the same credentials, saved under a gateway URL where nothing listens
      const file = `${other.path}/credentials.json`;
      const saved = JSON.parse(await Bun.file(file).text());
      saved.gateways["http://127.0.0.1:1"] = saved.gateways[w.baseUrl];
      delete saved.gateways[w.baseUrl];
      await Bun.write(file, JSON.stringify(saved));
      const r = await ath(other.path, ["status", "--refresh", "--format", "json"]);
      expect(r.code).toBe(0);
      expect(r.json().registrations[0]).toMatchObject({ agent_status: "pending", refreshed: false, refresh_error: { code: "NETWORK_ERROR" } });
    } finally {
      await other.remove();
    }
  });

  test("GET /ath/agents/status: wrong or missing client credentials are one 401 INVALID_CLIENT", async () => {
    for (const headers of [{} as Record<string, string>, { authorization: `Basic ${btoa("ath_nope:ath_secret_nope")}` }, { authorization: "Basic !!!" }, { authorization: "Bearer x" }]) {
      const r = await fetch(`${w.baseUrl}/ath/agents/status`, { headers });
      expect(r.status).toBe(401);
      expect((await r.json()).code).toBe("INVALID_CLIENT");
    }
  });
});

describe("identity new", () => {
  test("a new key becomes the current identity; it registers afresh for other scopes while the old registration stays", async () => {
    const before = (await ath(home.path, ["identity", "--format", "json"])).json().agent_id as string;
    const again = await ath(home.path, ["register", "--provider", "mail", "--scopes", "mail:send"]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain("ath identity new");

    const made = await ath(home.path, ["identity", "new", "--name", "second", "--format", "json"]);
    expect(made.code).toBe(0);
    expect(made.json()).toMatchObject({ previous_agent_id: before, key_path: `${home.path}/keys/second.pem` });
    const now = (await ath(home.path, ["identity", "--format", "json"])).json().agent_id as string;
    expect(now).toBe(made.json().agent_id);
    expect(now).not.toBe(before);

    const fresh = await ath(home.path, ["register", "--provider", "mail", "--scopes", "mail:send", "--format", "json"]);
    expect(fresh.code).toBe(0);
    expect(fresh.json()).toMatchObject({ agent_id: now, agent_status: "pending" });
    expect(fresh.json().already_registered).toBeUndefined();
    const agents = (await ath(home.path, ["status", "--format", "json"])).json().registrations.map((r: { agent_id: string }) => r.agent_id);
    expect(agents.sort()).toEqual([before, now].sort());

    const taken = await ath(home.path, ["identity", "new", "--name", "second"]);
    expect(taken.code).toBe(2);
    expect(taken.stderr).toContain("already exists");
    expect((await ath(home.path, ["identity", "new", "--name", "../escape"])).code).toBe(2);
  });
});
