/**
 * Policy rules with CEL `when` conditions (DESIGN §16) through the compiled `dist/ath serve`: deny / approve / allow
 * over body fields, query, headers, agent and token scopes; the first rule that holds decides; evaluation errors fail
 * closed (a deny holds, an allow does not); a body with a duplicate key cannot satisfy a condition; --max-policy-body;
 * a body no matching rule reads is never read (so a large one passes); compile errors fail the start and the admin
 * API (400), naming the rule; an agent's own policy set with PATCH /ath/admin/agents/{client_id}.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { fullFlow } from "../helpers/agent.ts";
import { ensureBinary } from "../helpers/cli-binary.ts";
import { tempDir } from "../helpers/net.ts";
import { rawRequest } from "../helpers/raw-http.ts";
import { mailProvider, startWorld, type World } from "../helpers/world.ts";

const SCOPES = ["openid", "mail:read", "mail:send"];
const POLICY = [
  { match: ["POST /v1/messages"], when: 'request.body.to.endsWith("@evil.example")', action: "deny", reason: "no mail to evil.example" },
  { match: ["POST /v1/messages"], when: "has(request.body.amount) && request.body.amount > 1000.0", action: "approve", approver: "user" },
  { match: ["GET /v1/messages"], when: '"secret" in request.query.folder', action: "deny", reason: "the secret folder is off limits" },
  { match: ["POST /v1/echo"], when: '"x-mode" in request.headers && request.headers["x-mode"] == "danger"', action: "deny", reason: "no danger mode" },
  { match: ["POST /v1/echo"], when: '"mail:send" in token.scopes && agent.id.startsWith("did:key:") && provider.id == "cond"', action: "allow" },
  { match: ["POST /v1/echo/admin"], when: '"mail:admin" in token.scopes && agent.id.startsWith("did:key:") && provider.id == "cond"', action: "allow" },
  // what the allows above do not let through is denied: a 200 below means an allow held
  { match: ["POST /v1/echo", "POST /v1/echo/admin"], action: "deny", reason: "echo only where an allow holds" },
  { match: ["PUT /v1/**"], when: "request.body.x == 1", action: "deny", reason: "x may not be 1" },
  { match: ["PATCH /v1/things"], when: "request.body.ok == true", action: "allow" },
  { match: ["PATCH /v1/things"], action: "deny", reason: "things change only when ok" },
];

let w: World;
let token: string;
let clientId: string;

beforeAll(async () => {
  w = await startWorld({
    binary: true,
    extraArgs: ["--max-policy-body", "256"],
    providers: (auth, api) => ({ cond: mailProvider(auth, api, { policy: POLICY }) }),
  });
  const flow = await fullFlow(w.baseUrl, { provider_id: "cond", scopes: SCOPES });
  token = flow.accessToken;
  clientId = flow.client.client_id;
}, 120_000);
afterAll(() => w?.stop());

async function send(method: string, path: string, body?: string, headers: Record<string, string> = {}) {
  const before = w.api.requests.length;
  const res = await fetch(`${w.baseUrl}/ath/proxy/cond${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body }),
  });
  const text = await res.text();
  let doc: { code?: string; message?: string; details?: Record<string, any> } = {};
  try {
    doc = JSON.parse(text);
  } catch {
    // an upstream answer that is not JSON
  }
  return { status: res.status, code: res.headers.get("x-ath-error") ?? doc.code, doc, forwarded: w.api.requests.length - before };
}

describe("conditions decide", () => {
  test("deny over a body field: 403 POLICY_DENIED with the rule's reason, nothing forwarded; another body passes", async () => {
    const r = await send("POST", "/v1/messages", JSON.stringify({ to: "x@evil.example", subject: "hi" }));
    expect({ status: r.status, code: r.code, forwarded: r.forwarded }).toEqual({ status: 403, code: "POLICY_DENIED", forwarded: 0 });
    expect(r.doc.details).toMatchObject({ reason: "no mail to evil.example", rule: { from: "provider", index: 0 } });
    const ok = await send("POST", "/v1/messages", JSON.stringify({ to: "boss@example.com", subject: "hi" }));
    expect(ok.forwarded).toBe(1);
    expect(ok.status).toBeLessThan(300);
  });

  test("approve over a body number: held for a person (403 APPROVAL_REQUIRED), nothing forwarded", async () => {
    const r = await send("POST", "/v1/messages", JSON.stringify({ to: "boss@example.com", amount: 5000 }));
    expect({ status: r.status, code: r.code, forwarded: r.forwarded }).toEqual({ status: 403, code: "APPROVAL_REQUIRED", forwarded: 0 });
    expect(String(r.doc.details?.approval_id)).toMatch(/^ath_apr_/);
  });

  test("deny over the query and over a header", async () => {
    const q = await send("GET", "/v1/messages?folder=inbox&folder=secret");
    expect({ status: q.status, code: q.code, forwarded: q.forwarded }).toEqual({ status: 403, code: "POLICY_DENIED", forwarded: 0 });
    expect((await send("GET", "/v1/messages?folder=inbox")).forwarded).toBe(1);
    const h = await send("POST", "/v1/echo", "{}", { "x-mode": "danger" });
    expect({ status: h.status, code: h.code, forwarded: h.forwarded }).toEqual({ status: 403, code: "POLICY_DENIED", forwarded: 0 });
  });

  test("allow over agent, token scopes and provider, ahead of a deny; a large body no matching rule reads is never read (no 413)", async () => {
    const r = await send("POST", "/v1/echo", JSON.stringify({ pad: "x".repeat(2000) }));
    expect({ status: r.status, forwarded: r.forwarded }).toEqual({ status: 200, forwarded: 1 });
    // the same allow over a scope the token lacks does not hold: the deny after it decides
    const lacking = await send("POST", "/v1/echo/admin", "{}");
    expect({ status: lacking.status, code: lacking.code, reason: lacking.doc.details?.reason, forwarded: lacking.forwarded }).toEqual({
      status: 403,
      code: "POLICY_DENIED",
      reason: "echo only where an allow holds",
      forwarded: 0,
    });
  });

  test("an evaluation error fails closed: a deny holds; an allow does not (the next rule decides)", async () => {
    // a missing field is an error, not false: without has(), the approve rule would hold for every mail
    expect((await send("POST", "/v1/messages", JSON.stringify({ to: "boss@example.com" }))).code).not.toBe("APPROVAL_REQUIRED");
    const notJson = await send("PUT", "/v1/anything", "not json");
    expect({ status: notJson.status, code: notJson.code, forwarded: notJson.forwarded }).toEqual({ status: 403, code: "POLICY_DENIED", forwarded: 0 });
    expect(notJson.doc.details?.evaluation_error).toBeString();
    expect((await send("PUT", "/v1/anything", JSON.stringify({ x: 2 }))).forwarded).toBe(1);
    const patchBad = await send("PATCH", "/v1/things", "not json");
    expect({ status: patchBad.status, reason: patchBad.doc.details?.reason, forwarded: patchBad.forwarded }).toEqual({ status: 403, reason: "things change only when ok", forwarded: 0 });
    expect((await send("PATCH", "/v1/things", JSON.stringify({ ok: true }))).forwarded).toBe(1);
  });

  test("a body with a duplicate key cannot pass a condition: the deny holds", async () => {
    const r = await send("POST", "/v1/messages", '{"to":"boss@example.com","to":"x@evil.example"}');
    expect({ status: r.status, code: r.code, forwarded: r.forwarded }).toEqual({ status: 403, code: "POLICY_DENIED", forwarded: 0 });
  });

  test("--max-policy-body: a body a condition reads past the limit is refused 413, nothing forwarded", async () => {
    const r = await send("POST", "/v1/messages", JSON.stringify({ to: "boss@example.com", text: "y".repeat(400) }));
    expect({ status: r.status, code: r.code, forwarded: r.forwarded }).toEqual({ status: 413, code: "PAYLOAD_TOO_LARGE", forwarded: 0 });
  });
});

describe("one body model: a rule reads the body as strict JSON or cannot be evaluated (issue 35, finding 1)", () => {
  /** The docs' own rule over POST /v1/messages, sent in every shape an upstream may read and ath must not skip. */
  async function post(body: string | Uint8Array, headers: Record<string, string>) {
    const before = w.api.requests.length;
    const res = await fetch(`${w.baseUrl}/ath/proxy/cond/v1/messages`, { method: "POST", headers: { authorization: `Bearer ${token}`, ...headers }, body: body as BodyInit });
    const doc = (await res.json().catch(() => ({}))) as { code?: string; details?: Record<string, unknown> };
    return { status: res.status, code: doc.code, error: doc.details?.evaluation_error, forwarded: w.api.requests.length - before };
  }
  const evil = '{"to": "x@evil.example", "amount": 5000}';
  const bytes = (t: string) => new TextEncoder().encode(t);
  const json = { "content-type": "application/json" };

  test("compressed, form, multipart, trailing data, NDJSON, comments, trailing commas, single quotes, UTF-16, a bad byte: the deny holds, nothing forwarded", async () => {
    const cases: [string, string | Uint8Array, Record<string, string>][] = [
      ["gzip", Bun.gzipSync(bytes(evil)), { ...json, "content-encoding": "gzip" }],
      ["deflate", Bun.deflateSync(bytes(evil)), { ...json, "content-encoding": "deflate" }],
      ["br", bytes(evil), { ...json, "content-encoding": "br" }],
      ["form", "to=x%40evil.example&amount=5000", { "content-type": "application/x-www-form-urlencoded" }],
      ["multipart", '--b\r\ncontent-disposition: form-data; name="to"\r\n\r\nx@evil.example\r\n--b--\r\n', { "content-type": "multipart/form-data; boundary=b" }],
      ["trailing data", `{"to": "boss@example.com"} ${evil}`, json],
      ["NDJSON", `{"to": "boss@example.com"}\n${evil}\n`, json],
      ["a comment", '{"to": "x@evil.example" /* hi */}', json],
      ["a trailing comma", '{"to": "x@evil.example",}', json],
      ["single quotes", "{'to': 'x@evil.example'}", json],
      ["UTF-16", new Uint8Array([0xff, 0xfe, ...[...bytes(evil)].flatMap((b) => [b, 0])]), { "content-type": "application/json; charset=utf-16" }],
      ["an invalid UTF-8 byte", new Uint8Array([...bytes('{"to": "x@evil.example", "n": "'), 0xc3, 0x28, 0x22, 0x7d]), json],
      ["a duplicate key", '{"to": "boss@example.com", "to": "x@evil.example"}', json],
      ["no content type", evil, {}],
    ];
    for (const [name, body, headers] of cases) {
      const r = await post(body, headers);
      expect({ name, status: r.status, code: r.code, forwarded: r.forwarded, named: typeof r.error === "string" }).toEqual({ name, status: 403, code: "POLICY_DENIED", forwarded: 0, named: true });
    }
  });

  test("the docs' `amount > 1000 → approve` example holds for a gzipped body too (never forwarded unapproved)", async () => {
    const r = await post(Bun.gzipSync(bytes('{"to": "boss@example.com", "amount": 5000}')), { ...json, "content-encoding": "gzip" });
    expect({ status: r.status, forwarded: r.forwarded }).toEqual({ status: 403, forwarded: 0 });
    expect(["POLICY_DENIED", "APPROVAL_REQUIRED"]).toContain(r.code!);
  });

  test("a plain JSON body without the field still passes: unreadable means unreadable, not every body", async () => {
    const r = await post('{"to": "boss@example.com"}', json);
    expect({ status: r.status < 300, forwarded: r.forwarded }).toEqual({ status: true, forwarded: 1 });
  });
});

describe("one header model (issue 35, finding 11)", () => {
  test("`x_mode` is read as `x-mode`; both spellings in one request are refused; repeated lines reach rule and upstream as one value", async () => {
    const under = await send("POST", "/v1/echo", "{}", { x_mode: "danger" });
    expect({ status: under.status, code: under.code, forwarded: under.forwarded }).toEqual({ status: 403, code: "POLICY_DENIED", forwarded: 0 });
    const both = await send("POST", "/v1/echo", "{}", { "x-mode": "safe", x_mode: "danger" });
    expect({ status: both.status, code: both.code, reason: both.doc.details?.reason, forwarded: both.forwarded }).toEqual({ status: 400, code: "INVALID_REQUEST", reason: "ambiguous_header", forwarded: 0 });
    // two X-Mode lines: the rule sees "safe, danger" (no match for == "danger") and so does the upstream, as one line
    const before = w.api.requests.length;
    const raw = await rawRequest(w.gw.port, "POST", "/ath/proxy/cond/v1/echo", { authorization: `Bearer ${token}`, "content-type": "application/json", "X-Mode": "safe", "x-mode": "danger" }, "{}");
    expect(raw.status).toBe(200);
    expect(w.api.requests.slice(before).map((r) => r.headers["x-mode"])).toEqual(["safe, danger"]);
  });
});

describe("compiled at configuration", () => {
  test("a `when` that does not compile fails the start, naming the rule", async () => {
    for (const [when, says] of [["request.body.to ==", "Unexpected"], ["nobody.id == 1", "nobody"]] as const) {
      const dir = await tempDir("policy-bad-when");
      try {
        const file = join(dir.path, "providers.json");
        const provider = { display_name: "Bad", available_scopes: ["a"], authorize_endpoint: "http://127.0.0.1:9/a", token_endpoint: "http://127.0.0.1:9/t", api_base_url: "http://127.0.0.1:9", client_id: "c", client_secret: "s" };
        await Bun.write(file, JSON.stringify({ bad: { ...provider, policy: [{ match: ["GET /x"], action: "allow" }, { match: ["GET /x"], when, action: "deny" }] } }));
        const p = Bun.spawn([ensureBinary(), "serve", "--port", "0", "--providers", file, "--data-dir", join(dir.path, "data"), "--dev"], {
          stdout: "pipe",
          stderr: "pipe",
          env: { ...process.env, ATH_HOME: join(dir.path, "home"), NO_COLOR: "1" },
        });
        const code = await p.exited;
        const err = await new Response(p.stderr).text();
        expect(code).not.toBe(0);
        expect(err).toContain("providers.bad.policy.1.when");
        expect(err).toContain(says);
      } finally {
        await dir.remove();
      }
    }
  });

  test("the admin API refuses a `when` that does not compile (400 naming the rule); a valid agent policy applies to that agent", async () => {
    const admin = { "x-ath-user-token": w.gw.adminToken, "content-type": "application/json" };
    const url = `${w.baseUrl}/ath/admin/agents/${clientId}`;
    const bad = await fetch(url, { method: "PATCH", headers: admin, body: JSON.stringify({ policy: [{ match: ["GET /v1/**"], when: "request.method == ", action: "deny" }] }) });
    expect(bad.status).toBe(400);
    const doc = (await bad.json()) as { code: string; details: { field: string } };
    expect(doc.code).toBe("INVALID_REQUEST");
    expect(doc.details.field).toBe("policy.0.when");
    const good = await fetch(url, {
      method: "PATCH",
      headers: admin,
      body: JSON.stringify({ policy: [{ match: ["GET /v1/messages/*"], when: 'request.segments[2] == "7"', action: "deny", reason: "not message 7" }] }),
    });
    expect(good.status).toBe(200);
    expect(((await good.json()) as { policy: unknown[] }).policy).toHaveLength(1);
    const r = await send("GET", "/v1/messages/7");
    expect({ status: r.status, code: r.code, reason: r.doc.details?.reason, rule: r.doc.details?.rule }).toEqual({ status: 403, code: "POLICY_DENIED", reason: "not message 7", rule: { from: "agent", index: 0 } });
    expect((await send("GET", "/v1/messages/8")).forwarded).toBe(1);
    expect((await fetch(url, { method: "PATCH", headers: admin, body: JSON.stringify({ policy: [] }) })).status).toBe(200);
    expect((await send("GET", "/v1/messages/7")).forwarded).toBe(1);
  });
});
