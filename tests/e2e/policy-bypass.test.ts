/**
 * Approval rules that cannot be sidestepped (DESIGN §16), through the compiled `dist/ath serve` in gateway mode
 * (/ath/proxy/{id}/*) and native mode (/api/*), with raw HTTP where `fetch` would normalise the request-target. Every
 * spelling an upstream (Spring, Tomcat, ASP.NET, Rails…) may read as the approval-held path is refused 400
 * (`ambiguous_path`) or held for approval (403 APPROVAL_REQUIRED) — and the upstream's request log shows nothing
 * forwarded. Also: allow-lists (scope_rules) fail closed on the loose spellings, HEAD is matched as GET, a rule
 * written with a space matches `%20`, rules holding `%` are refused at configuration, and `path_params` forwards `;`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { fullFlow } from "../helpers/agent.ts";
import { ensureBinary } from "../helpers/cli-binary.ts";
import { tempDir } from "../helpers/net.ts";
import { rawRequest, type RawResponse } from "../helpers/raw-http.ts";
import { mailProvider, NATIVE_APP, startNativeWorld, startWorld, type World } from "../helpers/world.ts";

const SCOPES = ["openid", "mail:read", "mail:send"];
const APPROVAL_RULES = [{ match: ["POST /v1/messages/send", "GET /v1/messages/secret", "DELETE /v1/drafts/my draft"], approver: "user" }];

/**
 * The bypass corpus: [method, path after the mount, what the attacker hopes the upstream reads it as]. Each must be
 * refused (400 ambiguous_path, or the HTTP server's own 400) or held (403 APPROVAL_REQUIRED).
 */
const CORPUS: [string, string][] = [
  // from the issue
  ["POST", "/v1/messages/send;x=1"],
  ["POST", "/v1/messages/SEND"],
  ["POST", "/v1/Messages/send"],
  ["POST", "/v1/messages/send.json"],
  ["POST", "/v1/messages/send."],
  ["POST", "/v1/messages/send%20"],
  ["POST", "/v1/messages/send%09"],
  ["POST", "/v1/messages/send%E2%80%8B"],
  ["POST", "/v1/messages/%2573end"],
  ["POST", "/v1/messages%2Fsend"],
  ["POST", "/v1/messages//send"],
  ["POST", "/v1/messages\\send"],
  ["POST", "/v1/messages/x/../send"],
  ["HEAD", "/v1/messages/secret"],
  // an attacker's additions
  ["POST", "/v1/messages/send"],
  ["POST", "/v1/messages/send/"],
  ["POST", "/v1/messages/s%65nd"],
  ["POST", "/v1/messages/SeNd.XML"],
  ["POST", "/v1/messages/send.json."],
  ["POST", "/v1/messages/send..."],
  ["POST", "/v1/messages/send%C2%A0"],
  ["POST", "/v1/messages/send%E3%80%80"],
  ["POST", "/v1/messages/%C5%BFend"],
  ["POST", "/v1/messages/send%3Bx=1"],
  ["POST", "/v1/messages/send..;/"],
  ["POST", "/v1/messages/send;"],
  ["POST", "/v1/messages/send%00"],
  ["POST", "/v1/messages/send%7F"],
  ["POST", "/v1/messages/send%C2%85"],
  ["POST", "/v1/messages/send%E2%80%AE"],
  ["POST", "/v1/messages/send%EF%BB%BF"],
  ["POST", "/v1/messages/send%C2%AD"],
  ["POST", "/v1/messages/send%5C"],
  ["POST", "/v1/messages/send%25"],
  ["POST", "/v1/messages/send%ZZ"],
  ["POST", "/v1/messages/send%FF"],
  ["POST", "/v1/messages/%2e/send"],
  ["POST", "/v1/messages/./send"],
  ["POST", "/v1/x/%2e%2e/messages/send"],
  ["POST", "/v1/messages/%252e%252e/messages/send"],
  ["POST", "/v1/messages/send\u200b"],
  ["POST", "/v1//messages/send"],
  ["POST", "/v1/messages/send?to=x"],
  ["GET", "/v1/messages/SECRET"],
  ["HEAD", "/v1/messages/secret.json"],
  ["GET", "/v1/messages/secret%20."],
  ["DELETE", "/v1/drafts/my%20draft"],
  ["DELETE", "/v1/drafts/MY%20DRAFT."],
];

interface Mount {
  world: World;
  prefix: string;
  token: string;
}

/** Sends every corpus request; returns [request, status, code, reason] rows, and what the upstream received meanwhile. */
async function attack(m: Mount) {
  const before = m.world.api.requests.length;
  const rows: { request: string; status: number; code: string; reason?: string }[] = [];
  for (const [method, path] of CORPUS) {
    const r: RawResponse = await rawRequest(m.world.gw.port, method, m.prefix + path, { authorization: `Bearer ${m.token}`, "content-type": "application/json" }, method === "POST" ? '{"to":"boss@example.com"}' : "");
    // HEAD answers carry no body: the code is in X-ATH-Error
    let code = r.headers["x-ath-error"] ?? "";
    let reason: string | undefined;
    try {
      const doc = JSON.parse(r.body) as { code?: string; details?: { reason?: string } };
      code = doc.code ?? code;
      reason = doc.details?.reason;
    } catch {
      // not JSON (HEAD, or the HTTP server's own 400)
    }
    rows.push({ request: `${method} ${path}`, status: r.status, code, ...(reason ? { reason } : {}) });
  }
  return { rows, forwarded: m.world.api.requests.slice(before).map((r) => `${r.method} ${r.path}${r.query}`) };
}

function expectRefusedOrHeld(rows: Awaited<ReturnType<typeof attack>>["rows"]) {
  const wrong = rows.filter((r) => !((r.status === 400 && (r.code === "INVALID_REQUEST" || r.code === "")) || (r.status === 403 && r.code === "APPROVAL_REQUIRED")));
  expect(wrong).toEqual([]);
  // every refusal the gateway made names the reason
  for (const r of rows) if (r.status === 400 && r.code === "INVALID_REQUEST") expect({ request: r.request, reason: r.reason }).toEqual({ request: r.request, reason: "ambiguous_path" });
}

let gw: World;
let native: World;
let gwMount: Mount;
let gwClientId: string;
let rulesMount: Mount;
let nativeMount: Mount;
const results: Record<string, Awaited<ReturnType<typeof attack>>["rows"]> = {};

beforeAll(async () => {
  [gw, native] = await Promise.all([
    startWorld({
      binary: true,
      providers: (auth, api) => ({
        held: mailProvider(auth, api, { approval_rules: APPROVAL_RULES }),
        ruled: mailProvider(auth, api, {
          approval_rules: APPROVAL_RULES,
          scope_rules: { "mail:read": ["GET /v1/messages/**"], "mail:send": ["POST /v1/messages/*"] },
        }),
        params: mailProvider(auth, api, { approval_rules: APPROVAL_RULES, path_params: true }),
      }),
    }),
    startNativeWorld({ extra: { approval_rules: APPROVAL_RULES } }),
  ]);
  const [a, b, c] = await Promise.all([
    fullFlow(gw.baseUrl, { provider_id: "held", scopes: SCOPES }),
    fullFlow(gw.baseUrl, { provider_id: "ruled", scopes: SCOPES }),
    fullFlow(native.baseUrl, { provider_id: NATIVE_APP, scopes: SCOPES }),
  ]);
  gwMount = { world: gw, prefix: "/ath/proxy/held", token: a.accessToken };
  gwClientId = a.client.client_id;
  rulesMount = { world: gw, prefix: "/ath/proxy/ruled", token: b.accessToken };
  nativeMount = { world: native, prefix: "/api", token: c.accessToken };
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await native?.stop();
  if (Object.keys(results).length) console.log(JSON.stringify(results, null, 1));
});

describe("the bypass corpus: refused 400 or held, nothing forwarded", () => {
  test("gateway mode (/ath/proxy/{id}/…)", async () => {
    const { rows, forwarded } = await attack(gwMount);
    results.gateway = rows;
    expectRefusedOrHeld(rows);
    expect(forwarded).toEqual([]);
    // the spellings the issue found forwarded are now held, each for a person's approval
    const held = (req: string) => rows.find((r) => r.request === req)!;
    for (const req of ["POST /v1/messages/SEND", "POST /v1/Messages/send", "POST /v1/messages/send.json", "POST /v1/messages/send.", "POST /v1/messages/send%20", "HEAD /v1/messages/secret", "POST /v1/messages/%C5%BFend", "DELETE /v1/drafts/my%20draft"]) {
      expect({ req, status: held(req).status }).toEqual({ req, status: 403 });
    }
    for (const req of ["POST /v1/messages/send;x=1", "POST /v1/messages/%2573end", "POST /v1/messages%2Fsend", "POST /v1/messages//send", "POST /v1/messages/send%09", "POST /v1/messages/send%E2%80%8B"]) {
      expect({ req, status: held(req).status, reason: held(req).reason }).toEqual({ req, status: 400, reason: "ambiguous_path" });
    }
  }, 60_000);

  test("native mode (/api/…)", async () => {
    const { rows, forwarded } = await attack(nativeMount);
    results.native = rows;
    expectRefusedOrHeld(rows);
    expect(forwarded).toEqual([]);
  }, 60_000);

  test("with scope_rules, the loose spellings are not allowed either (allow-lists match both forms; `*` does not match a segment loosening empties): refused, nothing forwarded", async () => {
    const before = gw.api.requests.length;
    for (const path of ["/v1/Messages/send", "/v1/MESSAGES/x", "/v1/messages/..."]) {
      const r = await rawRequest(gw.gw.port, "POST", rulesMount.prefix + path, { authorization: `Bearer ${rulesMount.token}` }, "{}");
      expect({ path, status: r.status }).toEqual({ path, status: 403 });
    }
    expect(gw.api.requests.slice(before)).toEqual([]);
    // HEAD is allowed wherever GET is; the exact spelling passes
    const head = await rawRequest(gw.gw.port, "HEAD", `${rulesMount.prefix}/v1/messages/42`, { authorization: `Bearer ${rulesMount.token}` });
    expect(head.status).not.toBe(403);
    const exact = await rawRequest(gw.gw.port, "POST", `${rulesMount.prefix}/v1/messages/other`, { authorization: `Bearer ${rulesMount.token}` }, "{}");
    expect(exact.status).not.toBe(403);
    expect(gw.api.requests.slice(before).map((r) => `${r.method} ${r.path}`)).toEqual(["HEAD /v1/messages/42", "POST /v1/messages/other"]);
  });

  test("a path no rule holds is forwarded as sent (the literal form), `%20` and all", async () => {
    const before = gw.api.requests.length;
    const r = await rawRequest(gw.gw.port, "GET", `${gwMount.prefix}/v1/echo%20x/a.json?b=2&a=1`, { authorization: `Bearer ${gwMount.token}` });
    expect(r.status).toBeLessThan(500);
    expect(gw.api.requests.slice(before).map((x) => `${x.path}${x.query}`)).toEqual(["/v1/echo%20x/a.json?b=2&a=1"]);
  });
});

describe("path_params", () => {
  test("with path_params, `;…` is forwarded but cut off each segment for matching: still held", async () => {
    const p = await fullFlow(gw.baseUrl, { provider_id: "params", scopes: SCOPES });
    const before = gw.api.requests.length;
    const held = await rawRequest(gw.gw.port, "POST", "/ath/proxy/params/v1/messages/send;jsessionid=1", { authorization: `Bearer ${p.accessToken}` }, "{}");
    expect(JSON.parse(held.body).code).toBe("APPROVAL_REQUIRED");
    const dots = await rawRequest(gw.gw.port, "POST", "/ath/proxy/params/v1/x/..;/messages/send", { authorization: `Bearer ${p.accessToken}` }, "{}");
    expect(JSON.parse(dots.body).details.reason).toBe("ambiguous_path");
    expect(gw.api.requests.length).toBe(before);
    const free = await rawRequest(gw.gw.port, "GET", "/ath/proxy/params/v1/echo;v=2", { authorization: `Bearer ${p.accessToken}` });
    expect(free.status).toBeLessThan(500);
    expect(gw.api.requests.slice(before).map((r) => r.path)).toEqual(["/v1/echo;v=2"]);
  });
});

describe("rules are written decoded", () => {
  test("a rule holding '%' fails the start, naming the field", async () => {
    const dir = await tempDir("policy-bad-rule");
    try {
      const file = join(dir.path, "providers.json");
      await Bun.write(file, JSON.stringify({ bad: { ...badProvider(), approval_rules: [{ match: ["POST /v1/messages/my%20draft"] }] } }));
      const p = Bun.spawn([ensureBinary(), "serve", "--port", "0", "--providers", file, "--data-dir", join(dir.path, "data"), "--dev"], {
        stdout: "pipe",
        stderr: "pipe",
        env: { ...process.env, ATH_HOME: join(dir.path, "home"), NO_COLOR: "1" },
      });
      const code = await p.exited;
      const err = await new Response(p.stderr).text();
      expect(code).not.toBe(0);
      expect(err).toContain("approval_rules");
      expect(err).toContain("written decoded");
    } finally {
      await dir.remove();
    }
  });

  test("the admin API refuses a rule holding '%' (400, naming the field); a rule with a space matches %20", async () => {
    const bad = await fetch(`${gw.baseUrl}/ath/admin/agents/${gwClientId}`, {
      method: "PATCH",
      headers: { "x-ath-user-token": gw.gw.adminToken, "content-type": "application/json" },
      body: JSON.stringify({ approval_rules: [{ match: ["PUT /v1/a%2Fb"] }] }),
    });
    expect(bad.status).toBe(400);
    const doc = (await bad.json()) as { code: string; message: string; details?: unknown };
    expect(doc.code).toBe("INVALID_REQUEST");
    expect(JSON.stringify(doc)).toContain("approval_rules");
    expect(JSON.stringify(doc)).toContain("written decoded");
    // DELETE /v1/drafts/my draft (a space) holds the %20 spelling: the corpus shows it held; here the plain one too
    const r = await rawRequest(gw.gw.port, "DELETE", `${gwMount.prefix}/v1/drafts/my%20draft`, { authorization: `Bearer ${gwMount.token}` });
    expect(JSON.parse(r.body).code).toBe("APPROVAL_REQUIRED");
    expect(JSON.parse(r.body).details.approval_id).toMatch(/^ath_apr_/);
  });
});

function badProvider() {
  return {
    display_name: "Bad",
    available_scopes: ["a"],
    authorize_endpoint: "http://127.0.0.1:9/authorize",
    token_endpoint: "http://127.0.0.1:9/token",
    api_base_url: "http://127.0.0.1:9",
    client_id: "c",
    client_secret: "s",
  };
}
