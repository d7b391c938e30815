/** `ath register` (Phase A) in process against the real gateway: what the gateway records, what is saved and printed. */
import { describe, expect, test } from "bun:test";
import { copyFile, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { runAth, tempHome } from "../../helpers/cli-harness.ts";
import { GATEWAY, cliOnGateway } from "../../helpers/cli-in-process.ts";
import { ADMIN_TOKEN } from "../../helpers/in-process.ts";

const fx = cliOnGateway();
const ath = fx.ath;

/** The agents as the gateway's admin API shows them. */
async function agents(): Promise<Record<string, any>[]> {
  const r = await fx.g.fetch("/ath/admin/agents", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return ((await r.json()) as { agents: Record<string, any>[] }).agents;
}

describe("register (Phase A)", () => {
  test("a registration with the loopback redirect URIs and a purpose; the gateway records it, the credentials are saved 0600", async () => {
    const r = await ath(["register", "-g", GATEWAY, "--provider", "demo", "--purpose", "triage", "--format", "json"]);
    expect(r.code).toBe(0);
    const [agent] = await agents();
    const own = Object.values((await fx.credentials()).gateways[GATEWAY].agents)[0] as { loopback_port: number; client_secret: string; client_id: string };
    expect(agent!.client_id).toBe(own.client_id);
    // every scope the provider offers, when none is named
    expect(agent!.requested_providers).toEqual([{ provider_id: "demo", scopes: ["notes:read", "notes:write"] }]);
    // the port-less loopback URI (RFC 8252's any port) and the identity's own port, for servers that match exactly
    expect(own.loopback_port).toBeGreaterThanOrEqual(61000);
    expect(agent!.redirect_uris).toEqual(["http://127.0.0.1/callback", `http://127.0.0.1:${own.loopback_port}/callback`]);
    expect(agent!.purpose).toBe("triage");
    expect(agent!.developer.name).toBe("local");
    const doc = JSON.parse(r.stdout);
    expect(doc.client_secret).toBe(`${own.client_secret.slice(0, "ath_secret_".length + 4)}…`);
    expect(own.client_secret).toMatch(/^ath_secret_/);
    expect((await stat(join(fx.home.dir, "credentials.json"))).mode & 0o777).toBe(0o600);
    expect((await stat(fx.home.dir)).mode & 0o777).toBe(0o700);
  });

  test("--request gives each provider its own scopes", async () => {
    const r = await ath(["register", "-g", GATEWAY, "--request", "demo:notes:read"]);
    expect(r.code).toBe(0);
    expect((await agents())[0]!.requested_providers).toEqual([{ provider_id: "demo", scopes: ["notes:read"] }]);
  });

  test("a 409 with saved credentials is not an error; without them it exits 4 and explains", async () => {
    await fx.registered();
    const again = await ath(["register", "-g", GATEWAY, "--provider", "demo", "--scopes", "notes:write"]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain("already registered");
    // exit 0, and the agent is told what changed: this gateway grows a registration (DESIGN §17)
    expect(again.stderr).toContain("added demo:notes:write");
    const json = await ath(["register", "-g", GATEWAY, "--provider", "demo", "--format", "json"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      already_registered: true,
      scopes_changed: false,
      approved_providers: [{ provider_id: "demo", approved_scopes: ["notes:read", "notes:write"] }],
    });
    const other = await tempHome();
    try {
      // Same key in another home: the gateway knows the agent, this home has no credentials.
      await mkdir(join(other.dir, "keys"), { recursive: true });
      await copyFile(join(fx.home.dir, "keys", "agent.pem"), join(other.dir, "keys", "agent.pem"));
      const fetch = (input: string | URL | Request, init?: RequestInit) => fx.g.fetch(new Request(input, init));
      const r = await runAth(other.dir, ["register", "-g", GATEWAY, "--provider", "demo", "--format", "json"], { fetch: fetch as never });
      expect(r.code).toBe(4);
      const { error } = JSON.parse(r.stdout);
      expect(error.code).toBe("AGENT_ALREADY_REGISTERED");
      expect(error.status).toBe(409);
      expect(error.message).toContain("no credentials for it are saved");
    } finally {
      await other.cleanup();
    }
  });

  test("register without --provider is a usage error and registers nothing", async () => {
    const r = await ath(["register", "-g", GATEWAY]);
    expect(r.code).toBe(2);
    expect(await agents()).toEqual([]);
  });

  test("with an unreadable credentials.json it does not register at the gateway (the client secret would be lost)", async () => {
    for (const text of ['{"gateways": {', '{"gateways": 5}']) {
      await writeFile(join(fx.home.dir, "credentials.json"), text, { mode: 0o600 });
      const r = await ath(["register", "-g", GATEWAY, "--provider", "demo", "--format", "json"]);
      expect(r.code).toBe(1);
      expect(JSON.parse(r.stdout).error.message).toContain(join(fx.home.dir, "credentials.json"));
      expect(await agents()).toEqual([]);
      expect(await readFile(join(fx.home.dir, "credentials.json"), "utf8")).toBe(text);
    }
  });
});
