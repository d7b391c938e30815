/**
 * Delegation to sub-agents through the compiled binary (DESIGN §23): the gateway is `dist/ath serve` with the real
 * oidc-provider and sample API; the agents are the compiled CLI, each in a home of its own — the sub-agent proves itself
 * (`ath token --actor`), the parent delegates part of its token (`ath token --delegate … --out`), the sub-agent saves
 * it (`ath token --import`) and calls the API with it within its scopes and budget; `ath admin tokens list` names who
 * delegated it; revoking the parent's token makes the sub-agent's refused at once (TOKEN_REVOKED, exit 4). Then the
 * seeded property walk of random chains over HTTP against the same binary, and the root's revocation refusing all.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { stat } from "node:fs/promises";
import { authorize, call, consent, exchange, registeredAgent } from "../helpers/agent.ts";
import { ath, ATH_BIN, ensureBinary } from "../helpers/cli-binary.ts";
import { rootHeld, walkUntil, type Holder, type WalkWorld } from "../helpers/delegation-walk.ts";
import { tempDir } from "../helpers/net.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
let gw: string;
const homes: { path: string; remove: () => Promise<void> }[] = [];
const home = async () => {
  const h = await tempDir("deleg");
  homes.push(h);
  return h.path;
};

beforeAll(async () => {
  ensureBinary();
  w = await startWorld({ binary: ATH_BIN });
  gw = w.baseUrl;
}, 120_000);
afterAll(async () => {
  for (const h of homes) await h.remove();
  await w?.stop();
});

describe("delegation with the CLI (DESIGN §23)", () => {
  test("actor → delegate → import: the sub-agent calls within the scopes and budget it was given, admin tokens name who delegated it, and revoking the parent's token refuses the sub-agent's at once", async () => {
    const parent = await home();
    const sub = await home();
    const preg = (await ath(parent, ["register", "-g", gw, "--request", "mailrules:mail:read,mail:send", "--format", "json"])).json();
    const auth = (await ath(parent, ["authorize", "-g", gw, "--provider", "mailrules", "--scopes", "mail:read,mail:send", "--format", "json"])).json();
    const c = await consent(auth.authorization_url);
    expect((await ath(parent, ["token", "-g", gw, "--code", c.code!, "--session", auth.ath_session_id])).code).toBe(0);
    const reg = (await ath(sub, ["register", "-g", gw, "--request", "mailrules:mail:read,mail:send", "--format", "json"])).json();

    const actor = await ath(sub, ["token", "-g", gw, "--actor"]);
    expect(actor.code).toBe(0);
    expect(actor.stdout).toMatch(/^eyJ[\w-]+\.[\w-]+\.[\w-]+\n$/);
    expect(actor.stderr).toContain(reg.client_id);
    const out = join(parent, "handoff.json");
    const noOut = await ath(parent, ["token", "-g", gw, "--delegate", reg.client_id, "--actor-token", actor.stdout.trim(), "--scopes", "mail:read"]);
    expect(noOut.code).toBe(2); // nothing minted: the token would have nowhere to go
    const d = await ath(parent, ["token", "-g", gw, "--delegate", reg.client_id, "--actor-token", actor.stdout.trim(), "--scopes", "mail:read", "--budget", "2", "--out", out, "--format", "json"]);
    expect(d.code).toBe(0);
    expect(d.json()).toMatchObject({ client_id: reg.client_id, effective_scopes: ["mail:read"], budget: 2, access_token: expect.stringMatching(/^ath_tk_.{4}…$/) });
    expect((await stat(out)).mode & 0o777).toBe(0o600);
    const imported = await ath(sub, ["token", "-g", gw, "--import", out]);
    expect(imported.code).toBe(0);

    expect((await ath(sub, ["proxy", "-g", gw, "mailrules", "GET", "/v1/messages"])).code).toBe(0);
    const send = await ath(sub, ["proxy", "-g", gw, "mailrules", "POST", "/v1/messages", "--body", '{"to":"x"}']);
    expect(send.code).toBe(4); // mail:send was not passed on
    expect((await ath(sub, ["proxy", "-g", gw, "mailrules", "GET", "/v1/messages"])).code).toBe(0);
    const spent = await ath(sub, ["proxy", "-g", gw, "mailrules", "GET", "/v1/messages"]);
    expect(spent.code).toBe(4);
    expect(spent.stderr).toContain("BUDGET_EXHAUSTED");

    const listed = await ath(parent, ["admin", "tokens", "list", "-g", gw, "--admin-token", w.gw.adminToken, "--client-id", reg.client_id]);
    expect(listed.code).toBe(0);
    expect(listed.stdout.trim().split("\t").at(-1)).toBe(preg.client_id); // DELEGATED_BY: the parent's client

    expect((await ath(parent, ["revoke", "-g", gw, "--provider", "mailrules"])).code).toBe(0);
    const dead = await ath(sub, ["proxy", "-g", gw, "mailrules", "GET", "/v1/messages"]);
    expect(dead.code).toBe(4);
    expect(dead.stderr).toContain("TOKEN_REVOKED");
  }, 60_000);

  test("usage mistakes exit 2 in one line; an import of a handoff made for another agent is refused (exit 2), and nothing is saved", async () => {
    const parent = await home();
    const sub = await home();
    const stranger = await home();
    await ath(parent, ["register", "-g", gw, "--request", "mail:mail:read"]);
    const auth = (await ath(parent, ["authorize", "-g", gw, "--provider", "mail", "--scopes", "mail:read", "--format", "json"])).json();
    const c = await consent(auth.authorization_url);
    await ath(parent, ["token", "-g", gw, "--code", c.code!, "--session", auth.ath_session_id]);
    const reg = (await ath(sub, ["register", "-g", gw, "--request", "mail:mail:read", "--format", "json"])).json();
    await ath(stranger, ["register", "-g", gw, "--request", "mail:mail:read"]);
    const actor = (await ath(sub, ["token", "-g", gw, "--actor", "--format", "json"])).json();
    const out = join(parent, "h.json");
    expect((await ath(parent, ["token", "-g", gw, "--delegate", actor.client_id, "--actor-token", actor.actor_token, "--out", out])).code).toBe(0);
    // usage mistakes: one line, exit 2, nothing sent
    for (const args of [
      ["--actor", "--delegate", actor.client_id],
      ["--budget", "3"],
      ["--delegate", actor.client_id, "--actor-token", actor.actor_token, "--budget", "many", "--out", out],
      ["--delegate", actor.client_id, "--out", out],
      ["--import", join(parent, "missing.json")],
    ]) {
      const r = await ath(parent, ["token", "-g", gw, ...args]);
      expect({ args, code: r.code, lines: r.stderr.trim().split("\n").length }).toEqual({ args, code: 2, lines: 1 });
    }
    const wrong = await ath(stranger, ["token", "-g", gw, "--import", out]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain(reg.client_id);
    expect((await ath(stranger, ["status", "-g", gw, "--format", "json"])).stdout).not.toContain("ath_tk_");
  }, 60_000);
});

describe("delegation over HTTP against the binary (DESIGN §23)", () => {
  test("property: random chains never widen (scopes, budgets, depths, expiry); calls stay within each share; revoking the root refuses every descendant", async () => {
    const net = { baseUrl: gw, fetch: (req: Request) => fetch(req) };
    const scopes = ["mail:read", "mail:send"];
    const agents: Holder[] = [];
    for (let i = 0; i < 5; i++) agents.push(await registeredAgent(net, { providers: [{ provider_id: "mailrules", scopes }] }));
    const root = agents[0]!;
    const a = await authorize(net, root.agent, root.client, { provider_id: "mailrules", scopes });
    const c = await consent(String(a.json.authorization_url));
    const t = await exchange(net, root.agent, root.client, { code: c.code!, ath_session_id: String(a.json.ath_session_id) });
    const world: WalkWorld = {
      nets: [net],
      provider: "mailrules",
      scopes,
      request: (s) => (s.includes("mail:read") ? { method: "GET", path: "/v1/messages" } : { method: "POST", path: "/v1/messages", body: '{"to":"x"}' }),
    };
    const seed = Number(process.env.DELEGATION_SEED ?? Date.now() % 100_000);
    const all = await walkUntil(world, rootHeld(root, t.json as never), agents.slice(1), { seed, steps: 60, tokens: 4 });
    expect(all.length).toBeGreaterThan(4);
    expect((await call(`${gw}/ath/revoke`, { json: { token: t.json.access_token, ...root.client } })).status).toBe(200);
    for (const h of all) {
      const r = await call(`${gw}/ath/proxy/mailrules/v1/messages`, { headers: { authorization: `Bearer ${h.token}` } });
      expect({ status: r.status, code: r.json.code }).toEqual({ status: 401, code: "TOKEN_REVOKED" });
    }
  }, 120_000);
});
