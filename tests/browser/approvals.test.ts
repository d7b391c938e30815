/**
 * Per-request approval (DESIGN §15) for real: the compiled `dist/ath serve` with a provider whose approval_rules
 * cover `POST /v1/messages` of the sample API (oidc-provider signs the people in, so user ids are real `sub`s), the
 * compiled CLI as the agent (own ATH_HOME), and people in Chromium: the one who consented approves or denies on the
 * approval page; another signed-in user and an anonymous browser get the 403 page; an admin decides from the console.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { tempDir } from "../helpers/net.ts";
import { mailProvider, startWorld, type World } from "../helpers/world.ts";
import { closeContexts, freshPage, recordDialogs, screenshots, sharedChromium } from "../helpers/chromium.ts";
import { clickAndWait, openConsent } from "../helpers/person.ts";
import { ATH_BIN, AUTHORIZATION_URL, ath, run, start } from "../helpers/processes.ts";
import { athError, startHost } from "../helpers/mcp-host.ts";

const SCOPES = ["openid", "mail:read", "mail:send"];
const MAIL = { to: "boss@example.com", subject: "Resignation", text: "I quit." };

let w: World;
let chromium: Browser;
let env: Record<string, string>;
/** The person who consented (as alice at the provider): their browser keeps its cookies across tests. */
let alice: { context: BrowserContext; page: Page };
/** An approval asked before the tests, its page open in a tab of alice's: its ttl (10 s) passes while they run. */
let expiring: { approval: Awaited<ReturnType<typeof ask>>; page: Page };
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  [w, chromium] = await Promise.all([
    startWorld({
      binary: true,
      extraArgs: ["--max-approval-body", "20000"],
      providers: (auth, api) => ({
        approvals: mailProvider(auth, api, {
          display_name: "Sample Mail (approvals)",
          approval_rules: [
            { match: ["POST /v1/messages", "PUT /v1/messages"], approver: "user", ttl: 300 },
            { match: ["POST /v1/echo"], approver: "user", ttl: 10 },
            { match: ["DELETE /v1/messages/*"], approver: "admin" },
          ],
        }),
      }),
    }),
    sharedChromium(),
  ]);
  const home = await tempDir("approvals-home");
  cleanups.push(home.remove);
  env = { ATH_HOME: home.path, BROWSER: "true", ATH_APPROVAL_POLL_MS: "200" };
  await ath(["config", "set-gateway", "local", w.baseUrl], { env });
  await ath(["register", "--provider", "approvals", "--scopes", SCOPES.join(","), "--purpose", "sends mail only when its user approves"], { env });
  alice = await freshPage(chromium);
  await authorizeAs(alice.page, "alice");
  expiring = { approval: await ask(["POST", "/v1/echo", "--body", "{}"]), page: await alice.context.newPage() };
  await expiring.page.goto(expiring.approval.approval_url);
}, 120_000);
afterAll(async () => {
  for (const c of cleanups) await c();
  await closeContexts(chromium);
  await w?.stop();
});

/** `ath authorize --wait` (the compiled CLI, in the agent home `as`) with `login` consenting in `page`. */
async function authorizeAs(page: Page, login: string, as = env): Promise<void> {
  const cli = start([ATH_BIN, "authorize", "--provider", "approvals", "--scopes", SCOPES.join(","), "--wait", "--no-open", "--format", "json"], { env: as });
  const [, url] = await cli.waitFor("stderr", AUTHORIZATION_URL);
  await openConsent(page, String(url));
  await clickAndWait(page, "Approve");
  await page.fill('input[name="login"]', login);
  await clickAndWait(page, "Approve");
  const done = await cli.done;
  if (done.exitCode !== 0) throw new Error(`authorize: ${done.exitCode} ${done.stderr}`);
}

/** `ath proxy approvals …` (the compiled CLI, JSON); the document it printed and its exit code. */
async function proxy(args: string[]) {
  const r = await run([ATH_BIN, "proxy", "approvals", ...args, "--format", "json"], { env });
  let doc: Record<string, any> = {};
  try {
    doc = JSON.parse(r.stdout);
  } catch {
    // not JSON: the test reads exit and stderr
  }
  return { exit: r.exitCode, doc, stderr: r.stderr };
}

/** Asks for `POST /v1/messages` with `body`: exit 4 and the pending approval. */
async function ask(args: string[]) {
  const r = await proxy(args);
  expect(r.exit).toBe(4);
  expect(r.doc.status).toBe(403);
  expect(r.doc.body.code).toBe("APPROVAL_REQUIRED");
  const approval = { ...r.doc.approval };
  expect(approval.status).toBe("pending");
  expect(String(approval.approval_id)).toMatch(/^ath_apr_[A-Za-z0-9_-]+$/);
  return approval as { approval_id: string; approval_url: string; expires_at: string; request_digest: string; approver: string };
}

/** Every proxied call the audit log holds (the admin API; proxy.call records group a batch's calls). */
async function auditedCalls(): Promise<{ method: string; path: string; status: number; request_digest?: string }[]> {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${w.baseUrl}/ath/admin/audit?type=proxy.call&limit=500`, { headers: { "x-ath-user-token": w.gw.adminToken } });
    const { events } = (await res.json()) as { events: { data: { calls: { method: string; path: string; status: number; request_digest?: string }[] } }[] };
    const calls = events.flatMap((e) => e.data.calls);
    if (calls.some((c) => c.request_digest)) return calls;
    await Bun.sleep(50); // the audit queue writes in batches, ≤ 250 ms apart
  }
  return [];
}

async function decide(page: Page, url: string, button: "Approve" | "Deny") {
  const res = await page.goto(url);
  expect(res?.status()).toBe(200);
  await clickAndWait(page, button);
  return String(await page.textContent("body"));
}

const posts = () => w.api.requests.filter((r) => r.method === "POST" && r.path === "/v1/messages");

describe("the user approves one exact request", () => {
  test("APPROVAL_REQUIRED; approve in the browser; the resend is forwarded once with exactly that body; a second is refused", async () => {
    const body = JSON.stringify(MAIL);
    const before = posts().length;
    const pending = await ask(["POST", "/v1/messages", "--body", body]);
    expect(new URL(pending.approval_url).origin).toBe(w.baseUrl);
    expect(posts().length).toBe(before);

    await alice.page.goto(pending.approval_url);
    const text = String(await alice.page.textContent("body"));
    expect(text).toContain("POST");
    expect(text).toContain("/v1/messages");
    expect(text).toContain('"subject": "Resignation"');
    await screenshots(alice.page, "approval-page");
    await clickAndWait(alice.page, "Approve");
    expect(String(await alice.page.textContent("body"))).toContain("Request approved");

    const sent = await proxy(["POST", "/v1/messages", "--body", body, "--approval", pending.approval_id]);
    expect({ exit: sent.exit, status: sent.doc.status }).toEqual({ exit: 0, status: 201 });
    expect(posts().slice(before).map((r) => r.body)).toEqual([body]);
    expect(posts().at(-1)!.headers["x-ath-approval"]).toBeUndefined();

    const again = await proxy(["POST", "/v1/messages", "--body", body, "--approval", pending.approval_id]);
    expect(again.exit).toBe(4);
    expect(again.doc.body.details.previous).toEqual({ approval_id: pending.approval_id, reason: "used" });
    expect(posts().length).toBe(before + 1);

    // the evidence joins to what the person approved (issue 35): the audit's proxy.call carries the 403's digest
    const calls = await auditedCalls();
    expect(calls.filter((c) => c.method === "POST" && c.path === "/v1/messages" && c.status === 201).map((c) => c.request_digest)).toContain(pending.request_digest);
  });

  test("a resend with a changed body, query or method is refused; the exact one still goes", async () => {
    const body = JSON.stringify(MAIL);
    const pending = await ask(["POST", "/v1/messages", "--body", body]);
    await decide(alice.page, pending.approval_url, "Approve");
    const before = w.api.requests.length;
    for (const changed of [
      ["POST", "/v1/messages", "--body", JSON.stringify({ ...MAIL, to: "everyone@example.com" })],
      ["POST", "/v1/messages?cc=everyone", "--body", body],
      ["PUT", "/v1/messages", "--body", body],
    ]) {
      const r = await proxy([...changed, "--approval", pending.approval_id]);
      expect(r.exit).toBe(4);
      expect(r.doc.body.details.previous).toEqual({ approval_id: pending.approval_id, reason: "digest_mismatch" });
    }
    expect(w.api.requests.length).toBe(before);
    expect((await proxy(["POST", "/v1/messages", "--body", body, "--approval", pending.approval_id])).exit).toBe(0);
  });

  // Two processes started together may reach the gateway one after the other, so this is the CLI's side of a spent
  // approval; that one spend wins a real race is tests/unit/gateway/endpoints/approvals.test.ts's (in process, where
  // the resends interleave at every await).
  test("two `ath proxy` resends of one approval, started together: one is forwarded, the other exits 4 naming it used", async () => {
    const body = JSON.stringify({ ...MAIL, subject: "race" });
    const pending = await ask(["POST", "/v1/messages", "--body", body]);
    await decide(alice.page, pending.approval_url, "Approve");
    const before = posts().length;
    const results = await Promise.all([1, 2].map(() => proxy(["POST", "/v1/messages", "--body", body, "--approval", pending.approval_id])));
    expect(results.map((r) => r.exit).sort()).toEqual([0, 4]);
    const loser = results.find((r) => r.exit === 4)!;
    expect(loser.doc.body.details.previous).toEqual({ approval_id: pending.approval_id, reason: "used" });
    expect(posts().length).toBe(before + 1);
  });

  test("deny: the resend exits 4 with APPROVAL_DENIED and nothing is sent", async () => {
    const body = JSON.stringify({ ...MAIL, subject: "deny me" });
    const pending = await ask(["POST", "/v1/messages", "--body", body]);
    expect(await decide(alice.page, pending.approval_url, "Deny")).toContain("Request denied");
    const before = posts().length;
    const r = await proxy(["POST", "/v1/messages", "--body", body, "--approval", pending.approval_id]);
    expect(r.exit).toBe(4);
    expect(r.doc.body.code).toBe("APPROVAL_DENIED");
    expect(posts().length).toBe(before);
  });

  test("a hostile body is rendered inert: escaped text, no script runs", async () => {
    const hostile = JSON.stringify({ text: "</pre><script>alert(1)</script><img src=x onerror=alert(2)>", html: "<b>bold</b>" });
    const pending = await ask(["POST", "/v1/messages", "--body", hostile]);
    const dialogs = recordDialogs(alice.page);
    await alice.page.goto(pending.approval_url);
    expect(await alice.page.locator("script").count()).toBe(0);
    expect(await alice.page.locator("main img").count()).toBe(0);
    expect(await alice.page.locator("main pre b").count()).toBe(0);
    expect(String(await alice.page.locator("pre").first().textContent())).toContain("<script>alert(1)</script>");
    await Bun.sleep(200);
    expect(dialogs).toEqual([]);
  });

  test("--max-approval-body: a larger body is refused 413 before anyone is asked", async () => {
    const r = await proxy(["POST", "/v1/messages", "--body", JSON.stringify({ text: "x".repeat(25_000) })]);
    expect(r.exit).toBe(4);
    expect(r.doc.status).toBe(413);
  });
});

describe("the page shows the bytes that will be sent (DESIGN §16)", () => {
  test("duplicate keys are visible with a warning and no formatted view; a big number shown exactly; U+202E made visible; bound headers and the raw query beside its pairs", async () => {
    // a body no JSON.stringify makes: a duplicate key, a number no double holds, a bidi override hiding ".exe"
    const body = `{"to":"boss@example.com","to":"everyone@example.com","subject":"invoice\u202Efdp.exe","n":90071992547409931}`;
    const pending = await ask(["POST", "/v1/messages?b=2&a=%C3%A9", "--body", body, "-H", 'Dropbox-API-Arg: {"path":"/reports/q3.pdf"}']);
    await alice.page.goto(pending.approval_url);
    const text = String(await alice.page.textContent("main"));
    expect(text).toContain("duplicate key `to`: the service may read either value");
    expect(text).toContain('"to":"boss@example.com","to":"everyone@example.com"');
    expect(text).toContain("90071992547409931");
    expect(text).not.toContain("90071992547409940");
    expect(text).toContain("invoice⟨U+202E⟩fdp.exe");
    expect(text).not.toContain("\u202E");
    expect(await alice.page.locator("main h3", { hasText: "Formatted" }).count()).toBe(0);
    expect(text).toContain('dropbox-api-arg: {"path":"/reports/q3.pdf"}');
    expect(text).toContain("b=2&a=%C3%A9");
    expect(text).toContain("a = é");
    await screenshots(alice.page, "approval-unfaithful-body");
  });

  test("a faithful body gets its formatted view beside the raw one; a lone big number is warned about", async () => {
    const pending = await ask(["POST", "/v1/messages", "--body", `{"id":90071992547409931}`]);
    await alice.page.goto(pending.approval_url);
    const text = String(await alice.page.textContent("main"));
    expect(text).toContain("the number 90071992547409931 has no exact JSON reading");
    const ok = await ask(["POST", "/v1/messages", "--body", `{"to":"a@example.com","n":[1,2.5,-3e2]}`]);
    await alice.page.goto(ok.approval_url);
    expect(await alice.page.locator("main h3", { hasText: "Formatted" }).count()).toBe(1);
    expect(String(await alice.page.locator("main pre").first().textContent())).toBe('{\n  "to": "a@example.com",\n  "n": [\n    1,\n    2.5,\n    -3e2\n  ]\n}');
  });

  test("a 16 KB body nested 8,000 deep gives a small page, fast, while /health keeps answering", async () => {
    const deep = "[".repeat(8000) + "]".repeat(8000);
    const pending = await ask(["POST", "/v1/messages", "--body", deep]);
    let loading = true;
    const health: number[] = [];
    const probe = (async () => {
      while (loading) {
        const t0 = performance.now();
        const r = await fetch(`${w.baseUrl}/health`);
        expect(r.status).toBe(200);
        health.push(performance.now() - t0);
        await Bun.sleep(20);
      }
    })();
    const t0 = performance.now();
    const res = await alice.page.goto(pending.approval_url);
    const pageMs = performance.now() - t0;
    const size = (await res!.body()).byteLength;
    loading = false;
    await probe;
    console.log(`8,000-deep body: approval page ${size} bytes in ${pageMs.toFixed(0)} ms; /health slowest ${Math.max(...health).toFixed(0)} ms over ${health.length} probes`);
    expect(res!.status()).toBe(200);
    expect(size).toBeLessThan(200_000);
    expect(Math.max(...health)).toBeLessThan(2000);
    expect(String(await alice.page.textContent("main"))).toContain("nested deeper than 32 levels");
  });
});

describe("who may decide", () => {
  test("an anonymous browser and another signed-in user get the 403 page; a forged or cross-site post decides nothing", async () => {
    const pending = await ask(["POST", "/v1/messages", "--body", JSON.stringify({ ...MAIL, subject: "not yours" })]);
    const anonymous = await freshPage(chromium);
    const bob = await freshPage(chromium);
    try {
      const anon = await anonymous.page.goto(pending.approval_url);
      expect(anon?.status()).toBe(403);
      const anonText = String(await anonymous.page.textContent("body"));
      expect(anonText).toContain("You cannot decide this request");
      expect(anonText).not.toContain("not yours");
      await screenshots(anonymous.page, "approval-forbidden");

      // bob consents to an agent too (another agent, so this one keeps alice's token): his browser proves bob, not alice
      const bobHome = await tempDir("approvals-bob");
      cleanups.push(bobHome.remove);
      const bobEnv = { ...env, ATH_HOME: bobHome.path };
      await ath(["config", "set-gateway", "local", w.baseUrl], { env: bobEnv });
      await ath(["register", "--provider", "approvals", "--scopes", SCOPES.join(",")], { env: bobEnv });
      await authorizeAs(bob.page, "bob", bobEnv);
      expect((await bob.context.cookies()).some((c) => c.name === "ath_user" && c.httpOnly)).toBe(true);
      expect((await bob.page.goto(pending.approval_url))?.status()).toBe(403);

      // CSRF: alice's own browser posting without the page's token (same cookies, no form)
      const forged = await alice.context.request.post(pending.approval_url, { form: { decision: "approve", csrf: "forged" }, maxRedirects: 0 });
      expect(forged.status()).toBe(400);
      expect(await forged.text()).toContain("STATE_MISMATCH");
      // a page on another site cannot make alice's browser post with her cookie: SameSite=Lax keeps it off a cross-site POST
      await alice.page.route("http://attacker.test/", (route) =>
        route.fulfill({ contentType: "text/html", body: `<form method="post" action="${pending.approval_url}"><input name="decision" value="approve"><button>go</button></form>` }),
      );
      await alice.page.goto("http://attacker.test/");
      await clickAndWait(alice.page, "go");
      expect(String(await alice.page.textContent("body"))).toContain("You cannot decide this request");
      expect((await proxy(["POST", "/v1/messages", "--body", JSON.stringify({ ...MAIL, subject: "not yours" }), "--approval", pending.approval_id])).doc.body.details.previous.reason).toBe("pending");
    } finally {
      await anonymous.context.close();
      await bob.context.close();
    }
  }, 60_000);

  test("another browser: signing in at the provider as the right user lets the person decide; as anyone else, 403", async () => {
    const body = JSON.stringify({ ...MAIL, subject: "from my phone" });
    const pending = await ask(["POST", "/v1/messages", "--body", body]);
    for (const [login, allowed] of [["mallory", false], ["alice", true]] as const) {
      const other = await freshPage(chromium);
      try {
        const first = await other.page.goto(pending.approval_url);
        expect(first?.status()).toBe(403);
        expect(String(await other.page.textContent("body"))).not.toContain("from my phone");
        if (login === "alice") await screenshots(other.page, "approval-signin");
        const asked: URL[] = [];
        other.page.on("request", (r) => {
          if (r.url().startsWith(w.auth.authorizeEndpoint)) asked.push(new URL(r.url()));
        });
        await clickAndWait(other.page, "Sign in at Sample Mail (approvals)");
        expect(new URL(other.page.url()).pathname).toStartWith("/interaction/");
        // DESIGN §15: the sign-in asks for the scopes of the grant being approved (+ openid), never an empty scope
        expect(asked.length).toBe(1);
        expect((asked[0]!.searchParams.get("scope") ?? "").split(" ").sort()).toEqual([...SCOPES].sort());
        await other.page.fill('input[name="login"]', login);
        const back = await clickAndWait(other.page, "Approve");
        if (!allowed) {
          expect(back?.status()).toBe(403);
          expect(String(await other.page.textContent("body"))).toContain("You signed in as someone other than the person");
          continue;
        }
        expect(other.page.url()).toBe(pending.approval_url);
        expect(String(await other.page.textContent("body"))).toContain("from my phone");
        await clickAndWait(other.page, "Approve");
        expect(String(await other.page.textContent("body"))).toContain("Request approved");
      } finally {
        await other.context.close();
      }
    }
    expect((await proxy(["POST", "/v1/messages", "--body", body, "--approval", pending.approval_id])).exit).toBe(0);
  }, 60_000);

  test("approver admin: the person cannot decide it; an admin approves in the console; the resend goes", async () => {
    // the console shows the bytes that will be sent, as the page does (DESIGN §16)
    const body = `{"id":"m1","id":"m2","note":"keep\u202Eexe.txt"}`;
    const pending = await ask(["DELETE", "/v1/messages/m1", "--body", body]);
    expect(pending.approver).toBe("admin");
    await alice.page.goto(pending.approval_url);
    expect(await alice.page.getByRole("button", { name: "Approve" }).count()).toBe(0);

    const admin = await freshPage(chromium);
    try {
      await admin.page.goto(`${w.baseUrl}/admin/signin`);
      await admin.page.fill("#token", w.gw.adminToken);
      await clickAndWait(admin.page, "Sign in");
      await admin.page.goto(`${w.baseUrl}/admin/approvals`);
      const row = admin.page.locator("tr", { hasText: pending.approval_id });
      const rowText = String(await row.textContent());
      expect(rowText).toContain("DELETE /v1/messages/m1");
      expect(rowText).toContain("duplicate key `id`: the service may read either value");
      expect(rowText).toContain('"id":"m1","id":"m2"');
      expect(rowText).toContain("keep⟨U+202E⟩exe.txt");
      await screenshots(admin.page, "console-approvals");
      await Promise.all([admin.page.waitForNavigation(), row.getByRole("button", { name: "Approve" }).click()]);
      expect(String(await admin.page.textContent("body"))).toContain("Request approved.");
    } finally {
      await admin.context.close();
    }
    const before = w.api.requests.filter((r) => r.method === "DELETE").length;
    const r = await proxy(["DELETE", "/v1/messages/m1", "--body", body, "--approval", pending.approval_id]);
    expect(r.doc.status).not.toBe(403);
    expect(w.api.requests.filter((x) => x.method === "DELETE").length).toBe(before + 1);
  }, 60_000);
});

describe("ath proxy --wait-approval", () => {
  test("opens the page, waits while the person approves, then resends: the API's answer, exit 0", async () => {
    const body = JSON.stringify({ ...MAIL, subject: "waited" });
    const before = posts().length;
    const cli = start([ATH_BIN, "proxy", "approvals", "POST", "/v1/messages", "--body", body, "--wait-approval", "--format", "json"], { env });
    const [, url] = await cli.waitFor("stderr", /"approval_url":"([^"]+)"/);
    expect(posts().length).toBe(before);
    await decide(alice.page, String(url), "Approve");
    const done = await cli.done;
    expect({ exit: done.exitCode }).toEqual({ exit: 0 });
    const doc = JSON.parse(done.stdout);
    expect(doc).toMatchObject({ status: 201, body: { received: { subject: "waited" } } });
    expect(posts().slice(before).map((r) => r.body)).toEqual([body]);
  }, 60_000);

  test("denied while waiting: exit 4, APPROVAL_DENIED, nothing sent", async () => {
    const before = posts().length;
    const cli = start([ATH_BIN, "proxy", "approvals", "POST", "/v1/messages", "--body", "{}", "--wait-approval", "--format", "json"], { env });
    const [, url] = await cli.waitFor("stderr", /"approval_url":"([^"]+)"/);
    await decide(alice.page, String(url), "Deny");
    const done = await cli.done;
    expect(done.exitCode).toBe(4);
    expect(JSON.parse(done.stdout)).toMatchObject({ error: { code: "APPROVAL_DENIED" } });
    expect(posts().length).toBe(before);
  }, 60_000);
});

describe("ath mcp: ath_request on a request that needs an approval", () => {
  test("a host without elicitation gets APPROVAL_REQUIRED with the URL; after the person approves, the same call with approval_id goes", async () => {
    const host = await startHost({ home: env.ATH_HOME!, args: ["-g", w.baseUrl] });
    try {
      const args = { provider: "approvals", method: "POST", path: "/v1/messages", body: { ...MAIL, subject: "via mcp" } };
      const before = posts().length;
      const first = athError(await host.call("ath_request", args));
      expect(first.code).toBe("APPROVAL_REQUIRED");
      const details = first.details as { approval_id: string; approval_url: string };
      expect(details.approval_url).toBe(`${w.baseUrl}/ath/approvals/${details.approval_id}`);
      await decide(alice.page, details.approval_url, "Approve");
      const sent = await host.call("ath_request", { ...args, approval_id: details.approval_id });
      expect(sent.isError).toBeUndefined();
      expect(sent.structuredContent).toMatchObject({ status: 201, body: { received: { subject: "via mcp" } } });
      expect(posts().length).toBe(before + 1);
    } finally {
      await host.close();
    }
  }, 60_000);

  test("a host with URL elicitation sends the person to the approval page; ath_request itself answers with the API's answer", async () => {
    const asked: { url: string; elicitationId: string }[] = [];
    const host = await startHost({
      home: env.ATH_HOME!,
      args: ["-g", w.baseUrl],
      elicit: async (params) => {
        const p = params as unknown as { url: string; elicitationId: string };
        asked.push(p);
        // the host opens the page; the person approves there while the tool waits
        void decide(alice.page, p.url, "Approve");
        return { action: "accept" };
      },
    });
    try {
      const before = posts().length;
      const r = await host.call("ath_request", { provider: "approvals", method: "POST", path: "/v1/messages", body: { ...MAIL, subject: "elicited" } });
      expect(r.isError).toBeUndefined();
      expect(r.structuredContent).toMatchObject({ status: 201, body: { received: { subject: "elicited" } } });
      expect(asked).toHaveLength(1);
      expect(asked[0]!.elicitationId).toStartWith("ath_apr_");
      expect(asked[0]!.url).toBe(`${w.baseUrl}/ath/approvals/${asked[0]!.elicitationId}`);
      expect(host.completed).toEqual([asked[0]!.elicitationId]);
      expect(posts().length).toBe(before + 1);
    } finally {
      await host.close();
    }
  }, 60_000);
});

describe("an approval nobody decides within its ttl (asked before the tests above, which ran meanwhile)", () => {
  test("expiry: past its ttl the page can no longer approve, and the resend is refused", async () => {
    const { approval, page } = expiring;
    await Bun.sleep(Math.max(0, Date.parse(approval.expires_at) - Date.now()) + 500);
    await clickAndWait(page, "Approve");
    expect(String(await page.textContent("body"))).toContain("expired");
    const r = await proxy(["POST", "/v1/echo", "--body", "{}", "--approval", approval.approval_id]);
    expect(r.exit).toBe(4);
    expect(r.doc.body.details.previous.reason).toBe("expired");
    expect(w.api.requests.filter((x) => x.path === "/v1/echo")).toEqual([]);
  }, 30_000);
});
