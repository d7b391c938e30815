/** The CLI's gateway-mode flow (spec §1.1 order) in process against a fake gateway: what is sent, saved and printed. */
import { describe, expect, test } from "bun:test";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { BINARY_BODY, GW, codeFor, fakeGateway, runAth, tempHome, type FakeGateway, cliFixture } from "../../helpers/cli-harness.ts";

const fx = cliFixture();
const ath = fx.ath;
const creds = async () => JSON.parse(await readFile(join(fx.home.dir, "credentials.json"), "utf8"));
/** The ath_session_ids of the pending sessions saved for the one registered agent, oldest first. */
const pendingIds = async () => Object.keys((Object.values((await creds()).gateways[GW].agents)[0] as { pending: object }).pending);

async function registered(): Promise<void> {
  const r = await ath(["register", "-g", GW, "--provider", "github", "--scopes", "repo,read:user"]);
  expect(r.code).toBe(0);
}

async function authorized(): Promise<string> {
  await registered();
  const a = await ath(["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"]);
  expect(a.code).toBe(0);
  const session = JSON.parse(a.stdout).ath_session_id as string;
  const t = await ath(["token", "-g", GW, "--code", codeFor(session)]);
  expect(t.code).toBe(0);
  return session;
}

describe("register (Phase A)", () => {
  test("one registration asks for several providers, adds the loopback redirect URI and saves the credentials 0600", async () => {
    const r = await ath(["register", "-g", GW, "--provider", "github", "--provider", "gitlab", "--purpose", "triage", "--format", "json"]);
    expect(r.code).toBe(0);
    const sent = fx.gw.requests.find((q) => q.path === "/ath/agents/register")!;
    expect(sent.body.requested_providers).toEqual([
      { provider_id: "github", scopes: ["repo", "read:user"] },
      { provider_id: "gitlab", scopes: ["api"] },
    ]);
    expect(sent.body.redirect_uris).toEqual(["http://127.0.0.1/callback"]);
    expect(sent.body.purpose).toBe("triage");
    expect((sent.body.developer as { name: string }).name).toBe("local");
    const doc = JSON.parse(r.stdout);
    expect(doc.client_secret).toBe("ath_secret_s3cr…");
    const saved = await creds();
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
    await registered();
    const again = await ath(["register", "-g", GW, "--provider", "github", "--scopes", "repo"]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain("already registered");
    // exit 0, but the agent must not believe the scopes it asked for now were granted
    expect(again.stderr).toContain("requested scopes were not changed — register with a new agent identity");
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
});

describe("authorize and token (Phase B)", () => {
  test("authorize without --wait prints the URL and session and saves the pending session; token defaults --session to it", async () => {
    await registered();
    const a = await ath(["authorize", "-g", GW, "--provider", "github", "--scopes", "repo", "--no-wait", "--format", "json"]);
    expect(a.code).toBe(0);
    const res = JSON.parse(a.stdout);
    expect(res.ath_session_id).toMatch(/^ath_sess_/);
    const sent = fx.gw.requests.find((q) => q.path === "/ath/authorize")!;
    expect(String(sent.body.state)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sent.body.user_redirect_uri).toBeUndefined();
    const pending = (Object.values((await creds()).gateways[GW].agents)[0] as { pending: Record<string, unknown> }).pending;
    expect(Object.keys(pending)).toEqual([res.ath_session_id]);

    const t = await ath(["token", "-g", GW, "--code", codeFor(res.ath_session_id), "--format", "json"]);
    expect(t.code).toBe(0);
    const exchange = fx.gw.requests.find((q) => q.path === "/ath/token")!;
    expect(exchange.contentType).toBe("application/x-www-form-urlencoded");
    expect(exchange.body.grant_type).toBe("authorization_code");
    expect(exchange.body.ath_session_id).toBe(res.ath_session_id);
    const tok = JSON.parse(t.stdout);
    expect(tok.access_token).toBe("ath_tk_toke…");
    expect(tok.effective_scopes).toEqual(["repo"]);
    const agent = Object.values((await creds()).gateways[GW].agents)[0] as { pending: object; tokens: Record<string, { access_token: string }> };
    expect(agent.pending).toEqual({});
    expect(agent.tokens.github!.access_token).toMatch(/^ath_tk_tokenvalue/);
  });

  test("authorize --wait receives the loopback redirect, checks state, exchanges the code and saves the token", async () => {
    await registered();
    let opened = "";
    let browserSaw = 0;
    const r = await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--wait", "--format", "json"], {
      fetch: fx.gw.fetch,
      openUrl: async (url) => {
        opened = url;
        const sent = fx.gw.requests.find((q) => q.path === "/ath/authorize")!;
        const redirect = String(sent.body.user_redirect_uri);
        expect(redirect).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
        const session = "ath_sess_2";
        // A response with a foreign state is refused and the CLI keeps waiting.
        const wrong = await fetch(`${redirect}?code=x&state=${"a".repeat(43)}&ath_session_id=${session}`);
        expect(wrong.status).toBe(400);
        const ok = await fetch(`${redirect}?code=${codeFor(session)}&state=${sent.body.state}&ath_session_id=${session}`);
        browserSaw = ok.status;
        expect(await ok.text()).toContain("You can close this tab");
      },
    });
    expect(r.code).toBe(0);
    expect(opened).toContain("/ath/consent/");
    expect(browserSaw).toBe(200);
    expect(JSON.parse(r.stdout).scope_intersection.effective).toEqual(["repo", "read:user"]);
    expect(r.stderr).toContain(opened);
  });

  test("authorize --wait: the user denying exits 4 USER_DENIED and saves no token", async () => {
    await registered();
    const r = await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--wait", "--format", "json"], {
      fetch: fx.gw.fetch,
      openUrl: async () => {
        const sent = fx.gw.requests.find((q) => q.path === "/ath/authorize")!;
        await fetch(`${sent.body.user_redirect_uri}?error=access_denied&state=${sent.body.state}`);
      },
    });
    expect(r.code).toBe(4);
    expect(JSON.parse(r.stdout).error.code).toBe("USER_DENIED");
    expect(fx.gw.requests.some((q) => q.path === "/ath/token")).toBe(false);
    expect(await pendingIds()).toEqual([]); // nothing `ath token` could still exchange
  });

  test("authorize --wait: a failed exchange and a timeout leave no pending session behind", async () => {
    await registered();
    const r = await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--wait", "--format", "json"], {
      fetch: fx.gw.fetch,
      openUrl: async () => {
        const sent = fx.gw.requests.find((q) => q.path === "/ath/authorize")!;
        fx.gw.tokenError = { status: 403, code: "SCOPE_NOT_APPROVED", message: "A requested scope is not approved" };
        await fetch(`${sent.body.user_redirect_uri}?code=ath_code_x&state=${sent.body.state}`);
      },
    });
    expect(r.code).toBe(4);
    expect(await pendingIds()).toEqual([]);
    const timedOut = await ath(["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", "1", "--format", "json"]);
    expect(timedOut.code).toBe(1);
    expect(JSON.parse(timedOut.stdout).error.code).toBe("AUTHORIZATION_TIMEOUT");
    expect(await pendingIds()).toEqual([]);
  });

  test("pending sessions older than the gateway's 600 s session lifetime are pruned whenever credentials.json is written", async () => {
    await registered();
    const t0 = Date.now();
    const at = (ms: number) => ({ fetch: fx.gw.fetch, now: () => ms });
    const first = JSON.parse((await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"], at(t0))).stdout);
    const second = JSON.parse((await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"], at(t0 + 599_000))).stdout);
    expect(await pendingIds()).toEqual([first.ath_session_id, second.ath_session_id]);
    const third = JSON.parse((await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"], at(t0 + 600_000))).stdout);
    expect(await pendingIds()).toEqual([second.ath_session_id, third.ath_session_id]);
  });

  test("token without --session takes the only unexpired pending session; none → exit 3 NO_PENDING_SESSION, nothing sent", async () => {
    await registered();
    const t0 = Date.now();
    const a = await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"], { fetch: fx.gw.fetch, now: () => t0 });
    const session = JSON.parse(a.stdout).ath_session_id as string;
    const late = await runAth(fx.home.dir, ["token", "-g", GW, "--code", codeFor(session), "--format", "json"], { fetch: fx.gw.fetch, now: () => t0 + 600_000 });
    expect(late.code).toBe(3);
    const { error } = JSON.parse(late.stdout);
    expect(error.code).toBe("NO_PENDING_SESSION");
    expect(error.message).toContain("pass --session");
    expect(error.message).toContain(`run \`ath authorize -g ${GW} --provider <id>\` again`);
    expect(fx.gw.requests.some((q) => q.path === "/ath/token")).toBe(false);
    const inTime = await runAth(fx.home.dir, ["token", "-g", GW, "--code", codeFor(session)], { fetch: fx.gw.fetch, now: () => t0 + 599_000 });
    expect(inTime.code).toBe(0);
    expect(await pendingIds()).toEqual([]); // exchanged: forgotten
  });

  test("token: a dead session (SESSION_EXPIRED) is forgotten; a wrong code keeps the session for another try", async () => {
    await registered();
    const a = JSON.parse((await ath(["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"])).stdout);
    expect((await ath(["token", "-g", GW, "--code", "ath_code_wrong"])).code).toBe(4);
    expect(await pendingIds()).toEqual([a.ath_session_id]);
    fx.gw.tokenError = { status: 400, code: "SESSION_EXPIRED", message: "The authorization session has expired" };
    expect((await ath(["token", "-g", GW, "--code", codeFor(a.ath_session_id)])).code).toBe(4);
    expect(await pendingIds()).toEqual([]);
  });

  test("a refused token exchange exits 4 with the gateway's code and an ofetch-style message", async () => {
    await registered();
    await ath(["authorize", "-g", GW, "--provider", "github", "--no-wait"]);
    fx.gw.tokenError = { status: 401, code: "INVALID_CLIENT", message: "Client authentication failed" };
    const r = await ath(["token", "-g", GW, "--code", "whatever"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toBe(`ath: [POST] "${GW}/ath/token": 401 INVALID_CLIENT — Client authentication failed\n`);
  });

  test("authorize before register exits 3 and names `ath register`", async () => {
    const r = await ath(["authorize", "-g", GW, "--provider", "github", "--no-wait"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("ath register");
    expect(fx.gw.requests).toHaveLength(0);
  });
});

describe("proxy and revoke", () => {
  test("proxy sends the saved bearer token, the JSON body and extra headers; json mode wraps status, headers and parsed body", async () => {
    await authorized();
    const r = await ath(["proxy", "-g", GW, "github", "post", "/v1/items?x=1", "--body", '{"a":1}', "-H", "X-Trace: 7", "--format", "json"]);
    expect(r.code).toBe(0);
    const seen = fx.gw.proxied[0]!;
    expect(seen.path).toBe("/ath/proxy/github/v1/items?x=1");
    expect(seen.headers.get("authorization")).toMatch(/^Bearer ath_tk_/);
    expect(seen.headers.get("x-trace")).toBe("7");
    expect(seen.headers.get("content-type")).toBe("application/json");
    const doc = JSON.parse(r.stdout);
    expect(doc.status).toBe(200);
    expect(doc.body).toEqual({ ok: true, method: "POST", path: "/ath/proxy/github/v1/items", query: "?x=1", body: { a: 1 } });
  });

  test("an upstream answer ≥ 400: body on stdout, `ath: HTTP 404` on stderr, exit 1", async () => {
    await authorized();
    const r = await ath(["proxy", "-g", GW, "github", "GET", "/missing"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ message: "Not Found" });
    expect(r.stderr).toBe("ath: HTTP 404\n");
    const j = await ath(["proxy", "-g", GW, "github", "GET", "/missing", "--format", "json"]);
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stdout).status).toBe(404); // exactly one JSON document
  });

  test("revoke calls /ath/revoke with the client credentials and forgets the token; proxy then exits 3", async () => {
    await authorized();
    const r = await ath(["revoke", "-g", GW, "--provider", "github"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(""); // a successful change prints nothing when piped
    const call = fx.gw.requests.find((q) => q.path === "/ath/revoke")!;
    expect(call.contentType).toBe("application/x-www-form-urlencoded");
    expect(String(call.body.token)).toMatch(/^ath_tk_/);
    expect(String(call.body.client_secret)).toMatch(/^ath_secret_/);
    const p = await ath(["proxy", "-g", GW, "github", "GET", "/v1/items", "--format", "json"]);
    expect(p.code).toBe(3);
    expect(JSON.parse(p.stdout).error.code).toBe("NO_TOKEN");
    expect(fx.gw.proxied).toHaveLength(0);
  });

  test("a token the gateway refuses at the proxy exits 4 with its code and names `ath authorize`", async () => {
    await authorized();
    const saved = Object.values((await creds()).gateways[GW].agents)[0] as { tokens: { github: { access_token: string } } };
    await fx.gw.fetch(`${GW}/ath/revoke`, { method: "POST", body: new URLSearchParams({ token: saved.tokens.github.access_token }) });
    const r = await ath(["proxy", "-g", GW, "github", "GET", "/v1/items", "--format", "json"]);
    expect(r.code).toBe(4);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 401, body: { code: "TOKEN_INVALID" } }); // one document: the relayed answer
    const text = await ath(["proxy", "-g", GW, "github", "GET", "/v1/items"]);
    expect(text.code).toBe(4);
    expect(text.stderr).toContain("401 TOKEN_INVALID");
    expect(text.stderr).toContain("ath authorize");
  });

  test("text mode writes the upstream body's bytes unchanged: binary-safe, no newline added", async () => {
    await authorized();
    const bin = await ath(["proxy", "-g", GW, "github", "GET", "/binary"]);
    expect(bin.code).toBe(0);
    expect(bin.stdoutBytes).toEqual(BINARY_BODY);
    const plain = await ath(["proxy", "-g", GW, "github", "GET", "/plain"]);
    expect(plain.stdoutBytes).toEqual(new TextEncoder().encode("no newline at the end"));
  });

  test("json mode: a non-UTF-8 body is base64 with body_encoding \"base64\"; text stays a string, JSON is parsed", async () => {
    await authorized();
    const bin = JSON.parse((await ath(["proxy", "-g", GW, "github", "GET", "/binary", "--format", "json"])).stdout);
    expect(bin).toMatchObject({ status: 200, body_encoding: "base64" });
    expect(new Uint8Array(Buffer.from(bin.body, "base64"))).toEqual(BINARY_BODY);
    const plain = JSON.parse((await ath(["proxy", "-g", GW, "github", "GET", "/plain", "--format", "json"])).stdout);
    expect(plain).toMatchObject({ status: 200, body: "no newline at the end" });
    expect(plain.body_encoding).toBeUndefined();
  });

  test("an upstream ≥ 400 whose body looks like an ATH error exits 1 UPSTREAM_ERROR: only X-ATH-Error means the gateway refused", async () => {
    await authorized();
    const r = await ath(["proxy", "-g", GW, "github", "GET", "/lookalike"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ code: "TOKEN_REVOKED", message: "upstream: your upstream token was revoked" });
    expect(r.stderr).toBe("ath: HTTP 401\n");
    const j = await ath(["proxy", "-g", GW, "github", "GET", "/lookalike", "--format", "json"]);
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stdout)).toMatchObject({ status: 401, body: { code: "TOKEN_REVOKED" } });
  });

  test("an expired saved token exits 3 before any request", async () => {
    await authorized();
    const later = Date.now() + 2 * 3600_000;
    const r = await runAth(fx.home.dir, ["proxy", "-g", GW, "github", "GET", "/v1/items"], { fetch: fx.gw.fetch, now: () => later });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("expired");
    expect(r.stderr).toContain("ath authorize");
    expect(fx.gw.proxied).toHaveLength(0);
  });
});

describe("status", () => {
  for (const tty of [false, true]) {
    test(`status never shows secrets unless --show-secrets (tty=${tty})`, async () => {
      await authorized();
      for (const format of ["text", "json"]) {
        const r = await ath(["status", "--format", format], tty);
        expect(r.code).toBe(0);
        expect(r.stdout).not.toMatch(/s3cr3tvalue|tokenvalue/);
        expect(r.stdout).toContain("ath_secret_s3cr…");
        const shown = await ath(["status", "--format", format, "--show-secrets"], tty);
        expect(shown.stdout).toMatch(/ath_secret_s3cr3tvalue\d/);
        expect(shown.stdout).toMatch(/ath_tk_tokenvalue\d/);
      }
    });
  }

  test("piped status is plain, tab-separated, with ISO times; a TTY gets colour and relative times", async () => {
    await authorized();
    const piped = await ath(["status"]);
    expect(piped.stdout).not.toContain("\u001b[");
    expect(piped.stdout).toMatch(/^token\tgithub\tath_tk_toke…\trepo,read:user\t\d{4}-\d\d-\d\dT[\d:.]+Z\tin \d+m$/m);
    const tty = await ath(["status"], true);
    expect(tty.stdout).toContain("\u001b[");
    expect(tty.stdout).toContain("(in ");
  });
});

describe("native mode (--mode native --service <url>)", () => {
  test("discovers ath-app.json, defaults the provider to its app_id and calls api_base directly", async () => {
    const native = ["--mode", "native", "--service", GW];
    const reg = await ath(["register", ...native]);
    expect(reg.code).toBe(0);
    expect(fx.gw.requests.find((q) => q.path === "/ath/agents/register")!.body.requested_providers).toEqual([{ provider_id: "notes", scopes: ["notes:read", "notes:write"] }]);
    const a = await ath(["authorize", ...native, "--no-wait", "--format", "json"]);
    expect(a.code).toBe(0);
    expect(fx.gw.requests.find((q) => q.path === "/ath/authorize")!.body.provider_id).toBe("notes");
    const t = await ath(["token", ...native, "--code", codeFor(JSON.parse(a.stdout).ath_session_id)]);
    expect(t.code).toBe(0);
    const p = await ath(["proxy", ...native, "GET", "/notes?limit=1", "--format", "json"]);
    expect(p.code).toBe(0);
    expect(fx.gw.proxied[0]!.path).toBe("/api/notes?limit=1");
    expect(fx.gw.proxied[0]!.headers.get("authorization")).toMatch(/^Bearer ath_tk_/);
    expect(fx.gw.requests.some((q) => q.path.startsWith("/ath/proxy/"))).toBe(false);
  });

  test("proxy: the service refusing the token (an ATH error body, no X-ATH-Error) exits 4; its API's other errors exit 1", async () => {
    const native = ["--mode", "native", "--service", GW];
    expect((await ath(["register", ...native])).code).toBe(0);
    const a = await ath(["authorize", ...native, "--no-wait", "--format", "json"]);
    expect((await ath(["token", ...native, "--code", codeFor(JSON.parse(a.stdout).ath_session_id)])).code).toBe(0);
    const missing = await ath(["proxy", ...native, "GET", "/missing"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("ath: HTTP 404\n");
    const saved = Object.values((await creds()).gateways[GW].agents)[0] as { tokens: { notes: { access_token: string } } };
    await fx.gw.fetch(`${GW}/ath/revoke`, { method: "POST", body: new URLSearchParams({ token: saved.tokens.notes.access_token }) });
    const refused = await ath(["proxy", ...native, "GET", "/notes"]);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain("401 TOKEN_INVALID");
  });
});
