/**
 * CEL conditions against hostile input, through the compiled `dist/ath serve` (issue 35): `matches` is RE2 in linear
 * time — the 26 `a`s and a `!` against `^(a+)+$` froze every request for 2.1 s; now neither that nor 34 of
 * them holds `/health` up —; a body of 60,000 keys costs a `when` next to nothing; a `when` that reads large data
 * again for every member fails its evaluation past its budget, which fails closed (the deny holds); and a `when` naming a field
 * `request` does not have (`request.qeury.mode`) is refused at start and by the admin API, with the closest field.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { fullFlow } from "../helpers/agent.ts";
import { tempDir } from "../helpers/net.ts";
import { REPO } from "../helpers/processes.ts";
import { mailProvider, startWorld, type World } from "../helpers/world.ts";

const POLICY = [
  { match: ["POST /v1/echo"], when: 'has(request.body.s) && request.body.s.matches("^(a+)+$")', action: "deny", reason: "a run of a" },
  { match: ["POST /v1/echo"], when: 'has(request.body.to) && request.body.to.endsWith("@evil.example")', action: "deny", reason: "no evil" },
  { match: ["POST /v1/echo"], when: "has(request.body.o) && request.body.o.all(a, request.body.o.exists(b, b == a))", action: "deny", reason: "quadratic" },
];

let w: World;
let token: string;

beforeAll(async () => {
  w = await startWorld({ binary: true, providers: (auth, api) => ({ cond: mailProvider(auth, api, { policy: POLICY }) }) });
  token = (await fullFlow(w.baseUrl, { provider_id: "cond", scopes: ["mail:send"] })).accessToken;
}, 120_000);
afterAll(() => w?.stop());

async function send(body: string) {
  const before = w.api.requests.length;
  const res = await fetch(`${w.baseUrl}/ath/proxy/cond/v1/echo`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body });
  const text = await res.text();
  let doc: { code?: string; details?: Record<string, any> } = {};
  try {
    doc = JSON.parse(text);
  } catch {
    // the upstream's echo
  }
  return { status: res.status, code: doc.code, details: doc.details, forwarded: w.api.requests.length - before };
}

/** How long /health takes while `hostile` requests are in flight (a bound on how long the process was held). */
async function healthWhile(hostile: Promise<unknown>[]): Promise<number> {
  await Bun.sleep(20);
  const started = performance.now();
  expect((await fetch(`${w.baseUrl}/health`)).status).toBe(200);
  const ms = performance.now() - started;
  await Promise.all(hostile);
  return ms;
}

describe("matches is RE2, linear in the text (finding 5)", () => {
  test("the issue's request — 26 a's and a ! against ^(a+)+$ — and 34 of them, four at once: decided, forwarded, /health not held", async () => {
    const before = w.api.requests.length;
    const hostile = [26, 34, 34, 34].map((n) => send(JSON.stringify({ s: `${"a".repeat(n)}!` })));
    expect(await healthWhile(hostile)).toBeLessThan(1000); // backtracking: seconds at 26, tens of minutes at 34
    expect((await Promise.all(hostile)).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(w.api.requests.length - before).toBe(4);
    const run = await send(JSON.stringify({ s: "a".repeat(34) }));
    expect({ status: run.status, code: run.code, forwarded: run.forwarded }).toEqual({ status: 403, code: "POLICY_DENIED", forwarded: 0 });
  }, 60_000);
});

describe("bounded work per key (finding 5)", () => {
  const wide = (n: number, extra: Record<string, unknown> = {}) => JSON.stringify({ ...Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])), ...extra });

  test("a body of 60,000 keys: the deny over one field holds, a body without it passes, /health is not held", async () => {
    const before = w.api.requests.length;
    const hostile = [send(wide(60_000, { to: "x@evil.example" })), send(wide(60_000))];
    expect(await healthWhile(hostile)).toBeLessThan(1000);
    const [evil, plain] = await Promise.all(hostile);
    expect({ status: evil!.status, reason: evil!.details?.reason }).toEqual({ status: 403, reason: "no evil" });
    expect(plain!.status).toBe(200);
    expect(w.api.requests.length - before).toBe(1); // the plain one only
  }, 60_000);

  test("a when reading 5,000 keys again for each key fails its evaluation: the deny holds (fail closed), nothing forwarded, /health not held", async () => {
    const hostile = [send(JSON.stringify({ o: JSON.parse(wide(5_000)) }))];
    expect(await healthWhile(hostile)).toBeLessThan(1000); // evaluated to the end: 25 million comparisons
    const [r] = await Promise.all(hostile);
    expect({ status: r!.status, code: r!.code, reason: r!.details?.reason, forwarded: r!.forwarded }).toEqual({ status: 403, code: "POLICY_DENIED", reason: "quadratic", forwarded: 0 });
    expect(String(r!.details?.evaluation_error)).toContain("more than 250000 times");
    // a few keys: evaluated, and the rule holds as written
    const few = await send(JSON.stringify({ o: { a: 1, b: 2 } }));
    expect({ code: few.code, error: few.details?.evaluation_error }).toEqual({ code: "POLICY_DENIED", error: undefined });
  }, 60_000);
});

describe("a when naming a field request does not have is refused at configuration", () => {
  const BAD = 'request.qeury.mode[0] == "dry-run"';

  test("at start: the gateway does not start, naming the rule, the field and the closest one", async () => {
    const dir = await tempDir("policy-unknown-field");
    try {
      const file = join(dir.path, "providers.json");
      const provider = { display_name: "Bad", available_scopes: ["a"], authorize_endpoint: "http://127.0.0.1:9/a", token_endpoint: "http://127.0.0.1:9/t", api_base_url: "http://127.0.0.1:9", client_id: "c", client_secret: "s" };
      await Bun.write(file, JSON.stringify({ bad: { ...provider, policy: [{ match: ["GET /x"], when: BAD, action: "allow" }] } }));
      const p = Bun.spawn([join(REPO, "dist/ath"), "serve", "--port", "0", "--providers", file, "--data-dir", join(dir.path, "data"), "--dev"], {
        stdout: "pipe",
        stderr: "pipe",
        env: { ...process.env, ATH_HOME: join(dir.path, "home"), NO_COLOR: "1" },
      });
      expect(await p.exited).not.toBe(0);
      expect(await new Response(p.stderr).text()).toContain('providers.bad.policy.0.when: request.qeury: request has no field "qeury" (did you mean "query"?)');
    } finally {
      await dir.remove();
    }
  });

  test("by the admin API: 400 INVALID_REQUEST naming the rule's field, for a provider and for an agent's own policy", async () => {
    const admin = { "x-ath-user-token": w.gw.adminToken, "content-type": "application/json" };
    const agents = await (await fetch(`${w.baseUrl}/ath/admin/agents`, { headers: admin })).json() as { agents: { client_id: string }[] };
    const clientId = agents.agents[0]!.client_id;
    const patch = await fetch(`${w.baseUrl}/ath/admin/agents/${clientId}`, { method: "PATCH", headers: admin, body: JSON.stringify({ policy: [{ match: ["GET /v1/**"], when: BAD, action: "deny" }] }) });
    expect(patch.status).toBe(400);
    const doc = (await patch.json()) as { code: string; message: string; details: { field: string } };
    expect({ code: doc.code, field: doc.details.field }).toEqual({ code: "INVALID_REQUEST", field: "policy.0.when" });
    expect(doc.message).toContain('request has no field "qeury" (did you mean "query"?)');
    const provider = { provider_id: "typo", display_name: "Typo", available_scopes: ["a"], authorize_endpoint: "https://idp.example/a", token_endpoint: "https://idp.example/t", client_id: "c", client_secret: "s", policy: [{ match: ["GET /x"], when: BAD, action: "deny" }] };
    const created = await fetch(`${w.baseUrl}/ath/admin/providers`, { method: "POST", headers: admin, body: JSON.stringify(provider) });
    expect(created.status).toBe(400);
    expect(((await created.json()) as { message: string }).message).toContain('(did you mean "query"?)');
  });
});
