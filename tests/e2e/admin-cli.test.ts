/**
 * `ath admin …` (DESIGN §9): the compiled CLI against `dist/ath serve --demo --approval manual` — every subcommand in
 * text and json (json is the API's answer object), the token from stdin saved per gateway (0600, never printed),
 * `--admin-token` and ATH_ADMIN_TOKEN, `audit --follow` streaming until Ctrl-C, and the exit codes: no admin token 3,
 * refused 4, usage 2, unreachable 5.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { authorize, call, consent, exchange, registeredAgent, type ClientCredentials } from "../helpers/agent.ts";
import type { TestAgent } from "../helpers/attestations.ts";
import { ath, ATH_BIN, athEnv, ensureBinary, readUntil, type AthResult } from "../helpers/cli-binary.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { freePort, tempDir } from "../helpers/net.ts";

let gw: Gateway;
let home: { path: string; remove: () => Promise<void> };
let base: string;
let agent: { agent: TestAgent; client: ClientCredentials };
let accessToken = "";
let tokenId = "";

/** `ath …` with `input` on stdin. */
async function athIn(args: string[], input: string, env: Record<string, string> = {}): Promise<AthResult> {
  const p = Bun.spawn([ATH_BIN, ...args], { env: athEnv(home.path, env), stdin: new TextEncoder().encode(input), stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr, json: () => JSON.parse(stdout) };
}
const admin = (...args: string[]) => ath(home.path, ["admin", ...args, "-g", base]);
const adminJson = async (...args: string[]) => {
  const r = await admin(...args, "--format", "json");
  if (r.code !== 0) throw new Error(`ath admin ${args.join(" ")}: exit ${r.code}\n${r.stdout}${r.stderr}`);
  return r.json();
};
const api = async (path: string) => (await call(`${base}${path}`, { headers: { "x-ath-user-token": gw.adminToken } })).json;

beforeAll(async () => {
  ensureBinary();
  gw = await startGateway({ binary: true, providers: {}, extraArgs: ["--demo", "--approval", "manual"] });
  base = gw.baseUrl;
  home = await tempDir("admin-cli");
}, 120_000);
afterAll(async () => {
  await home?.remove();
  await gw?.cleanup();
});

describe("the admin token", () => {
  test("no token: exit 3 NO_ADMIN_TOKEN naming `admin login`, one line in text, {error} in json", async () => {
    const text = await admin("agents", "list");
    expect(text.code).toBe(3);
    expect(text.stderr).toMatch(/^ath: no admin token for http:\/\/127\.0\.0\.1:\d+: run `ath admin login/);
    expect(text.stderr.trim().split("\n")).toHaveLength(1);
    const json = await admin("agents", "list", "--format", "json");
    expect(json.code).toBe(3);
    expect(json.json().error.code).toBe("NO_ADMIN_TOKEN");
  });

  test("login with a wrong token (stdin) is refused, exit 4, and nothing is saved", async () => {
    const r = await athIn(["admin", "login", "-g", base], "not-the-token\n");
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("401 UNAUTHORIZED");
    expect(r.stderr + r.stdout).not.toContain("not-the-token");
    expect(() => readFileSync(join(home.path, "credentials.json"), "utf8")).toThrow();
  });

  test("login reads the token from stdin, checks it, and saves it for this gateway in credentials.json (0600); it is never printed", async () => {
    const r = await athIn(["admin", "login", "-g", base, "--format", "json"], `${gw.adminToken}\n`);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ gateway: base, logged_in: true });
    expect(r.stdout + r.stderr).not.toContain(gw.adminToken);
    const file = join(home.path, "credentials.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(home.path).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, "utf8")).gateways[base].admin_token).toBe(gw.adminToken);
    // ath status does not show it
    const status = await ath(home.path, ["status", "--format", "json"]);
    expect(status.stdout).not.toContain(gw.adminToken);
  });
});

describe("agents", () => {
  test("a pending agent is listed first (text row, json = the API's object), read, and approved", async () => {
    agent = await registeredAgent(base, { providers: [{ provider_id: "demo", scopes: ["notes:read"] }] });
    const id = agent.client.client_id;
    const text = await admin("agents", "list");
    expect(text.code).toBe(0);
    const [row] = text.stdout.trim().split("\n");
    expect(row!.split("\t").slice(0, 3)).toEqual([id, "pending", agent.agent.agentId]);
    expect(await adminJson("agents", "list")).toEqual(await api("/ath/admin/agents"));
    expect((await adminJson("agents", "list", "--status", "approved")).agents).toEqual([]);
    expect((await adminJson("agents", "list", "--status", "pending")).agents.map((a: { client_id: string }) => a.client_id)).toEqual([id]);
    // what it asked for, so the operator approves knowing it: a column of the list, a field of the API's object
    expect(row!.split("\t")[5]).toBe("demo:notes:read");
    expect((await adminJson("agents", "list")).agents[0].requested_providers).toEqual([{ provider_id: "demo", scopes: ["notes:read"] }]);
    const get = await admin("agents", "get", id);
    expect(get.stdout).toContain(`client_id\t${id}\n`);
    expect(get.stdout).toContain("agent_status\tpending\n");
    expect(await adminJson("agents", "get", id)).toEqual(await api(`/ath/admin/agents/${id}`));

    const approved = await adminJson("agents", "approve", id);
    expect(approved).toMatchObject({ client_id: id, agent_status: "approved", tokens_revoked: 0 });
    // piped text: a change prints nothing, exit 0
    expect(await admin("agents", "approve", id)).toMatchObject({ code: 0, stdout: "" });
  });

  test("refused (unknown agent) is exit 4; a missing client_id is exit 2", async () => {
    const r = await admin("agents", "get", "ath_nobody");
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("404 NOT_FOUND");
    expect((await admin("agents", "get")).code).toBe(2);
    expect((await admin("agents", "approve", "a", "b")).code).toBe(2);
    expect((await admin("agents", "list", "--status", "sleeping")).code).toBe(2);
  });
});

describe("tokens", () => {
  beforeAll(async () => {
    const authz = await authorize(base, agent.agent, agent.client, { provider_id: "demo", scopes: ["notes:read"] });
    const consented = await consent(String(authz.json.authorization_url));
    const token = await exchange(base, agent.agent, agent.client, { code: consented.code!, ath_session_id: String(authz.json.ath_session_id) });
    expect(token.status).toBe(200);
    accessToken = String(token.json.access_token);
  });

  test("list: text rows with the public token_id and state, json the API's object; every filter", async () => {
    const json = await adminJson("tokens", "list");
    expect(json).toEqual(await api("/ath/admin/tokens"));
    expect(json.next_cursor).toBeNull();
    const t = json.tokens[0];
    tokenId = t.token_id;
    expect(tokenId).toMatch(/^ath_tkid_/);
    const text = await admin("tokens", "list");
    expect(text.code).toBe(0);
    expect(text.stdout.split("\t").slice(0, 5)).toEqual([tokenId, "active", agent.client.client_id, t.user_id, "demo"]);
    expect(text.stdout + JSON.stringify(json)).not.toContain(accessToken);
    const count = async (...f: string[]) => (await adminJson("tokens", "list", ...f)).tokens.length;
    expect(await count("--agent-id", agent.agent.agentId)).toBe(1);
    expect(await count("--agent-id", "https://other.example/a")).toBe(0);
    expect(await count("--client-id", agent.client.client_id)).toBe(1);
    expect(await count("--user-id", t.user_id)).toBe(1);
    expect(await count("--user-id", "someone-else")).toBe(0);
    expect(await count("--provider", "demo")).toBe(1);
    expect(await count("--state", "active")).toBe(1);
    expect(await count("--state", "revoked")).toBe(0);
    expect(await count("--limit", "1")).toBe(1);
    expect((await admin("tokens", "list", "--limit", "0")).code).toBe(2);
    expect((await admin("tokens", "list", "--state", "dead")).code).toBe(2);
    const badCursor = await admin("tokens", "list", "--cursor", "nope");
    expect(badCursor.code).toBe(4);
    expect(badCursor.stderr).toContain("400 INVALID_REQUEST");
  });

  test("agents rules show|set|clear and approvals list|approve|deny: an admin's rule holds a request until an admin decides", async () => {
    const id = agent.client.client_id;
    const proxy = (approval?: string) =>
      call(`${base}/ath/proxy/demo/notes`, { headers: { authorization: `Bearer ${accessToken}`, ...(approval ? { "x-ath-approval": approval } : {}) } });
    const none = await admin("agents", "rules", "show", id);
    expect(none).toMatchObject({ code: 0, stdout: "" });
    expect(none.stderr).toContain("no approval rules");
    expect(await adminJson("agents", "rules", "show", id)).toEqual({ client_id: id, approval_rules: [] });
    const file = join(home.path, "rules.json");
    writeFileSync(file, JSON.stringify([{ match: ["GET /notes"], approver: "admin" }]));
    expect(await adminJson("agents", "rules", "set", id, file)).toEqual({ client_id: id, approval_rules: [{ match: ["GET /notes"], approver: "admin", ttl: 300 }] });
    expect(JSON.parse((await admin("agents", "rules", "show", id)).stdout)).toEqual([{ match: ["GET /notes"], approver: "admin", ttl: 300 }]);
    writeFileSync(file, JSON.stringify([{ match: ["notes"] }]));
    const bad = await admin("agents", "rules", "set", id, file);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("is not a list of approval rules");

    const held = await proxy();
    expect(held.status).toBe(403);
    expect(held.json.code).toBe("APPROVAL_REQUIRED");
    const approvalId = String((held.json.details as { approval_id: string }).approval_id);
    const listed = await adminJson("approvals", "list", "--status", "pending");
    expect(listed).toEqual(await api("/ath/admin/approvals?status=pending"));
    expect(listed.approvals.map((a: { approval_id: string }) => a.approval_id)).toEqual([approvalId]);
    const text = await admin("approvals", "list");
    expect(text.stdout.split("\t").slice(0, 6)).toEqual([approvalId, "pending", "admin", id, "demo", "GET /notes"]);
    expect(await adminJson("approvals", "approve", approvalId)).toMatchObject({ approval_id: approvalId, status: "approved", decided_by: "admin" });
    expect((await proxy(approvalId)).status).toBe(200);

    const again = String(((await proxy()).json.details as { approval_id: string }).approval_id);
    expect(await admin("approvals", "deny", again)).toMatchObject({ code: 0, stdout: "" });
    expect((await adminJson("approvals", "list", "--status", "denied")).approvals.map((a: { approval_id: string }) => a.approval_id)).toEqual([again]);
    expect((await admin("approvals", "approve", "apr_123")).code).toBe(2);
    expect((await admin("approvals", "approve", "ath_apr_unknown")).code).toBe(4);

    expect(await adminJson("agents", "rules", "clear", id)).toEqual({ client_id: id, approval_rules: [] });
    expect((await proxy()).status).toBe(200);
  });

  test("agents policy show|set|clear: a deny `when` refuses a proxied call POLICY_DENIED; a `when` that does not compile is exit 4 naming the rule", async () => {
    const id = agent.client.client_id;
    const proxy = (query = "") => call(`${base}/ath/proxy/demo/notes${query}`, { headers: { authorization: `Bearer ${accessToken}` } });
    const none = await admin("agents", "policy", "show", id);
    expect(none).toMatchObject({ code: 0, stdout: "" });
    expect(none.stderr).toContain("no policy rules");
    expect(await adminJson("agents", "policy", "show", id)).toEqual({ client_id: id, policy: [] });

    const rule = { match: ["GET /notes"], when: '"mode" in request.query && request.query["mode"][0] == "danger"', action: "deny", reason: "no danger mode" };
    const file = join(home.path, "policy.json");
    writeFileSync(file, JSON.stringify([rule]));
    const saved = { ...rule, approver: "user", ttl: 300 };
    expect(await adminJson("agents", "policy", "set", id, file)).toEqual({ client_id: id, policy: [saved] });
    expect(JSON.parse((await admin("agents", "policy", "show", id)).stdout)).toEqual([saved]);
    expect((await api(`/ath/admin/agents/${id}`)).policy).toEqual([saved]);
    const denied = await proxy("?mode=danger");
    expect({ status: denied.status, code: denied.json.code }).toEqual({ status: 403, code: "POLICY_DENIED" });
    expect(denied.json.details).toMatchObject({ reason: "no danger mode", rule: { from: "agent", index: 0 } });
    expect((await proxy("?mode=calm")).status).toBe(200);

    // a `when` that does not compile: refused by the gateway (exit 4) naming the rule; the saved policy stays
    writeFileSync(file, JSON.stringify({ policy: [rule, { match: ["GET /notes"], when: "request.method ==", action: "deny" }] }));
    const bad = await admin("agents", "policy", "set", id, file);
    expect(bad.code).toBe(4);
    expect(bad.stderr).toMatch(/^ath: \[PATCH\] "[^"]+\/ath\/admin\/agents\/[^"]+": 400 INVALID_REQUEST — Invalid request: policy\.1\.when: \S/);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    const badJson = await admin("agents", "policy", "set", id, file, "--format", "json");
    expect(badJson.code).toBe(4);
    expect(badJson.json().error).toMatchObject({ code: "INVALID_REQUEST" });
    expect(badJson.json().error.message).toContain("policy.1.when");
    expect((await adminJson("agents", "policy", "show", id)).policy).toEqual([saved]);
    // not a list of policy rules at all: a usage mistake, nothing sent
    writeFileSync(file, JSON.stringify([{ match: ["GET /notes"], action: "maybe" }]));
    const usage = await admin("agents", "policy", "set", id, file);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("is not a list of policy rules");

    // stdin, text mode: one line on stderr, nothing on stdout
    const piped = await athIn(["admin", "agents", "policy", "set", id, "-", "-g", base], JSON.stringify([{ ...rule, when: "true" }]));
    expect(piped).toMatchObject({ code: 0, stdout: "" });
    expect((await proxy()).json.code).toBe("POLICY_DENIED");
    expect(await adminJson("agents", "policy", "clear", id)).toEqual({ client_id: id, policy: [] });
    expect((await proxy("?mode=danger")).status).toBe(200);
  });

  test("agents budgets show|set|clear: a budget of one call refuses the second BUDGET_EXHAUSTED; clear lifts it", async () => {
    const id = agent.client.client_id;
    const proxy = () => call(`${base}/ath/proxy/demo/notes`, { headers: { authorization: `Bearer ${accessToken}` } });
    const none = await admin("agents", "budgets", "show", id);
    expect(none).toMatchObject({ code: 0, stdout: "" });
    expect(none.stderr).toContain("no budgets");
    expect(await adminJson("agents", "budgets", "show", id)).toEqual({ client_id: id, budgets: [] });
    const file = join(home.path, "budgets.json");
    writeFileSync(file, JSON.stringify([{ match: ["GET /notes"], limit: 1, window: "1h" }]));
    const saved = { match: ["GET /notes"], per: "agent", limit: 1, window: "1h", then: "deny", approver: "user", ttl: 300 };
    expect(await adminJson("agents", "budgets", "set", id, file)).toEqual({ client_id: id, budgets: [saved] });
    expect(JSON.parse((await admin("agents", "budgets", "show", id)).stdout)).toEqual([saved]);
    expect((await proxy()).status).toBe(200);
    const over = await proxy();
    expect({ status: over.status, code: over.json.code }).toEqual({ status: 429, code: "BUDGET_EXHAUSTED" });
    writeFileSync(file, JSON.stringify([{ match: ["GET /notes"], limit: -1, window: "1h" }]));
    const bad = await admin("agents", "budgets", "set", id, file);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("is not a list of budgets");
    expect(await admin("agents", "budgets", "clear", id)).toMatchObject({ code: 0, stdout: "" });
    expect(await adminJson("agents", "budgets", "show", id)).toEqual({ client_id: id, budgets: [] });
    expect((await proxy()).status).toBe(200);
    expect((await admin("agents", "budgets", "show", "no-such-client")).code).toBe(4);
  });

  test("revoke needs a selector (exit 2); by token_id it revokes, and the proxy refuses the token at once", async () => {
    expect((await admin("tokens", "revoke")).code).toBe(2);
    const proxy = () => call(`${base}/ath/proxy/demo/notes`, { headers: { authorization: `Bearer ${accessToken}` } });
    expect((await proxy()).status).toBe(200);
    const r = await admin("tokens", "revoke", tokenId);
    expect(r).toMatchObject({ code: 0, stdout: "revoked 1 token(s)\n" });
    const refused = await proxy();
    expect(refused.status).toBe(401);
    expect(refused.json.code).toBe("TOKEN_REVOKED");
    expect(await adminJson("tokens", "revoke", "--client-id", agent.client.client_id, "--provider", "demo")).toEqual({ revoked: 0 });
    expect((await adminJson("tokens", "list", "--state", "revoked")).tokens.map((t: { token_id: string }) => t.token_id)).toEqual([tokenId]);
  });
});

describe("audit", () => {
  test("text rows and json (the API's object); --type, --agent-id, --since 1h / ISO; bad --since is exit 2", async () => {
    const json = await adminJson("audit");
    expect(json).toEqual(await api("/ath/admin/audit"));
    const types = json.events.map((e: { type: string }) => e.type);
    for (const t of ["agent.registered", "agent.approved", "token.issued", "token.revoked"]) expect(types).toContain(t);
    const text = await admin("audit", "--type", "token.revoked");
    expect(text.code).toBe(0);
    const cols = text.stdout.trim().split("\n")[0]!.split("\t");
    expect(cols[1]).toBe("token.revoked");
    expect(JSON.parse(cols[5]!)).toMatchObject({ by: "admin", token_id: tokenId });
    expect((await adminJson("audit", "--agent-id", agent.agent.agentId)).events.length).toBeGreaterThanOrEqual(4);
    expect((await adminJson("audit", "--since", "1h")).events.length).toBe(json.events.length);
    expect((await adminJson("audit", "--since", "2999-01-01T00:00:00Z")).events).toEqual([]);
    expect((await adminJson("audit", "--until", "1h")).events).toEqual([]);
    expect((await adminJson("audit", "--limit", "2")).events).toHaveLength(2);
    expect((await admin("audit", "--since", "last tuesday")).code).toBe(2);
    expect(JSON.stringify(json)).not.toContain(accessToken);
  });

  test("--follow prints the latest events, then each new one as it happens, until Ctrl-C", async () => {
    const p = Bun.spawn([ATH_BIN, "admin", "audit", "--follow", "-g", base, "--type", "agent.suspended"], {
      env: athEnv(home.path),
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    await Bun.sleep(1500);
    expect((await adminJson("agents", "suspend", agent.client.client_id)).agent_status).toBe("suspended");
    const m = await readUntil(p.stdout, /agent\.suspended\t([^\t]*)\t/);
    expect(m[1]).toBe(agent.client.client_id);
    p.kill("SIGINT");
    expect(await p.exited).toBe(130);
  }, 20_000);

  test("--follow --format json: one event object per line", async () => {
    const p = Bun.spawn([ATH_BIN, "admin", "audit", "--follow", "-g", base, "--format", "json", "--type", "agent.approved"], {
      env: athEnv(home.path),
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const first = await readUntil(p.stdout, /\n/);
    const event = JSON.parse(first.input.split("\n")[0]!);
    expect(event).toMatchObject({ type: "agent.approved", client_id: agent.client.client_id });
    expect(typeof event.id).toBe("number");
    p.kill("SIGINT");
    expect(await p.exited).toBe(130);
  });
});

describe("providers", () => {
  test("list, get, add (file and stdin), set, remove — text and json", async () => {
    const list = await admin("providers", "list");
    expect(list.stdout).toBe("demo\tDemo Notes (sandbox)\tfile\tnotes:read,notes:write\n");
    expect(await adminJson("providers", "list")).toEqual(await api("/ath/admin/providers"));
    const get = await adminJson("providers", "get", "demo");
    expect(get).toMatchObject({ provider_id: "demo", client_secret: "********" });

    const entry = {
      display_name: "Extra",
      available_scopes: ["x:read"],
      authorize_endpoint: "https://auth.example/authorize",
      token_endpoint: "https://auth.example/token",
      api_base_url: "https://api.example",
      client_id: "cid",
      client_secret: "very-secret-value",
    };
    const file = join(home.path, "extra.json");
    writeFileSync(file, JSON.stringify({ provider_id: "extra", ...entry }));
    const added = await adminJson("providers", "add", file);
    expect(added).toMatchObject({ provider_id: "extra", display_name: "Extra", client_secret: "********", source: "admin" });
    expect((await admin("providers", "add", file)).code).toBe(4); // already there: 409
    const fromStdin = await athIn(["admin", "providers", "add", "-", "-g", base, "--format", "json"], JSON.stringify({ provider_id: "extra2", ...entry }));
    expect(fromStdin.code).toBe(0);
    expect(fromStdin.json().provider_id).toBe("extra2");
    const set = await athIn(["admin", "providers", "set", "extra", "-", "-g", base, "--format", "json"], JSON.stringify({ ...entry, display_name: "Extra, renamed", client_secret: undefined }));
    expect(set.code).toBe(0);
    expect(set.json().display_name).toBe("Extra, renamed");
    const text = await admin("providers", "get", "extra");
    expect(text.stdout).toContain("display_name\tExtra, renamed\n");
    expect(text.stdout).not.toContain("very-secret-value");
    expect(await adminJson("providers", "remove", "extra2")).toEqual({ provider_id: "extra2", deleted: true });
    expect(await admin("providers", "remove", "extra")).toMatchObject({ code: 0, stdout: "" });
    expect((await admin("providers", "get", "extra")).code).toBe(4);
    expect((await admin("providers", "add", join(home.path, "missing.json"))).code).toBe(2);
    writeFileSync(file, "{not json");
    expect((await admin("providers", "add", file)).code).toBe(2);
  });
});

describe("more agents, exit codes, logout", () => {
  test("deny and remove: json is the API's object", async () => {
    const other = await registeredAgent(base, { providers: [{ provider_id: "demo", scopes: ["notes:read"] }] });
    expect(await adminJson("agents", "deny", other.client.client_id)).toMatchObject({ agent_status: "denied", tokens_revoked: 0 });
    expect(await adminJson("agents", "remove", other.client.client_id)).toEqual({ client_id: other.client.client_id, deleted: true, tokens_revoked: 0 });
    expect((await admin("agents", "get", other.client.client_id)).code).toBe(4);
  });

  test("text mode: each change prints nothing when piped, exits 0, and takes effect", async () => {
    const [x, y] = [
      await registeredAgent(base, { providers: [{ provider_id: "demo", scopes: ["notes:read"] }] }),
      await registeredAgent(base, { providers: [{ provider_id: "demo", scopes: ["notes:read"] }] }),
    ];
    const quiet = async (...args: string[]) => expect(await admin(...args)).toMatchObject({ code: 0, stdout: "", stderr: "" });
    await quiet("agents", "deny", x.client.client_id);
    await quiet("agents", "approve", y.client.client_id);
    await quiet("agents", "suspend", y.client.client_id);
    expect((await api(`/ath/admin/agents/${x.client.client_id}`)).agent_status).toBe("denied");
    expect((await api(`/ath/admin/agents/${y.client.client_id}`)).agent_status).toBe("suspended");
    await quiet("agents", "remove", y.client.client_id);
    expect((await call(`${base}/ath/admin/agents/${y.client.client_id}`, { headers: { "x-ath-user-token": gw.adminToken } })).status).toBe(404);
    const file = join(home.path, "text.json");
    const entry = {
      display_name: "Text",
      available_scopes: ["t:read"],
      authorize_endpoint: "https://auth.example/authorize",
      token_endpoint: "https://auth.example/token",
      client_id: "cid",
      client_secret: "s3cret",
    };
    writeFileSync(file, JSON.stringify({ provider_id: "text", ...entry }));
    await quiet("providers", "add", file);
    writeFileSync(file, JSON.stringify({ ...entry, display_name: "Text 2" }));
    await quiet("providers", "set", "text", file);
    expect((await api("/ath/admin/providers/text")).display_name).toBe("Text 2");
    await quiet("providers", "remove", "text");
    // login with --token, and logout, in text
    await quiet("logout");
    expect((await admin("agents", "list")).code).toBe(3);
    expect(await ath(home.path, ["admin", "login", "-g", base, "--token", gw.adminToken])).toMatchObject({ code: 0, stdout: "", stderr: "" });
    expect((await admin("agents", "list")).code).toBe(0);
  });

  test("an unreachable gateway is exit 5; a wrong --admin-token exit 4; usage mistakes exit 2", async () => {
    const port = await freePort();
    const r = await ath(home.path, ["admin", "agents", "list", "-g", `http://127.0.0.1:${port}`, "--admin-token", "x"]);
    expect(r.code).toBe(5);
    expect(r.stderr).toContain("connection refused");
    expect((await admin("agents", "list", "--admin-token", "wrong")).code).toBe(4);
    expect((await admin("agents", "list", "--key", "x")).code).toBe(2);
    expect((await admin("tokens")).code).toBe(2);
    expect((await admin("nonsense")).code).toBe(2);
    expect((await admin("audit", "--follow", "--format", "yaml")).code).toBe(2);
  });

  test("logout forgets the token (exit 3 after); ATH_ADMIN_TOKEN and --admin-token still work", async () => {
    expect(await adminJson("logout")).toEqual({ gateway: base, logged_out: true });
    expect(JSON.parse(readFileSync(join(home.path, "credentials.json"), "utf8")).gateways[base].admin_token).toBeUndefined();
    expect((await admin("agents", "list")).code).toBe(3);
    const env = await ath(home.path, ["admin", "agents", "list", "-g", base, "--format", "json"], { ATH_ADMIN_TOKEN: gw.adminToken });
    expect(env.code).toBe(0);
    expect((await admin("agents", "list", "--admin-token", gw.adminToken)).code).toBe(0);
    expect(await adminJson("logout", "--admin-token", "ignored")).toEqual({ gateway: base, logged_out: false });
  });
});
