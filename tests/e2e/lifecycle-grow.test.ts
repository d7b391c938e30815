/**
 * Growing an agent's scopes through the compiled `ath` (DESIGN §17), against a real `ath serve`: `ath register` with
 * saved credentials asks for what is new with PATCH /ath/agents/registration and prints what changed — added at once
 * under auto approval; waiting for the admin under a provider's manual approval, listed by `ath admin agents` and
 * approved by `ath admin agents approve` — and prints the registration as the gateway holds it now, never a stale
 * agent_status.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ath, ensureBinary } from "../helpers/cli-binary.ts";
import { tempDir } from "../helpers/net.ts";
import { mailProvider, startWorld, type World } from "../helpers/world.ts";

let w: World;
let gw: string;
const homes: { path: string; remove: () => Promise<void> }[] = [];
async function home(): Promise<string> {
  const h = await tempDir("grow");
  homes.push(h);
  return h.path;
}

beforeAll(async () => {
  ensureBinary();
  w = await startWorld({ providers: (auth, api) => ({ reviewed: mailProvider(auth, api, { display_name: "Reviewed Mail", approval: "manual" }) }) });
  gw = w.baseUrl;
}, 120_000);
afterAll(async () => {
  for (const h of homes) await h.remove();
  await w?.stop();
});

describe("ath register with saved credentials", () => {
  test("auto approval: new scopes are added at once and printed; the same scopes again change nothing", async () => {
    const h = await home();
    expect((await ath(h, ["register", "-g", gw, "--provider", "mail", "--scopes", "mail:read"])).code).toBe(0);
    const grown = await ath(h, ["register", "-g", gw, "--provider", "mail", "--scopes", "mail:read,mail:send", "--format", "json"]);
    expect(grown.code).toBe(0);
    expect(grown.json()).toMatchObject({ already_registered: true, scopes_changed: true, added: [{ provider_id: "mail", scopes: ["mail:send"] }], agent_status: "approved", refreshed: true });
    const again = await ath(h, ["register", "-g", gw, "--provider", "mail", "--scopes", "mail:send"]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain("nothing new asked for");
    expect(again.stdout).toContain("approved=mail:read,mail:send");
    // the new scope is usable: authorize accepts it
    expect((await ath(h, ["authorize", "-g", gw, "--provider", "mail", "--scopes", "mail:send"])).code).toBe(0);
  });

  test("manual approval: the addition waits for the admin, is listed by `ath admin agents`, and `approve` grants it", async () => {
    const h = await home();
    expect((await ath(h, ["register", "-g", gw, "--provider", "mail", "--scopes", "mail:read"])).code).toBe(0);
    const asked = await ath(h, ["register", "-g", gw, "--request", "reviewed:mail:read"]);
    expect(asked.code).toBe(0);
    const clientId = /client (ath_\S+)\)/.exec(asked.stderr)?.[1];
    expect(clientId).toBeDefined();
    expect(asked.stderr).toContain("waiting for the gateway's admin: reviewed:mail:read");
    expect(asked.stderr).toContain(`ath admin agents approve ${clientId}`);
    const refused = await ath(h, ["authorize", "-g", gw, "--provider", "reviewed", "--scopes", "mail:read", "--format", "json"]);
    expect({ code: refused.code, error: refused.json().error.code }).toEqual({ code: 4, error: "PROVIDER_NOT_APPROVED" });

    const admin = await home();
    expect((await ath(admin, ["admin", "login", "-g", gw, "--token", w.gw.adminToken])).code).toBe(0);
    const listed = await ath(admin, ["admin", "agents", "list", "-g", gw]);
    expect(listed.stdout).toMatch(new RegExp(`${clientId}\\tapproved\\t.*\\treviewed:mail:read\\n`));
    expect((await ath(admin, ["admin", "agents", "approve", "-g", gw, String(clientId)])).code).toBe(0);

    const after = await ath(h, ["register", "-g", gw, "--request", "reviewed:mail:read", "--format", "json"]);
    expect(after.json()).toMatchObject({ already_registered: true, pending_providers: [], agent_status: "approved" });
    expect(after.json().approved_providers).toContainEqual(expect.objectContaining({ provider_id: "reviewed", approved_scopes: ["mail:read"] }));
    expect((await ath(h, ["authorize", "-g", gw, "--provider", "reviewed", "--scopes", "mail:read"])).code).toBe(0);
  });

  test("never a stale agent_status: a pending agent approved by the admin reads approved at the next `ath register`", async () => {
    const h = await home();
    const first = await ath(h, ["register", "-g", gw, "--request", "reviewed:mail:read", "--format", "json"]);
    expect(first.json().agent_status).toBe("pending");
    const clientId = first.json().client_id;
    const unapproved = await ath(h, ["authorize", "-g", gw, "--provider", "reviewed", "--scopes", "mail:read", "--format", "json"]);
    expect(unapproved.code).toBe(4);
    expect(unapproved.json().error.message).toContain(`ath admin agents approve ${clientId}`);
    const admin = await home();
    await ath(admin, ["admin", "login", "-g", gw, "--token", w.gw.adminToken]);
    expect((await ath(admin, ["admin", "agents", "approve", "-g", gw, clientId])).code).toBe(0);
    const again = await ath(h, ["register", "-g", gw, "--request", "reviewed:mail:read", "--format", "json"]);
    expect(again.json()).toMatchObject({ already_registered: true, agent_status: "approved", refreshed: true });
    const status = await ath(h, ["status", "-g", gw, "--format", "json"]);
    expect(status.json().registrations[0].agent_status).toBe("approved");
  });
});
