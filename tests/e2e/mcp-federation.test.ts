/**
 * One MCP URL for many servers (DESIGN §22), for real: the compiled `ath serve` in front of three upstream MCP servers,
 * each behind its own OAuth server (oidc-provider) that it asks about every token, and two people — Alice, who
 * connects all three, and Bob, who connects two. Each signs in once at `{base}/mcp` (the §18 code grant, the person's
 * part in Chromium) and connects the others through `{prefix}connect`. The upstreams record who reached them with
 * which token: lists equal each person's grants, every call reaches its upstream as its person, a denied tool reaches
 * none, an approval-held call runs once, a budget counts, tokens are bound to their URL, and a stopped and a slow
 * upstream leave the list answered within its bound.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { closeContexts, freshPage, sharedChromium } from "../helpers/chromium.ts";
import { ensureBinary } from "../helpers/cli-binary.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { codeGrant, registerClient, startClientHost } from "../helpers/mcp-oauth-client.ts";
import { freePort } from "../helpers/net.ts";
import { clickAndWait } from "../helpers/person.ts";
import { startUpstreamAuth, type UpstreamAuth } from "../helpers/upstream-auth.ts";
import { startUpstreamMcp, type UpstreamMcp } from "../helpers/upstream-mcp.ts";

const SCOPES = ["openid", "offline_access", "mail:read", "mail:send"];
const MEMBERS = ["mail", "calendar", "files"] as const;
type MemberId = (typeof MEMBERS)[number];
const TOOLS = ["whoami", "read_mail", "send_email", "forward_mail", "count_mail", "delete_all"];

let browser: Browser;
let gw: Gateway;
let base = "";
const auths = {} as Record<MemberId, UpstreamAuth>;
const upstreams = {} as Record<MemberId, UpstreamMcp>;
let host: Awaited<ReturnType<typeof startClientHost>>;
let clientId = "";
const people = {} as Record<"alice" | "bob", { token: string; page: Page }>;

beforeAll(async () => {
  const port = await freePort();
  for (const id of MEMBERS) {
    auths[id] = await startUpstreamAuth({ redirectUris: [`http://127.0.0.1:${port}/ath/callback`], scopes: SCOPES });
    upstreams[id] = await startUpstreamMcp(auths[id]);
  }
  const entry = (id: MemberId) => ({
    display_name: `${id[0]!.toUpperCase()}${id.slice(1)} (MCP)`,
    available_scopes: SCOPES,
    authorize_endpoint: auths[id].authorizeEndpoint,
    token_endpoint: auths[id].tokenEndpoint,
    // the person is who the upstream says (`sub`): one person across the three upstreams' sign-ins
    userinfo_endpoint: auths[id].userinfoEndpoint,
    client_id: auths[id].postClient.client_id,
    client_secret: auths[id].postClient.client_secret,
    mcp: { url: upstreams[id].url },
  });
  gw = await startGateway({
    port,
    binary: true,
    providers: {
      mail: {
        ...entry("mail"),
        policy: [{ match: ["MCP tools/call delete_all"], action: "deny", reason: "Nobody deletes every mail through ath" }],
        approval_rules: [{ match: ["MCP tools/call send_email"], approver: "user" }],
      },
      calendar: { ...entry("calendar"), budgets: [{ match: ["MCP tools/call count_mail"], per: "agent_user", limit: 2, window: "1d" }] },
      files: entry("files"),
      mcp_groups: { work: { providers: ["mail", "calendar"] }, solo: { providers: ["files"], prefix: "" } },
    },
  });
  base = gw.baseUrl;
  host = await startClientHost();
  clientId = await registerClient(base, host.redirectUrl, "Federated host");
  browser = await sharedChromium();
  for (const [who, connects] of [["alice", ["calendar", "files"]], ["bob", ["files"]]] as const) {
    const { page } = await freshPage(browser);
    const t = await codeGrant(page, { base, clientId, redirectUri: host.redirectUrl, resource: `${base}/mcp`, login: who, landings: host.landings });
    people[who] = { token: t.access_token, page };
    for (const member of connects) await connect(who, member);
  }
}, 180_000);

afterAll(async () => {
  await closeContexts(browser);
  await gw?.cleanup();
  await host?.stop();
  for (const id of MEMBERS) {
    await upstreams[id]?.stop();
    await auths[id]?.stop();
  }
});

/** The person calls `{member}_connect` (a client without URL elicitation gets the URL as text) and signs in there. */
async function connect(who: "alice" | "bob", member: MemberId): Promise<void> {
  const called = await call2026(people[who].token, "/mcp", "tools/call", { name: `${member}_connect`, arguments: {} });
  const url = (called.result?.structuredContent as { connect_url?: string } | undefined)?.connect_url;
  expect(url).toStartWith(`${base}/ath/consent/`);
  const page = people[who].page;
  await page.goto(url!);
  // a connection skips ath's consent page (the person consented to the client at the sign-in): the upstream's form
  await page.locator('input[name="login"]').fill(who);
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Approve", exact: true }).click()]);
  expect(await page.content()).toContain("connected");
}

const groupTokens: Record<string, string> = {};

/** The person's token for a group's URL (signed in there once, at its first member). */
async function groupToken(who: "alice" | "bob", group: string): Promise<string> {
  const key = `${who}/${group}`;
  if (!groupTokens[key]) {
    const t = await codeGrant(people[who].page, { base, clientId, redirectUri: host.redirectUrl, resource: `${base}/mcp/g/${group}`, login: who, landings: host.landings });
    groupTokens[key] = t.access_token;
  }
  return groupTokens[key];
}

type Answer = { result?: Record<string, any>; error?: { code: number; message: string; data?: Record<string, any> } };

/** One 2026-07-28 request (its envelope and headers as the wire wants them); its JSON-RPC answer and HTTP status. */
async function call2026(token: string, path: string, method: string, params: Record<string, unknown> = {}, extraMeta: Record<string, unknown> = {}): Promise<Answer & { status: number; ms: number }> {
  const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/clientInfo": { name: "t", version: "1" }, ...extraMeta };
  const name = typeof params.name === "string" ? params.name : typeof params.uri === "string" ? params.uri : null;
  const started = performance.now();
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      ...(name !== null && (method === "tools/call" || method === "prompts/get" || method === "resources/read") ? { "mcp-name": name } : {}),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { ...params, _meta: meta } }),
  });
  const body = await read(res);
  return { ...body, status: res.status, ms: performance.now() - started };
}

/** A 2025-11-25 session at `path`; returns a caller of requests on it. */
async function session2025(token: string, path: string, capabilities: Record<string, unknown> = {}): Promise<((method: string, params?: Record<string, unknown>) => Promise<Answer>) & { sid: string }> {
  const post = (body: unknown, sid?: string) =>
    fetch(`${base}${path}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...(sid ? { "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" } : {}),
      },
      body: JSON.stringify(body),
    });
  const init = await post({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities, clientInfo: { name: "raw", version: "1" } } });
  expect(init.status).toBe(200);
  const sid = init.headers.get("mcp-session-id")!;
  expect(sid).toBeTruthy();
  await init.body?.cancel();
  await (await post({ jsonrpc: "2.0", method: "notifications/initialized" }, sid)).body?.cancel();
  let n = 1;
  return Object.assign(async (method: string, params: Record<string, unknown> = {}) => read(await post({ jsonrpc: "2.0", id: n++, method, params }, sid)), { sid });
}

async function read(res: Response): Promise<Answer> {
  const text = await res.text();
  if ((res.headers.get("content-type") ?? "").includes("text/event-stream")) {
    const data = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6));
    return JSON.parse(data.at(-1)!);
  }
  return text ? JSON.parse(text) : {};
}

const names = (a: Answer) => (a.result?.tools as { name: string }[]).map((t) => t.name);
const visible = TOOLS.filter((t) => t !== "delete_all");

describe("lists per person", () => {
  test("each person's tools/list is the union of their connected members' (policy-filtered, in order), and a connect tool for each other member — on both wires", async () => {
    const alice = [...visible.map((t) => `mail_${t}`), ...TOOLS.map((t) => `calendar_${t}`), ...TOOLS.map((t) => `files_${t}`)];
    const bob = [...visible.map((t) => `mail_${t}`), "calendar_connect", ...TOOLS.map((t) => `files_${t}`)];
    const a26 = await call2026(people.alice.token, "/mcp", "tools/list");
    expect(a26.status).toBe(200);
    expect(names(a26)).toEqual(alice);
    expect(a26.result?.cacheScope).toBe("private");
    expect(a26.result?._meta).toBeUndefined();
    const b26 = await call2026(people.bob.token, "/mcp", "tools/list");
    expect(names(b26)).toEqual(bob);
    expect(b26.result?.ttlMs).toBeLessThanOrEqual(10_000);
    const a25 = await (await session2025(people.alice.token, "/mcp"))("tools/list");
    expect(names(a25)).toEqual(alice);
    expect(a25.result?.ttlMs).toBeUndefined();
    // a group: its own sign-in (its URL is its resource), its members only, its own prefixes — and the members Bob
    // connected before are his there too
    expect(names(await call2026(await groupToken("bob", "work"), "/mcp/g/work", "tools/list"))).toEqual([...visible.map((t) => `mail_${t}`), "calendar_connect"]);
    expect(names(await call2026(await groupToken("bob", "solo"), "/mcp/g/solo", "tools/list"))).toEqual(TOOLS);
  });
});

describe("calls", () => {
  test("every call reaches the right upstream as the right person, each with that person's own upstream token", async () => {
    const reached: Record<string, Set<string>> = {};
    for (const [who, members] of [["alice", MEMBERS], ["bob", ["mail", "files"]]] as const) {
      for (const member of members) {
        const before = MEMBERS.map((m) => upstreams[m].calls.length);
        const a = await call2026(people[who].token, "/mcp", "tools/call", { name: `${member}_whoami`, arguments: {} });
        expect(a.result?.content[0].text).toBe(who);
        expect(upstreams[member].calls.slice(before[MEMBERS.indexOf(member)])).toEqual([{ tool: "whoami", sub: who, args: {} }]);
        // and no other upstream saw a call
        expect(MEMBERS.map((m, i) => upstreams[m].calls.length - before[i]!)).toEqual(MEMBERS.map((m) => (m === member ? 1 : 0)));
        const auth = upstreams[member].requests.filter((r) => r.active).at(-1)!.authorization!;
        (reached[auth] ??= new Set()).add(`${who}@${member}`);
      }
    }
    // five (person, upstream) pairs, five different upstream tokens, none of them ath's own
    expect(Object.values(reached).map((s) => [...s])).toHaveLength(5);
    for (const auth of Object.keys(reached)) expect(auth).not.toContain(people.alice.token);
    // Bob never connected the calendar: no request of his reached it, and his call is told to connect
    const refused = await call2026(people.bob.token, "/mcp", "tools/call", { name: "calendar_whoami", arguments: {} });
    expect(refused.error?.data).toMatchObject({ ath_error: "CONSENT_REQUIRED", connect_tool: "calendar_connect" });
    expect(upstreams.calendar.calls.filter((c) => c.sub === "bob")).toEqual([]);
  });

  test("a denied tool reaches no upstream", async () => {
    const counts = MEMBERS.map((m) => upstreams[m].calls.length);
    const denied = await call2026(people.alice.token, "/mcp", "tools/call", { name: "mail_delete_all", arguments: {} });
    expect(denied.error?.data).toMatchObject({ ath_error: "POLICY_DENIED", reason: "Nobody deletes every mail through ath" });
    const on2025 = await (await session2025(await groupToken("alice", "work"), "/mcp/g/work"))("tools/call", { name: "mail_delete_all", arguments: {} });
    expect(on2025.error?.data?.ath_error).toBe("POLICY_DENIED");
    expect(MEMBERS.map((m) => upstreams[m].calls.length)).toEqual(counts);
    expect(MEMBERS.flatMap((m) => upstreams[m].calls.filter((c) => c.tool === "delete_all"))).toEqual([]);
  });

  test("an approval-held tool runs once after the person approves (2025 wire: the resend)", async () => {
    const call = await session2025(people.alice.token, "/mcp");
    const args = { name: "mail_send_email", arguments: { to: "bob@example.com", text: "federated" } };
    const held = await call("tools/call", args);
    expect(held.error?.data?.ath_error).toBe("APPROVAL_REQUIRED");
    expect(upstreams.mail.calls.filter((c) => c.tool === "send_email")).toEqual([]);
    await people.alice.page.goto(held.error!.data!.approval_url);
    await clickAndWait(people.alice.page, "Approve");
    const ran = await call("tools/call", args);
    expect(ran.result?.content[0].text).toBe("sent to bob@example.com");
    const again = await call("tools/call", args);
    expect(again.error?.data?.ath_error).toBe("APPROVAL_REQUIRED");
    expect(upstreams.mail.calls.filter((c) => c.tool === "send_email")).toEqual([{ tool: "send_email", sub: "alice", args: { to: "bob@example.com", text: "federated" } }]);
  });

  test("an approval-held tool runs once after the person approves (2026 wire: the multi-round-trip retry)", async () => {
    const caps = { "io.modelcontextprotocol/clientCapabilities": { elicitation: { url: {} } } };
    const args = { name: "mail_send_email", arguments: { to: "carol@example.com", text: "mrtr" } };
    const held = await call2026(people.alice.token, "/mcp", "tools/call", args, caps);
    expect(held.result?.resultType).toBe("input_required");
    const request = held.result!.inputRequests.ath_approval.params;
    await people.alice.page.goto(request.url);
    await clickAndWait(people.alice.page, "Approve");
    const retry = { ...args, inputResponses: { ath_approval: { action: "accept" } }, requestState: held.result!.requestState };
    const ran = await call2026(people.alice.token, "/mcp", "tools/call", retry, caps);
    expect(ran.result?.content[0].text).toBe("sent to carol@example.com");
    const replayed = await call2026(people.alice.token, "/mcp", "tools/call", retry, caps);
    expect(replayed.error?.data?.reason).toBe("request_state_used");
    expect(upstreams.mail.calls.filter((c) => (c.args as { to?: string }).to === "carol@example.com")).toHaveLength(1);
  });

  test("a budget of the calendar counts its calls through the federated URL, per person: the third is refused and never sent", async () => {
    const count = () => call2026(people.alice.token, "/mcp", "tools/call", { name: "calendar_count_mail", arguments: {} });
    expect((await count()).result?.content[0].text).toBe("1");
    // the /mcp token does not open the group's URL (another resource): nothing counted there
    expect((await call2026(people.alice.token, "/mcp/g/work", "tools/call", { name: "calendar_count_mail", arguments: {} })).status).toBe(401);
    expect((await count()).result?.content[0].text).toBe("1");
    const third = await count();
    expect(third.error?.data).toMatchObject({ ath_error: "BUDGET_EXHAUSTED", limit: 2 });
    expect(upstreams.calendar.calls.filter((c) => c.tool === "count_mail" && c.sub === "alice")).toHaveLength(2);
    // the mail server's count_mail has no budget
    expect((await call2026(people.alice.token, "/mcp", "tools/call", { name: "mail_count_mail", arguments: {} })).result?.content[0].text).toBe("1");
  });
});

describe("the front-door token", () => {
  test("a token for /mcp is refused at /mcp/{id} and at a group's URL, and a token for /mcp/{id} at /mcp (RFC 8707)", async () => {
    const challenge = async (path: string, token: string) => {
      const res = await fetch(`${base}${path}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: "{}" });
      await res.body?.cancel();
      return { status: res.status, header: res.headers.get("www-authenticate") ?? "" };
    };
    for (const path of ["/mcp/mail", "/mcp/files", "/mcp/g/work"]) {
      const c = await challenge(path, people.alice.token);
      expect(c.status).toBe(401);
      expect(c.header).toContain('error="invalid_token"');
    }
    const { page } = await freshPage(browser);
    const direct = await codeGrant(page, { base, clientId, redirectUri: host.redirectUrl, resource: `${base}/mcp/mail`, login: "alice", landings: host.landings });
    const refused = await challenge("/mcp", direct.access_token);
    expect(refused.status).toBe(401);
    expect(refused.header).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`);
    // and it still opens its own URL
    const own = await fetch(`${base}/mcp/mail`, { method: "POST", headers: { authorization: `Bearer ${direct.access_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }) });
    expect(own.status).toBe(200);
    await own.body?.cancel();
    // what routing through /mcp costs over calling /mcp/mail straight (same person, same upstream, 2026 wire), p50 of 40
    const p50 = async (token: string, path: string, name: string) => {
      const ms: number[] = [];
      for (let i = 0; i < 40; i++) {
        const a = await call2026(token, path, "tools/call", { name, arguments: {} });
        expect(a.result?.content[0].text).toBe("alice");
        ms.push(a.ms);
      }
      return ms.sort((x, y) => x - y)[20]!;
    };
    const straight = await p50(direct.access_token, "/mcp/mail", "whoami");
    const routed = await p50(people.alice.token, "/mcp", "mail_whoami");
    const other = await p50(people.alice.token, "/mcp", "files_whoami");
    console.log(`tools/call p50: /mcp/mail ${straight.toFixed(2)} ms, /mcp → mail (signed in there) ${routed.toFixed(2)} ms, /mcp → files (connected) ${other.toFixed(2)} ms`);
    expect(routed).toBeLessThan(straight + 15);
    const prm = await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp/g/work`)).json();
    expect(prm).toMatchObject({ resource: `${base}/mcp/g/work`, authorization_servers: [base] });
  });
});

describe("connecting a member", () => {
  test("{prefix}connect is a URL elicitation on both wires; once the person signs in, the 2025 stream says the list changed, the 2026 retry says connected, and the list grows", async () => {
    const caps = { "io.modelcontextprotocol/clientCapabilities": { elicitation: { url: {} } } };
    const asked = await call2026(people.bob.token, "/mcp", "tools/call", { name: "calendar_connect", arguments: {} }, caps);
    expect(asked.result?.resultType).toBe("input_required");
    const request = asked.result!.inputRequests.ath_connect;
    expect(request).toMatchObject({ method: "elicitation/create", params: { mode: "url" } });
    expect(request.params.url).toStartWith(`${base}/ath/consent/`);
    // a retry before the person went there is asked again
    const early = await call2026(people.bob.token, "/mcp", "tools/call", { name: "calendar_connect", arguments: {}, inputResponses: { ath_connect: { action: "accept" } } }, caps);
    expect(early.result?.resultType).toBe("input_required");

    const call = await session2025(people.bob.token, "/mcp", { elicitation: { url: {} } });
    const elicited = await call("tools/call", { name: "calendar_connect", arguments: {} });
    expect(elicited.error?.code).toBe(-32042);
    expect(elicited.error?.data?.elicitations[0]).toMatchObject({ mode: "url" });
    const stream = await fetch(`${base}/mcp`, { headers: { authorization: `Bearer ${people.bob.token}`, accept: "text/event-stream", "mcp-session-id": call.sid, "mcp-protocol-version": "2025-11-25" } });
    expect(stream.status).toBe(200);
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    await reader.read(); // the stream is open

    const page = people.bob.page;
    await page.goto(request.params.url);
    await page.locator('input[name="login"]').fill("bob");
    await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Approve", exact: true }).click()]);
    const connectedAt = performance.now();
    let seen = "";
    while (!seen.includes("notifications/tools/list_changed")) {
      const { value, done } = await Promise.race([reader.read(), Bun.sleep(5_000).then(() => ({ value: "", done: true }))]);
      if (done) break;
      seen += value;
    }
    await reader.cancel();
    expect(seen).toContain('"method":"notifications/tools/list_changed"');
    expect(performance.now() - connectedAt).toBeLessThan(3_000);

    const done = await call2026(people.bob.token, "/mcp", "tools/call", { name: "calendar_connect", arguments: {}, inputResponses: { ath_connect: { action: "accept" } } }, caps);
    expect(done.result?.content[0].text).toContain("is connected");
    expect(names(await call("tools/list"))).toEqual([...visible.map((t) => `mail_${t}`), ...TOOLS.map((t) => `calendar_${t}`), ...TOOLS.map((t) => `files_${t}`)]);
    expect((await call2026(people.bob.token, "/mcp", "tools/call", { name: "calendar_whoami", arguments: {} })).result?.content[0].text).toBe("bob");
    expect(upstreams.calendar.calls.filter((c) => c.sub === "bob")).toEqual([{ tool: "whoami", sub: "bob", args: {} }]);
  }, 60_000);
});

describe("operators see it", () => {
  test("the admin API and `ath admin mcp` show /mcp and each group, their members and prefixes, and which members each person connected", async () => {
    const res = await fetch(`${base}/ath/admin/mcp`, { headers: { "x-ath-user-token": gw.adminToken } });
    expect(res.status).toBe(200);
    const view = (await res.json()) as { urls: { group: string | null; url: string; members: { provider_id: string; prefix: string }[]; people: { user_id: string; connected: string[]; missing: string[] }[] }[] };
    expect(view.urls.map((u) => [u.group, u.url, u.members.map((m) => `${m.provider_id}:${m.prefix}`)])).toEqual([
      [null, `${base}/mcp`, ["mail:mail_", "calendar:calendar_", "files:files_"]],
      ["work", `${base}/mcp/g/work`, ["mail:mail_", "calendar:calendar_"]],
      ["solo", `${base}/mcp/g/solo`, ["files:"]],
    ]);
    const plain = view.urls[0]!.people.map((p) => [p.user_id, p.connected, p.missing]).sort();
    // Bob connected the calendar in the test above
    expect(plain).toEqual([["alice", ["mail", "calendar", "files"], []], ["bob", ["mail", "calendar", "files"], []]]);
    expect(view.urls[1]!.people.map((p) => p.user_id).sort()).toEqual(["alice", "bob"]);
    expect((await fetch(`${base}/ath/admin/mcp`)).status).toBe(401);

    const cli = Bun.spawn([ensureBinary(), "admin", "mcp", "-g", base, "--format", "json"], { env: { ...process.env, ATH_ADMIN_TOKEN: gw.adminToken, ATH_HOME: "/nonexistent-ath-home" }, stdout: "pipe", stderr: "pipe" });
    const [out, , code] = await Promise.all([new Response(cli.stdout).text(), new Response(cli.stderr).text(), cli.exited]);
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual(view);
    const text = Bun.spawn([ensureBinary(), "admin", "mcp", "-g", base], { env: { ...process.env, ATH_ADMIN_TOKEN: gw.adminToken, ATH_HOME: "/nonexistent-ath-home" }, stdout: "pipe", stderr: "pipe" });
    const printed = await new Response(text.stdout).text();
    expect(await text.exited).toBe(0);
    expect(printed).toContain(`${base}/mcp/g/solo`);
    expect(printed).toContain("mail,calendar,files");

    // the console's page, signed in with the admin token in Chromium
    const { page } = await freshPage(browser);
    await page.goto(`${base}/admin/mcp`);
    await page.fill("#token", gw.adminToken);
    await clickAndWait(page, "Sign in");
    if (new URL(page.url()).pathname !== "/admin/mcp") await page.goto(`${base}/admin/mcp`);
    const main = (await page.locator("main").textContent()) ?? "";
    for (const url of ["/mcp", "/mcp/g/work", "/mcp/g/solo"]) expect(main).toContain(`${base}${url}`);
    expect(await page.locator("td[data-label=User]").allTextContents()).toContain("bob");
    expect(await page.locator("td[data-label=Connected]").first().innerText()).toBe("mail, calendar, files");
  });
});

describe("a member down, a member slow", () => {
  test("one upstream stopped and one delayed past 5 s: the list answers within the bound with the rest, naming both unavailable", async () => {
    upstreams.calendar.delayMs = 6_500;
    const files = upstreams.files;
    await files.stop();
    try {
      const a = await call2026(people.alice.token, "/mcp", "tools/list");
      expect(a.ms).toBeLessThan(5_000 + 1_500);
      expect(names(a)).toEqual(visible.map((t) => `mail_${t}`));
      const unavailable = (a.result?._meta?.["ath/unavailable"] as { provider_id: string }[]).map((u) => u.provider_id).sort();
      expect(unavailable).toEqual(["calendar", "files"]);
      // a call to a working member is not held by the others
      const fast = await call2026(people.alice.token, "/mcp", "tools/call", { name: "mail_whoami", arguments: {} });
      expect(fast.result?.content[0].text).toBe("alice");
      expect(fast.ms).toBeLessThan(2_000);
    } finally {
      upstreams.calendar.delayMs = 0;
    }
  }, 30_000);
});
