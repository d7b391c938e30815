/**
 * What a newcomer tripped on in round 4 (issue 40), each the exact command through the compiled binary against
 * `ath serve --demo`: a provider the gateway does not offer, a scope the agent may not ask for, the flags `--help`
 * must show and the flag people type for `--body`, a gateway that is down, an expired token whose refresh fails, a
 * refresh family that died (one exit code, every time), a port in use, providers files and other files that are
 * wrong, what `ath serve` tells a person at start — and `ath mcp`'s tool errors, whose texts name the next tool,
 * never a shell command (the MCP host is the official SDK client spawning dist/ath).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { consent } from "../helpers/agent.ts";
import { ath, ATH_BIN, ensureBinary } from "../helpers/cli-binary.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { startHost, type ToolResult } from "../helpers/mcp-host.ts";
import { freePort, tempDir } from "../helpers/net.ts";
import { start } from "../helpers/processes.ts";
import { sectionOf } from "../helpers/readme.ts";

let gw: Gateway;
let short: Gateway;
let home: { path: string; remove: () => Promise<void> };
const homes: { remove: () => Promise<void> }[] = [];

beforeAll(async () => {
  ensureBinary();
  [gw, short] = await Promise.all([
    startGateway({ binary: true, providers: {}, extraArgs: ["--demo"] }),
    // tokens that expire at once, so every call refreshes first
    startGateway({ binary: true, providers: {}, extraArgs: ["--demo", "--token-ttl", "1"] }),
  ]);
  home = await tempDir("frictions40");
}, 120_000);
afterAll(async () => {
  for (const h of [home, ...homes]) await h?.remove();
  await gw?.cleanup();
  await short?.cleanup();
});

async function freshHome(): Promise<string> {
  const h = await tempDir("frictions40-home");
  homes.push(h);
  return h.path;
}

/** A home registered at `g` for demo's notes:read and holding a token (consent given over HTTP). */
async function authorizedHome(g: Gateway): Promise<string> {
  const h = await freshHome();
  expect((await ath(h, ["register", "-g", g.baseUrl, "--provider", "demo", "--scopes", "notes:read"])).code).toBe(0);
  const started = (await ath(h, ["authorize", "-g", g.baseUrl, "--provider", "demo", "--no-wait", "--format", "json"])).json();
  const { code } = await consent(started.authorization_url);
  const token = await ath(h, ["token", "-g", g.baseUrl, "--code", code!]);
  expect({ code: token.code, stderr: token.stderr }).toEqual({ code: 0, stderr: "" });
  return h;
}

describe("ath register / authorize", () => {
  test("register --provider nonexistent: names the providers there are, never advises --scopes, registers nothing (with --scopes too)", async () => {
    for (const extra of [[], ["--scopes", "x"]]) {
      const h = await freshHome();
      const r = await ath(h, ["register", "-g", gw.baseUrl, "--provider", "nonexistent", ...extra]);
      expect({ extra, code: r.code }).toEqual({ extra, code: 3 });
      expect(r.stderr).toBe(`ath: ${gw.baseUrl} offers no provider "nonexistent": its providers are demo: see \`ath discover -g ${gw.baseUrl}\`\n`);
      expect(r.stderr).not.toContain("--scopes");
      // nothing registered: the next register is a first one, and asks for what it names
      const next = await ath(h, ["register", "-g", gw.baseUrl, "--provider", "demo", "--scopes", "notes:read"]);
      expect(next.stdout).toContain("agent_status\tapproved");
      expect(next.stderr).not.toContain("already registered");
    }
    // a near miss gets a guess
    const typo = await ath(await freshHome(), ["register", "-g", gw.baseUrl, "--provider", "dmeo"]);
    expect(typo.stderr).toContain('offers no provider "dmeo" (did you mean "demo"?)');
  });

  test("authorize's SCOPE_NOT_APPROVED names the scope, and how to ask for it", async () => {
    const h = await freshHome();
    await ath(h, ["register", "-g", gw.baseUrl, "--provider", "demo", "--scopes", "notes:read"]);
    const r = await ath(h, ["authorize", "-g", gw.baseUrl, "--provider", "demo", "--scopes", "notes:write", "--no-wait"]);
    expect(r.code).toBe(4);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("SCOPE_NOT_APPROVED");
    expect(r.stderr).toContain("notes:write is not approved for this agent at demo");
    expect(r.stderr).toContain(`ath register -g ${gw.baseUrl} --provider demo --scopes notes:write`);
    const json = (await ath(h, ["authorize", "-g", gw.baseUrl, "--provider", "demo", "--scopes", "notes:write", "--no-wait", "--format", "json"])).json();
    expect(json.error).toMatchObject({ code: "SCOPE_NOT_APPROVED", details: { unapproved_scopes: ["notes:write"] } });
    expect(json.error.message).toContain("notes:write");
  });

  test("authorize --help shows --no-wait; serve --help shows the default port", async () => {
    const authorize = await ath(home.path, ["authorize", "--help"]);
    expect(authorize.stdout).toMatch(/--no-wait\s+Print the URL and the session/);
    const serve = await ath(home.path, ["serve", "--help"]);
    expect(serve.stdout).toMatch(/--port=<n>\s+Port \(env ATH_PORT; default 8787/);
  });

  test("--data, -d and --json (curl's names) get \"did you mean --body\"", async () => {
    for (const flag of ["--data", "-d", "--json"]) {
      const r = await ath(home.path, ["proxy", "-g", gw.baseUrl, "demo", "POST", "/notes", flag, '{"text":"x"}']);
      expect({ flag, code: r.code, stderr: r.stderr }).toEqual({
        flag,
        code: 2,
        stderr: `ath: unknown flag ${flag} for \`ath proxy\` (did you mean --body?): see \`ath proxy --help\`\n`,
      });
    }
  });
});

describe("AGENT_UNAPPROVED at authorize (issue 35)", () => {
  test("a pending agent the admin suspended: exit 4 naming what the operator runs, and the saved status is the true one", async () => {
    const manual = await startGateway({ binary: true, providers: {}, extraArgs: ["--demo", "--approval", "manual"] });
    try {
      const h = await freshHome();
      expect((await ath(h, ["register", "-g", manual.baseUrl, "--provider", "demo", "--scopes", "notes:read"])).code).toBe(0);
      const saved = () => ath(h, ["status", "-g", manual.baseUrl, "--format", "json"]).then((r) => r.json().registrations[0]);
      const { client_id, agent_status } = await saved();
      expect(agent_status).toBe("pending");
      expect((await ath(h, ["admin", "agents", "suspend", client_id, "-g", manual.baseUrl, "--admin-token", manual.adminToken])).code).toBe(0);
      const r = await ath(h, ["authorize", "-g", manual.baseUrl, "--provider", "demo", "--no-wait"]);
      expect(r.code).toBe(4);
      expect(r.stderr).toContain("AGENT_UNAPPROVED");
      expect(r.stderr).toContain(`this agent is suspended at ${manual.baseUrl}`);
      expect(r.stderr).toContain(`ath admin agents approve ${client_id}`);
      expect((await saved()).agent_status).toBe("suspended");
    } finally {
      await manual.cleanup();
    }
  }, 60_000);
});

describe("a gateway that is down", () => {
  test("connection refused gets a next step: start the gateway, or check the URL", async () => {
    const port = await freePort();
    const r = await ath(home.path, ["discover", "-g", `http://127.0.0.1:${port}`]);
    expect(r.code).toBe(5);
    expect(r.stderr).toContain("connection refused");
    expect(r.stderr).toContain(`is a gateway running at http://127.0.0.1:${port}? Start one with \`ath serve\`, or pass the right -g`);
  });

  test("a host name that does not resolve gets a next step: check the URL (.invalid never resolves, RFC 6761)", async () => {
    const r = await ath(home.path, ["discover", "-g", "http://no-such-gateway.invalid:8787"]);
    expect(r.code).toBe(5);
    expect(r.stderr).toContain("DNS lookup failed");
    expect(r.stderr).toContain("check the gateway's URL (http://no-such-gateway.invalid:8787): pass the right -g");
  });

  test("an expired token whose refresh cannot reach the gateway: the message says it was refreshing the token of this GET", async () => {
    const down = await startGateway({ binary: true, providers: {}, extraArgs: ["--demo", "--token-ttl", "1"] });
    try {
      const h = await authorizedHome(down);
      await down.stop();
      await Bun.sleep(1_100);
      const r = await ath(h, ["proxy", "-g", down.baseUrl, "demo", "GET", "/notes"]);
      expect(r.code).toBe(5);
      expect(r.stderr).toStartWith("ath: the token for demo has expired and refreshing it (POST /ath/token) failed: ");
      expect(r.stderr).toContain("connection refused");
    } finally {
      await down.cleanup();
    }
  }, 60_000);
});

describe("a refresh family that died", () => {
  test("one condition, one exit code: every later call is exit 4 TOKEN_REVOKED naming ath authorize, until it is run", async () => {
    const h = await authorizedHome(short);
    // the admin revokes every token of the agent: its refresh family dies with them
    const clientId = (await ath(h, ["status", "-g", short.baseUrl, "--format", "json"])).json().registrations[0].client_id;
    const revoked = await ath(h, ["admin", "tokens", "revoke", "-g", short.baseUrl, "--admin-token", short.adminToken, "--client-id", clientId]);
    expect(revoked.code).toBe(0);
    await Bun.sleep(1_100);
    const codes: { code: number; error: string }[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await ath(h, ["proxy", "-g", short.baseUrl, "demo", "GET", "/notes", "--format", "json"]);
      codes.push({ code: r.code, error: r.json().error.code });
      expect(r.json().error.message).toContain(`ath authorize -g ${short.baseUrl} --provider demo`);
    }
    expect(codes).toEqual(Array(3).fill({ code: 4, error: "TOKEN_REVOKED" }));
    const text = await ath(h, ["proxy", "-g", short.baseUrl, "demo", "GET", "/notes"]);
    expect(text.stderr).toContain("can no longer be refreshed");
    // status shows the token expired, with no refresh left
    const status = (await ath(h, ["status", "-g", short.baseUrl, "--format", "json"])).json();
    expect(status.registrations[0].tokens[0]).toMatchObject({ provider_id: "demo", expired: true, refresh_expires_at: null });
    // until `ath authorize` saves a new token
    const again = (await ath(h, ["authorize", "-g", short.baseUrl, "--provider", "demo", "--no-wait", "--format", "json"])).json();
    const { code } = await consent(again.authorization_url);
    expect((await ath(h, ["token", "-g", short.baseUrl, "--code", code!])).code).toBe(0);
    expect((await ath(h, ["proxy", "-g", short.baseUrl, "demo", "GET", "/notes"])).code).toBe(0);
  }, 60_000);
});

describe("ath proxy's output", () => {
  test("piped, the body goes out byte for byte as the upstream sent it (DESIGN §14): a JSON body ends as the API ended it", async () => {
    const h = await authorizedHome(gw);
    const r = await ath(h, ["proxy", "-g", gw.baseUrl, "demo", "GET", "/notes"]);
    expect(r.code).toBe(0);
    const direct = JSON.parse(r.stdout);
    expect(direct.notes[0].text).toContain("Welcome to Demo Notes");
    // no byte added: what `curl` would write (the demo API ends its JSON without a newline)
    expect(r.stdout.endsWith("}")).toBe(true);
  });

  test("on a terminal, a body that does not end a line gets one, so the prompt starts on its own line", async () => {
    const h = await authorizedHome(gw);
    const p = Bun.spawn(["script", "-qefc", `${ATH_BIN} proxy -g ${gw.baseUrl} demo GET /notes`, "/dev/null"], {
      env: { ...process.env, ATH_HOME: h, HOME: h, NO_COLOR: "1" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
    expect(code).toBe(0);
    expect(out).toEndWith("}\r\n");
  });
});

describe("ath serve", () => {
  test("prints the admin console's URL and every MCP server it fronts, after the ready line", async () => {
    const printed = `listening on ${gw.baseUrl}\nadmin console: ${gw.baseUrl}/admin/ (sign in with the admin token)\nMCP server demo: ${gw.baseUrl}/mcp/demo\n`;
    await gw.waitForOutput(/MCP server demo:/);
    expect(gw.output()).toContain(printed);
  });

  test("a port in use: exit 1 naming the port and the --port flag", async () => {
    const r = await ath(home.path, ["serve", "--port", String(gw.port), "--data-dir", join(home.path, "gw2")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`ath: port ${gw.port} on 127.0.0.1 is already in use (another \`ath serve\`?): stop what listens there, or pick another port with --port <n> (--port 0: any free one)\n`);
  });

  test("providers-file problems are said in words, each with its field path: missing fields, wrong types, an array, a missing file", async () => {
    const dir = join(home.path, "files");
    await mkdir(dir, { recursive: true });
    const serve = async (name: string, content?: string) => {
      if (content !== undefined) await writeFile(join(dir, name), content);
      return ath(home.path, ["serve", "--port", "0", "--data-dir", join(dir, "gw"), "--providers", join(dir, name)]);
    };
    const missing = await serve("missing.json", JSON.stringify({ mail: { display_name: 5, available_scopes: "mail:read" } }));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("providers.mail.authorize_endpoint: missing (a URL is required)");
    expect(missing.stderr).toContain("providers.mail.client_id: missing (a string is required)");
    expect(missing.stderr).toContain("providers.mail.display_name: must be a string, not a number");
    expect(missing.stderr).toContain("providers.mail.available_scopes: must be a list (an array), not a string");
    const array = await serve("array.json", "[]");
    expect(array.stderr).toContain("providers: the file must be an object keyed by provider id ({\"github\": {…}}), not a list");
    const wrapped = await serve("wrapped.json", JSON.stringify({ providers: { mail: {} } }));
    expect(wrapped.stderr).toContain('providers.providers: the file is keyed by provider id: put "mail" at the top level, without "providers"');
    const gone = await serve("nowhere.json");
    expect(gone.stderr).toBe(`ath: cannot read providers file ${join(dir, "nowhere.json")}: no such file\n`);
    for (const r of [missing, array, wrapped, gone]) expect(r.stderr).not.toMatch(/received undefined|expected record|ENOENT|Invalid input/);
  });

  test("file errors of the CLI speak words too: --body @file, --key", async () => {
    const body = await ath(home.path, ["proxy", "-g", gw.baseUrl, "demo", "POST", "/notes", "--body", "@/nonexistent/body.json"]);
    expect(body.code).toBe(2);
    expect(body.stderr).toBe("ath: --body @/nonexistent/body.json: cannot read /nonexistent/body.json: no such file\n");
    const dir = await freshHome();
    const key = await ath(dir, ["register", "-g", gw.baseUrl, "--provider", "demo", "--key", dir]);
    expect(key.stderr).toContain("is a directory, not a file");
    for (const r of [body, key]) expect(r.stderr).not.toMatch(/ENOENT|EISDIR/);
  });
});

describe("ath mcp's tool errors", () => {
  /** A tool error's text: its code, the reason, and `Next:` in tools' terms — no shell command, no flag. */
  function expectNoShell(r: ToolResult, code: string): string {
    expect(r.isError).toBe(true);
    const text = r.content.map((c) => c.text ?? "").join("\n");
    expect(text).toStartWith(`${code}: `);
    expect({ code, shell: /`ath [a-z]|run `|--[a-z]/.exec(text)?.[0] ?? null }).toEqual({ code, shell: null });
    expect(text).toContain("\nNext: ");
    return text;
  }

  test("not registered, a provider not offered, no token, a dead refresh family: each names the tool to call, never `ath …`", async () => {
    const fresh = await freshHome();
    const host = await startHost({ home: fresh, args: ["-g", gw.baseUrl] });
    try {
      expectNoShell(await host.call("ath_request", { provider: "demo", method: "GET", path: "/notes" }), "NOT_REGISTERED");
      expect(expectNoShell(await host.call("ath_authorize", { provider: "nonexistent" }), "UNKNOWN_PROVIDER")).toContain("ath_providers");
      const pending = await host.call("ath_authorize", { provider: "demo", scopes: ["notes:read"] });
      expect(pending.structuredContent?.status).toBe("pending");
      expect(expectNoShell(await host.call("ath_request", { provider: "demo", method: "GET", path: "/notes" }), "NO_TOKEN")).toContain("ath_authorize");
    } finally {
      await host.close();
    }
    const h = await authorizedHome(short);
    const clientId = (await ath(h, ["status", "-g", short.baseUrl, "--format", "json"])).json().registrations[0].client_id;
    await ath(h, ["admin", "tokens", "revoke", "-g", short.baseUrl, "--admin-token", short.adminToken, "--client-id", clientId]);
    await Bun.sleep(1_100);
    const dead = await startHost({ home: h, args: ["-g", short.baseUrl] });
    try {
      for (let i = 0; i < 2; i++) {
        const text = expectNoShell(await dead.call("ath_request", { provider: "demo", method: "GET", path: "/notes" }), "TOKEN_REVOKED");
        expect(text).toContain('call ath_authorize {"provider":"demo"}');
      }
    } finally {
      await dead.close();
    }
  }, 60_000);
});

describe("an idle gateway with a webhook and an OTLP endpoint", () => {
  test("exports nothing while idle: a poll of the webhook outbox with nothing to do is no span (it was one a second)", async () => {
    const batches: { spans: { name: string; traceId: string }[]; at: number }[] = [];
    const delivered: string[] = [];
    const collector = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const path = new URL(req.url).pathname;
        if (path === "/v1/traces") {
          const body = (await req.json()) as { resourceSpans: { scopeSpans: { spans: { name: string; traceId: string }[] }[] }[] };
          batches.push({ spans: body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((x) => x.spans)), at: Date.now() });
          return Response.json({});
        }
        if (path === "/hook") delivered.push(await req.text());
        return new Response(null, { status: 204 });
      },
    });
    const otlp = await startGateway({ binary: true, providers: {}, extraArgs: ["--demo", "--otlp-endpoint", `http://127.0.0.1:${collector.port}`] });
    try {
      const add = await fetch(`${otlp.baseUrl}/ath/admin/webhooks`, {
        method: "POST",
        headers: { authorization: `Bearer ${otlp.adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ url: `http://127.0.0.1:${collector.port}/hook`, events: ["agent.registered"], secret: "a-webhook-secret-of-24-chars" }),
      });
      expect(add.status).toBe(201);
      // an event, delivered: the deliverer has run inside a request's trace context since
      expect((await ath(await freshHome(), ["register", "-g", otlp.baseUrl, "--provider", "demo", "--scopes", "notes:read"])).code).toBe(0);
      for (let i = 0; i < 100 && delivered.length === 0; i++) await Bun.sleep(50);
      expect(delivered.length).toBe(1);
      await Bun.sleep(1_500); // what that work exported has left (spans leave within a second)
      const before = batches.reduce((n, b) => n + b.spans.length, 0);
      await Bun.sleep(3_500);
      const idle = batches.flatMap((b) => b.spans).slice(before);
      expect(idle.map((sp) => sp.name)).toEqual([]);
    } finally {
      await otlp.cleanup();
      collector.stop(true);
    }
  }, 60_000);
});

describe("webhooks, as an operator first meets them", () => {
  test("the docs and `ath admin webhooks add --help` say the secret's 16 characters and that a receiver on this machine needs --dev; so do the refusals", async () => {
    const docs = sectionOf(await readFile(join(import.meta.dir, "../../docs/audit.md"), "utf8"), "Webhooks");
    expect(docs).toContain("the secret is at least 16 characters");
    expect(docs).toContain("a receiver on the gateway's own machine (`http://127.0.0.1:…`, `localhost`) is taken\n  only when the gateway runs with `--dev`");
    const help = (await ath(home.path, ["admin", "webhooks", "add", "--help"])).stdout;
    expect(help).toContain("the signing secret (at least 16 characters) is read from stdin");
    expect(help).toContain("(http://127.0.0.1…) only when the gateway runs with --dev");
    // a gateway without --dev, as an operator starts one
    const token = "an-admin-token-of-at-least-24-characters";
    const served = start([ATH_BIN, "serve", "--port", "0", "--admin-token", token, "--data-dir", join(home.path, "nodev")], { env: { ATH_HOME: home.path, ATH_LOG_FORMAT: "text" } });
    try {
      const [, base] = await served.waitFor("stdout", /^listening on (\S+)$/m);
      const add = async (secret: string) => {
        const p = Bun.spawn([ATH_BIN, "admin", "webhooks", "add", "-g", String(base), "--admin-token", token, "http://127.0.0.1:9/hook", "--events", "agent.registered"], {
          env: { ...process.env, ATH_HOME: home.path, NO_COLOR: "1" },
          stdin: new Blob([secret]),
          stdout: "pipe",
          stderr: "pipe",
        });
        const [code, stderr] = await Promise.all([p.exited, new Response(p.stderr).text()]);
        return { code, stderr };
      };
      const short = await add("fifteen-chars!!");
      expect(short.code).toBe(4);
      expect(short.stderr).toContain("at least 16 characters");
      const loopback = await add("a-secret-long-enough-for-it");
      expect(loopback.code).toBe(4);
      expect(loopback.stderr).toContain("with --dev");
    } finally {
      await served.kill("SIGKILL");
    }
  }, 60_000);
});
