/**
 * The compiled `ath` CLI against a real `ath serve`, a real OAuth 2.0 authorization server (oidc-provider) and a
 * sample API: the spec's flow order in gateway mode (§1.1) in text and json, both consent paths (`authorize --wait`
 * with the test following the redirects as the browser would, and `authorize` + `token --code`), proxy GET and
 * POST, revoke, status masking, file modes and the exit codes of DESIGN.md §5.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { consent } from "../helpers/agent.ts";
import { tempDir } from "../helpers/net.ts";
import { startWorld, type World } from "../helpers/world.ts";
import { ath, ATH_BIN, athEnv, ensureBinary, modes, readUntil, spawnAth } from "../helpers/cli-binary.ts";

let w: World;
let home: { path: string; remove: () => Promise<void> };
let gw: string;

beforeAll(async () => {
  ensureBinary();
  w = await startWorld();
  gw = w.baseUrl;
  home = await tempDir("cli");
}, 120_000);
afterAll(async () => {
  await home?.remove();
  await w?.stop();
});

describe("gateway mode, in the spec's order (manual consent path)", () => {
  let sessionId = "";

  test("discover lists the gateway's providers (text: one tab-separated row each; json: the document)", async () => {
    const text = await ath(home.path, ["discover", "-g", gw]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("mail\tSample Mail\topenid,offline_access,mail:read,mail:send\n");
    const json = await ath(home.path, ["discover", "-g", gw, "--format", "json"]);
    expect(json.json().supported_providers.map((p: { provider_id: string }) => p.provider_id)).toContain("mail");
  });

  test("config set-gateway saves the gateway as the default; later commands need no -g", async () => {
    const r = await ath(home.path, ["config", "set-gateway", "local", gw]);
    expect(r).toMatchObject({ code: 0, stdout: "" });
    expect((await ath(home.path, ["config", "show", "--format", "json"])).json()).toMatchObject({ default_gateway: "local", gateways: { local: gw } });
  });

  test("register asks for several providers at once and saves the credentials", async () => {
    const r = await ath(home.path, ["register", "--request", "mail:openid,mail:read,mail:send", "--request", "calendar:calendar:read", "--purpose", "e2e", "--format", "json"]);
    expect(r.code).toBe(0);
    const doc = r.json();
    expect(doc.agent_status).toBe("approved");
    expect(doc.client_id).toMatch(/^ath_/);
    expect(doc.client_secret).toMatch(/^ath_secret_.{4}…$/);
    expect(doc.approved_providers).toContainEqual({ provider_id: "mail", approved_scopes: ["openid", "mail:read", "mail:send"], denied_scopes: [] });
    expect(doc.agent_id).toMatch(/^did:key:z/);
  });

  test("registering again with saved credentials is not an error", async () => {
    const r = await ath(home.path, ["register", "--provider", "mail", "--scopes", "openid"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("already registered");
  });

  test("authorize without --wait prints authorization_url and ath_session_id", async () => {
    const text = await ath(home.path, ["authorize", "--provider", "mail", "--scopes", "openid,mail:read,mail:send"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^authorization_url\thttp:\/\/127\.0\.0\.1:\d+\/ath\/consent\/\S+\nath_session_id\tath_sess_\S+\n$/);
    const json = await ath(home.path, ["authorize", "--provider", "mail", "--scopes", "openid,mail:read,mail:send", "--format", "json"]);
    expect(json.code).toBe(0);
    const res = json.json();
    sessionId = res.ath_session_id;
    const c = await consent(res.authorization_url);
    expect(c.code).toMatch(/^ath_code_/);
    expect(c.sessionId).toBe(sessionId);
    // Two sessions are pending (the text and the json one): token does not guess which one the code belongs to.
    const ambiguous = await ath(home.path, ["token", "--code", c.code as string, "--format", "json"]);
    expect(ambiguous.code).toBe(3);
    expect(ambiguous.json().error.code).toBe("AMBIGUOUS_SESSION");
    const t = await ath(home.path, ["token", "--code", c.code as string, "--session", sessionId, "--format", "json"]);
    expect(t.code).toBe(0);
    const tok = t.json();
    expect(tok.provider_id).toBe("mail");
    expect(tok.access_token).toMatch(/^ath_tk_.{4}…$/);
    expect(tok.effective_scopes).toEqual(["openid", "mail:read", "mail:send"]);
    expect(tok.scope_intersection.effective).toEqual(["openid", "mail:read", "mail:send"]);
  });

  test("a code can be exchanged only once: the second `token` is refused with exit 4", async () => {
    const r = await ath(home.path, ["token", "--code", "ath_code_x", "--session", sessionId, "--format", "json"]);
    expect(r.code).toBe(4);
    expect(r.json().error).toMatchObject({ code: "SESSION_NOT_FOUND", status: 400 });
  });

  test("proxy GET prints the upstream body; json wraps status, headers and the parsed body", async () => {
    const text = await ath(home.path, ["proxy", "mail", "GET", "/v1/messages?limit=2"]);
    expect(text.code).toBe(0);
    // the body's bytes exactly as the upstream sent them (Response.json: no trailing newline)
    expect(text.stdout).toBe(JSON.stringify({ messages: [{ id: "m1", subject: "hello" }], query: "?limit=2" }));
    const json = await ath(home.path, ["proxy", "mail", "GET", "/v1/messages", "--format", "json"]);
    const doc = json.json();
    expect(doc.status).toBe(200);
    expect(doc.headers["x-upstream"]).toBe("sample-api");
    expect(doc.body.messages).toHaveLength(1);
  });

  test("proxy with a mistyped method (GTE) exits 2 with \"did you mean GET\" and sends nothing (Bun's fetch would have sent a GET)", async () => {
    const before = w.api.requests.length;
    const r = await ath(home.path, ["proxy", "mail", "GTE", "/v1/messages"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown HTTP method "GTE" (did you mean "GET"?)');
    const propfind = await ath(home.path, ["proxy", "mail", "frobnicate", "/v1/messages", "--format", "json"]);
    expect(propfind.code).toBe(2);
    expect(propfind.json().error.message).toContain("the proxy forwards GET, HEAD, POST");
    expect(w.api.requests.length).toBe(before);
  });

  test("proxy POST sends the --body as JSON to the upstream", async () => {
    w.api.clear();
    const r = await ath(home.path, ["proxy", "mail", "POST", "/v1/messages", "--body", '{"to":"a@example.com","subject":"hi"}', "--format", "json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ status: 201, body: { received: { to: "a@example.com", subject: "hi" } } });
    const seen = w.api.accepted()[0]!;
    expect(seen.headers["content-type"]).toBe("application/json");
    expect(seen.headers.authorization).not.toContain("ath_tk_");
  });

  test("proxy POST --body - sends stdin as the body", async () => {
    w.api.clear();
    const p = Bun.spawn([ATH_BIN, "proxy", "mail", "POST", "/v1/messages", "--body", "-", "--format", "json"], { env: athEnv(home.path), stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    p.stdin.write('{"to":"b@example.com","subject":"piped"}');
    await p.stdin.end();
    const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ status: 201, body: { received: { to: "b@example.com", subject: "piped" } } });
  });

  test("an upstream answer ≥ 400 exits 1 with the body on stdout and `ath: HTTP <status>` on stderr", async () => {
    const r = await ath(home.path, ["proxy", "calendar", "GET", "/events"]);
    expect(r.code).toBe(3); // no calendar token yet: exit 3 names `ath authorize`
    expect(r.stderr).toContain("ath authorize");
    const missing = await ath(home.path, ["proxy", "mail", "GET", "/v1/nowhere"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("ath: HTTP 404\n");
  });

  test("status shows registrations and tokens with time left, never a secret unless --show-secrets", async () => {
    const creds = JSON.parse(await Bun.file(`${home.path}/credentials.json`).text());
    const agent = Object.values(creds.gateways[gw].agents)[0] as { client_secret: string; tokens: { mail: { access_token: string } } };
    for (const format of ["text", "json"]) {
      const r = await ath(home.path, ["status", "--format", format]);
      expect(r.code).toBe(0);
      expect(r.stdout).not.toContain(agent.client_secret);
      expect(r.stdout).not.toContain(agent.tokens.mail.access_token);
      const shown = await ath(home.path, ["status", "--format", format, "--show-secrets"]);
      expect(shown.stdout).toContain(agent.client_secret);
      expect(shown.stdout).toContain(agent.tokens.mail.access_token);
    }
    const doc = (await ath(home.path, ["status", "--format", "json"])).json();
    const token = doc.registrations[0].tokens[0];
    expect(token).toMatchObject({ provider_id: "mail", expired: false });
    expect(token.seconds_left).toBeGreaterThan(3000);
  });

  test("a saved token the gateway refuses at the proxy exits 4 with the code of its X-ATH-Error and names `ath authorize`", async () => {
    const creds = JSON.parse(await Bun.file(`${home.path}/credentials.json`).text());
    const agent = Object.values(creds.gateways[gw].agents)[0] as { client_id: string; client_secret: string; tokens: { mail: { access_token: string } } };
    // Revoked at the gateway behind the CLI's back: the token stays saved.
    const revoked = await fetch(`${gw}/ath/revoke`, {
      method: "POST",
      body: new URLSearchParams({ token: agent.tokens.mail.access_token, client_id: agent.client_id, client_secret: agent.client_secret }),
    });
    expect(revoked.status).toBe(200);
    const json = await ath(home.path, ["proxy", "mail", "GET", "/v1/messages", "--format", "json"]);
    expect(json.code).toBe(4);
    expect(json.json()).toMatchObject({ status: 401, headers: { "x-ath-error": "TOKEN_REVOKED" }, body: { code: "TOKEN_REVOKED" } });
    const text = await ath(home.path, ["proxy", "mail", "GET", "/v1/messages"]);
    expect(text.code).toBe(4);
    expect(text.stderr).toContain("401 TOKEN_REVOKED");
    expect(text.stderr).toContain("ath authorize");
  });

  test("revoke forgets the token and the gateway refuses it; proxy then exits 3", async () => {
    const creds = JSON.parse(await Bun.file(`${home.path}/credentials.json`).text());
    const token = (Object.values(creds.gateways[gw].agents)[0] as { tokens: { mail: { access_token: string } } }).tokens.mail.access_token;
    const r = await ath(home.path, ["revoke", "--provider", "mail", "--format", "json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ gateway: gw, revoked: ["mail"] });
    const direct = await fetch(`${gw}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${token}` } });
    expect(((await direct.json()) as { code: string }).code).toBe("TOKEN_REVOKED");
    const p = await ath(home.path, ["proxy", "mail", "GET", "/v1/messages", "--format", "json"]);
    expect(p.code).toBe(3);
    expect(p.json().error.code).toBe("NO_TOKEN");
  });

  test("every file in ATH_HOME is 0600 and every directory 0700", async () => {
    const all = modes(home.path);
    expect(all.map((f) => f.path.slice(home.path.length + 1)).sort()).toEqual(["config.json", "credentials.json", "keys", "keys/agent.pem"]);
    for (const f of all) expect({ path: f.path, mode: f.mode }).toEqual({ path: f.path, mode: f.dir ? 0o700 : 0o600 });
  });
});

describe("authorize --wait (one-step consent through a loopback redirect)", () => {
  async function waitFlow(decision: "Approve" | "Deny") {
    const h = await tempDir("cli-wait");
    try {
      expect((await ath(h.path, ["register", "-g", gw, "--provider", "mail", "--scopes", "openid,mail:read"])).code).toBe(0);
      const p = spawnAth(h.path, ["authorize", "-g", gw, "--provider", "mail", "--wait", "--no-open", "--timeout", "60", "--format", "json"]);
      // json mode: stderr carries the URL and the loopback redirect URI as one JSON line.
      const [line] = await readUntil(p.stderr, /^\{.*\}\n/m);
      const { authorization_url: url, redirect_uri: redirectUri } = JSON.parse(line);
      const c = await consent(url as string, { gateway: decision, redirectUri: redirectUri as string });
      expect(c.redirectedTo?.pathname).toBe("/callback");
      // The browser loads the agent's loopback redirect.
      const landing = await fetch(c.redirectedTo as URL);
      expect(await landing.text()).toContain("You can close this tab");
      const [stdout, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
      return { code, doc: JSON.parse(stdout), home: h.path };
    } finally {
      await h.remove();
    }
  }

  test("the CLI receives the redirect, checks state, exchanges the code and prints the scope intersection", async () => {
    const r = await waitFlow("Approve");
    expect(r.code).toBe(0);
    expect(r.doc.scope_intersection).toEqual({ agent_approved: ["openid", "mail:read"], user_consented: ["openid", "mail:read"], effective: ["openid", "mail:read"] });
  });

  test("the browser opener is $BROWSER when set: it gets the consent URL, and the flow completes through it", async () => {
    const h = await tempDir("cli-browser");
    try {
      const opener = join(h.path, "open-browser");
      await writeFile(opener, `#!/bin/sh\nprintf '%s' "$1" > "${h.path}/opened"\n`, { mode: 0o755 });
      expect((await ath(h.path, ["register", "-g", gw, "--provider", "mail", "--scopes", "openid,mail:read"])).code).toBe(0);
      const p = spawnAth(h.path, ["authorize", "-g", gw, "--provider", "mail", "--wait", "--timeout", "60", "--format", "json"], { BROWSER: `/nonexistent/browser:${opener}` });
      const [line] = await readUntil(p.stderr, /^\{.*\}\n/m);
      const { authorization_url: url, redirect_uri: redirectUri } = JSON.parse(line);
      let opened = "";
      for (let i = 0; i < 100 && opened === ""; i++) opened = await readFile(join(h.path, "opened"), "utf8").catch(() => (Bun.sleepSync(20), ""));
      expect(opened).toBe(url);
      const c = await consent(opened, { gateway: "Approve", redirectUri });
      await fetch(c.redirectedTo as URL);
      expect(await p.exited).toBe(0);
    } finally {
      await h.remove();
    }
  });

  test("over SSH without a display the CLI says it cannot open a browser and shows the URL again with the time left", async () => {
    const h = await tempDir("cli-ssh");
    try {
      expect((await ath(h.path, ["register", "-g", gw, "--provider", "mail", "--scopes", "openid,mail:read"])).code).toBe(0);
      const p = spawnAth(h.path, ["authorize", "-g", gw, "--provider", "mail", "--wait", "--timeout", "60"], { SSH_CONNECTION: "192.0.2.1 50000 192.0.2.2 22" });
      const [said] = await readUntil(p.stderr, /could not open a browser \(this is an SSH session without a display\)\. Open this URL yourself, within [01]:\d\d:\n\n {2}http\S+/);
      expect(said).toContain(`${gw}/ath/consent/`);
      p.kill("SIGINT");
      expect(await p.exited).toBe(130);
    } finally {
      await h.remove();
    }
  });

  test("the user denying at the consent page exits 4 with USER_DENIED", async () => {
    const r = await waitFlow("Deny");
    expect(r.code).toBe(4);
    expect(r.doc.error.code).toBe("USER_DENIED");
  });
});

describe("exit codes of the compiled binary", () => {
  test("usage errors exit 2; gateway down exits 5 naming the URL; not registered exits 3", async () => {
    const h = await tempDir("cli-exit");
    try {
      for (const argv of [["status", "--nope"], ["proxy"], ["discover", "--format", "yaml"], ["bogus"]]) {
        const r = await ath(h.path, argv);
        expect({ argv, code: r.code }).toEqual({ argv, code: 2 });
        expect(r.stderr).toStartWith("ath: ");
      }
      const stopped = await startWorld();
      const closed = stopped.baseUrl;
      await stopped.stop();
      const r = await ath(h.path, ["discover", "-g", closed, "--format", "json"]);
      expect(r.code).toBe(5);
      expect(r.json().error.message).toContain(`"${closed}/.well-known/ath.json": connection refused`);
      const nr = await ath(h.path, ["authorize", "-g", gw, "--provider", "mail", "--no-wait", "--format", "json"]);
      expect(nr.code).toBe(3);
      expect(nr.json().error.code).toBe("NOT_REGISTERED");
    } finally {
      await h.remove();
    }
  }, 60_000);
});

describe("concurrent writers (agents run commands in parallel)", () => {
  test("ten `ath` processes writing config.json at once lose no entry", async () => {
    const h = await tempDir("cli-conc");
    try {
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => ath(h.path, ["config", "set-gateway", `gw${i}`, `http://127.0.0.1:${10000 + i}`])));
      expect(results.map((r) => r.code)).toEqual(Array(10).fill(0));
      const config = (await ath(h.path, ["config", "show", "--format", "json"])).json();
      expect(Object.keys(config.gateways).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `gw${i}`).sort());
      expect(modes(h.path).filter((f) => f.path.endsWith(".lock") || f.path.endsWith(".tmp"))).toEqual([]);
    } finally {
      await h.remove();
    }
  });

  test("ten parallel `ath authorize` save all ten pending sessions in credentials.json", async () => {
    const h = await tempDir("cli-conc2");
    try {
      expect((await ath(h.path, ["register", "-g", gw, "--provider", "mail", "--scopes", "openid"])).code).toBe(0);
      const results = await Promise.all(Array.from({ length: 10 }, () => ath(h.path, ["authorize", "-g", gw, "--provider", "mail", "--format", "json"])));
      expect(results.map((r) => r.code)).toEqual(Array(10).fill(0));
      const ids = results.map((r) => r.json().ath_session_id as string).sort();
      const status = (await ath(h.path, ["status", "--format", "json"])).json();
      expect(status.registrations[0].pending.map((p: { ath_session_id: string }) => p.ath_session_id).sort()).toEqual(ids);
    } finally {
      await h.remove();
    }
  });
});
