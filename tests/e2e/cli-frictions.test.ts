/**
 * What a newcomer tripped on (issue 25), each through the compiled CLI against `dist/ath serve --demo`: a mistyped
 * flag gets "did you mean"; a gateway given without its scheme is told to add http://; `localhost` for a gateway
 * serving as 127.0.0.1 is told the gateway's base URL; a wrong code says it is the code that is wrong; a gateway's
 * refusal in text mode is one line on stderr and nothing on stdout (the JSON only with --format json); a scope
 * refusal names the scope needed; a provider the gateway does not offer is not sent to `ath authorize`; the admin
 * API takes `Authorization: Bearer` and its 401 names both ways.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { consent } from "../helpers/agent.ts";
import { ath, ensureBinary } from "../helpers/cli-binary.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { tempDir } from "../helpers/net.ts";

let gw: Gateway;
let base: string;
let home: { path: string; remove: () => Promise<void> };
const run = (...args: string[]) => ath(home.path, args);

beforeAll(async () => {
  ensureBinary();
  gw = await startGateway({ binary: true, providers: {}, extraArgs: ["--demo"] });
  base = gw.baseUrl;
  home = await tempDir("cli-frictions");
}, 120_000);
afterAll(async () => {
  await home?.remove();
  await gw?.cleanup();
});

describe("mistakes on the command line", () => {
  test("--scope for --scopes: exit 2 with \"did you mean --scopes\"", async () => {
    const r = await run("register", "-g", base, "--provider", "demo", "--scope", "notes:read");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("ath: unknown flag --scope for `ath register` (did you mean --scopes?): see `ath register --help`\n");
    // a flag far from every other gets no guess
    expect((await run("register", "-g", base, "--zzzzzz")).stderr).not.toContain("did you mean");
  });

  test("-g 127.0.0.1:8787 (no scheme) is told to add http://, not to save a gateway of that name", async () => {
    const bare = base.replace("http://", "");
    const r = await run("discover", "-g", bare);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`did you mean -g http://${bare}?`);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    const named = await run("discover", "-g", "prod");
    expect(named.stderr).toContain("ath config set-gateway prod <url>");
    expect(named.stderr).not.toContain("http://prod");
  });

  test("-g http://localhost:PORT for a gateway serving as 127.0.0.1: the refusal names the gateway's base URL to pass", async () => {
    const localhost = base.replace("127.0.0.1", "localhost");
    const r = await run("register", "-g", localhost, "--provider", "demo");
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("INVALID_ATTESTATION");
    expect(r.stderr).toContain(`this gateway's base URL is ${base}, not ${localhost}: pass -g ${base}`);
    const json = await run("register", "-g", localhost, "--provider", "demo", "--format", "json");
    expect(json.json().error).toMatchObject({ code: "INVALID_ATTESTATION", details: { gateway_base_url: base } });
  });
});

describe("codes", () => {
  let sessionId = "";
  let code = "";

  test("a wrong code for an approved session says the code is wrong (and the session still waits for the right one)", async () => {
    expect((await run("register", "-g", base, "--provider", "demo", "--scopes", "notes:read")).code).toBe(0);
    const started = (await run("authorize", "-g", base, "--provider", "demo", "--scopes", "notes:read", "--format", "json")).json();
    sessionId = started.ath_session_id;
    const c = await consent(started.authorization_url);
    code = c.code!;
    const wrong = await run("token", "-g", base, "--code", "ath_code_mistyped");
    expect(wrong.code).toBe(4);
    expect(wrong.stderr).toContain(`the code is not the one the consent page showed for ${sessionId}`);
    expect(wrong.stderr).not.toContain("not approved");
    // the session was not spent: the right code still works
    expect((await run("token", "-g", base, "--code", code)).code).toBe(0);
  });

  test("a code sent against a session the person has not approved says the code belongs to another authorization", async () => {
    const started = (await run("authorize", "-g", base, "--provider", "demo", "--scopes", "notes:read", "--format", "json")).json();
    const r = await run("token", "-g", base, "--code", "ath_code_from_elsewhere", "--session", started.ath_session_id);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`nobody has approved ${started.ath_session_id} yet, so this code is not its code`);
    // a spent session says so (the same code again is this home's saved token: never sent twice)
    expect((await run("token", "-g", base, "--code", code, "--format", "json")).json().already_exchanged).toBe(true);
    const spent = await run("token", "-g", base, "--code", "ath_code_other", "--session", sessionId, "--format", "json");
    expect(spent.json().error).toMatchObject({ code: "SESSION_NOT_FOUND", message: expect.stringContaining("already used") });
  });
});

describe("gateway refusals", () => {
  test("a scope refusal names the scope the request needs; text mode prints one line on stderr and nothing on stdout", async () => {
    const r = await run("proxy", "-g", base, "demo", "POST", "/notes", "--body", '{"text":"x"}');
    expect(r.code).toBe(4);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain("403 SCOPE_NOT_APPROVED");
    expect(r.stderr).toContain("notes:write");
    const json = await run("proxy", "-g", base, "demo", "POST", "/notes", "--body", '{"text":"x"}', "--format", "json");
    expect(json.code).toBe(4);
    expect(json.json()).toMatchObject({ status: 403, body: { code: "SCOPE_NOT_APPROVED", details: { needed_scopes: ["notes:write"] } } });
  });

  test("a revoked token: one line on stderr naming `ath authorize`, stdout empty; --format json has the answer", async () => {
    expect((await run("proxy", "-g", base, "demo", "GET", "/notes")).code).toBe(0);
    const creds = JSON.parse(await Bun.file(`${home.path}/credentials.json`).text());
    const agent = Object.values(creds.gateways[base].agents)[0] as { client_id: string; client_secret: string; tokens: { demo: { access_token: string } } };
    const revoked = await fetch(`${base}/ath/revoke`, {
      method: "POST",
      body: new URLSearchParams({ token: agent.tokens.demo.access_token, client_id: agent.client_id, client_secret: agent.client_secret }),
    });
    expect(revoked.status).toBe(200);
    const r = await run("proxy", "-g", base, "demo", "GET", "/notes");
    expect(r).toMatchObject({ code: 4, stdout: "" });
    expect(r.stderr).toMatch(/^ath: GET \S+: 401 TOKEN_REVOKED — .*ath authorize -g \S+ --provider demo`\n$/);
    const json = await run("proxy", "-g", base, "demo", "GET", "/notes", "--format", "json");
    expect(json.json()).toMatchObject({ status: 401, body: { code: "TOKEN_REVOKED" } });
  });

  test("a provider the gateway does not offer: not sent to `ath authorize`, told the providers there are", async () => {
    const r = await run("proxy", "-g", base, "demmo", "GET", "/notes");
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`${base} offers no provider "demmo" (did you mean "demo"?)`);
    expect(r.stderr).not.toContain("ath authorize");
    expect((await run("proxy", "-g", base, "demmo", "GET", "/notes", "--format", "json")).json().error.code).toBe("UNKNOWN_PROVIDER");
  });
});

describe("the admin API's token", () => {
  test("Authorization: Bearer <admin token> works as X-ATH-User-Token does; the 401 names both ways", async () => {
    const bearer = await fetch(`${base}/ath/admin/agents`, { headers: { authorization: `Bearer ${gw.adminToken}` } });
    expect(bearer.status).toBe(200);
    expect(((await bearer.json()) as { agents: unknown[] }).agents.length).toBeGreaterThan(0);
    const header = await fetch(`${base}/ath/admin/agents`, { headers: { "x-ath-user-token": gw.adminToken } });
    expect(header.status).toBe(200);
    for (const headers of [{}, { authorization: "Bearer wrong" }, { "x-ath-user-token": "wrong" }] as Record<string, string>[]) {
      const refused = await fetch(`${base}/ath/admin/agents`, { headers });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="ath"');
      const body = (await refused.json()) as { code: string; message: string };
      expect(body.code).toBe("UNAUTHORIZED");
      expect(body.message).toContain("Authorization: Bearer <admin token>");
      expect(body.message).toContain("X-ATH-User-Token: <admin token>");
    }
  });
});
