/** `ath register` (Phase A) in process against a fake gateway: what is sent, saved and printed. */
import { describe, expect, test } from "bun:test";
import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { GW, runAth, tempHome, cliFixture } from "../../helpers/cli-harness.ts";

const fx = cliFixture();
const ath = fx.ath;

describe("register (Phase A)", () => {
  test("one registration asks for several providers, adds the loopback redirect URI and saves the credentials 0600", async () => {
    const r = await ath(["register", "-g", GW, "--provider", "github", "--provider", "gitlab", "--purpose", "triage", "--format", "json"]);
    expect(r.code).toBe(0);
    const sent = fx.gw.requests.find((q) => q.path === "/ath/agents/register")!;
    expect(sent.body.requested_providers).toEqual([
      { provider_id: "github", scopes: ["repo", "read:user"] },
      { provider_id: "gitlab", scopes: ["api"] },
    ]);
    // the port-less loopback URI (RFC 8252's any port) and the identity's own port, for servers that match exactly
    const own = Object.values((await fx.credentials()).gateways[GW].agents)[0] as { loopback_port: number };
    expect(own.loopback_port).toBeGreaterThanOrEqual(49152);
    expect(sent.body.redirect_uris).toEqual(["http://127.0.0.1/callback", `http://127.0.0.1:${own.loopback_port}/callback`]);
    expect(sent.body.purpose).toBe("triage");
    expect((sent.body.developer as { name: string }).name).toBe("local");
    const doc = JSON.parse(r.stdout);
    expect(doc.client_secret).toBe("ath_secret_s3cr…");
    const saved = await fx.credentials();
    const agent = Object.values(saved.gateways[GW].agents)[0] as { client_secret: string };
    expect(agent.client_secret).toMatch(/^ath_secret_s3cr3tvalue/);
    expect((await stat(join(fx.home.dir, "credentials.json"))).mode & 0o777).toBe(0o600);
    expect((await stat(fx.home.dir)).mode & 0o777).toBe(0o700);
  });

  test("--request gives each provider its own scopes", async () => {
    const r = await ath(["register", "-g", GW, "--request", "github:repo", "--request", "gitlab:api"]);
    expect(r.code).toBe(0);
    expect(fx.gw.requests.at(-1)!.body.requested_providers).toEqual([
      { provider_id: "github", scopes: ["repo"] },
      { provider_id: "gitlab", scopes: ["api"] },
    ]);
  });

  test("a 409 with saved credentials is not an error; without them it exits 4 and explains", async () => {
    await fx.registered();
    const again = await ath(["register", "-g", GW, "--provider", "github", "--scopes", "repo"]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain("already registered");
    // exit 0, but the agent must not believe the scopes it asked for now were granted: this (scripted) gateway has no
    // PATCH /ath/agents/registration (DESIGN §17), so the CLI says it cannot add scopes there
    expect(again.stderr).toContain("this gateway cannot add scopes to a registration — make a new identity with `ath identity new`");
    const json = await ath(["register", "-g", GW, "--provider", "gitlab", "--format", "json"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      already_registered: true,
      scopes_changed: false,
      approved_providers: [{ provider_id: "github", approved_scopes: ["repo", "read:user"] }],
    });
    const other = await tempHome();
    try {
      // Same key in another home: the gateway knows the agent, this home has no credentials.
      const { copyFile, mkdir } = await import("node:fs/promises");
      await mkdir(join(other.dir, "keys"), { recursive: true });
      await copyFile(join(fx.home.dir, "keys", "agent.pem"), join(other.dir, "keys", "agent.pem"));
      const r = await runAth(other.dir, ["register", "-g", GW, "--provider", "github", "--scopes", "repo", "--format", "json"], { fetch: fx.gw.fetch });
      expect(r.code).toBe(4);
      const { error } = JSON.parse(r.stdout);
      expect(error.code).toBe("AGENT_ALREADY_REGISTERED");
      expect(error.status).toBe(409);
      expect(error.message).toContain("no credentials for it are saved");
    } finally {
      await other.cleanup();
    }
  });

  test("register without --provider is a usage error and sends nothing", async () => {
    const r = await ath(["register", "-g", GW]);
    expect(r.code).toBe(2);
    expect(fx.gw.requests).toHaveLength(0);
  });

  test("with an unreadable credentials.json it does not register at the gateway (the client secret would be lost)", async () => {
    for (const text of ['{"gateways": {', '{"gateways": 5}']) {
      await writeFile(join(fx.home.dir, "credentials.json"), text, { mode: 0o600 });
      const r = await runAth(fx.home.dir, ["register", "-g", GW, "--provider", "github", "--scopes", "repo", "--format", "json"], { fetch: fx.gw.fetch });
      expect(r.code).toBe(1);
      expect(JSON.parse(r.stdout).error.message).toContain(join(fx.home.dir, "credentials.json"));
      expect(fx.gw.requests.map((q) => q.path)).not.toContain("/ath/agents/register");
      expect(await readFile(join(fx.home.dir, "credentials.json"), "utf8")).toBe(text);
    }
  });
});
