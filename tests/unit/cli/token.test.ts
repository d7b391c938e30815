/**
 * `ath token` (Phase B), in process against the real gateway (providers github and gitlab on a scripted provider),
 * exchanges the code of the pending session (form-encoded, RFC 6749 §4.1.3), forgets a
 * session the gateway says is dead and keeps one a wrong code may retry. It never guesses which session a code
 * belongs to (a code sent against another session answers `authorization_pending`, which agents poll on), and a
 * re-run with a code this home already exchanged sends nothing: it prints the saved token with `already_exchanged`.
 */
import { describe, expect, setSystemTime, test } from "bun:test";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { GATEWAY as GW, cliOnGateway, githubAndGitlab } from "../../helpers/cli-in-process.ts";

const fx = cliOnGateway({
  scripted: githubAndGitlab,
  provider: "github",
  scopes: "repo",
});
const ath = fx.ath;
const tokenCalls = () => fx.sent.filter((q) => q.path === "/ath/token").length;

/** `ath authorize --no-wait` for `provider`: its session id and authorization URL. */
async function started(provider = "github", scopes = "repo"): Promise<{ ath_session_id: string; authorization_url: string }> {
  const a = await ath(["authorize", "-g", GW, "--provider", provider, "--scopes", scopes, "--no-wait", "--format", "json"]);
  expect(a.code).toBe(0);
  return JSON.parse(a.stdout);
}

/** Registered for github and gitlab, two github sessions started; the person consented to the second: its code. */
async function startTwo(): Promise<[string, string, string]> {
  expect((await ath(["register", "-g", GW, "--provider", "github,gitlab"])).code).toBe(0);
  const first = (await started()).ath_session_id;
  const second = await started();
  return [first, second.ath_session_id, await fx.consent(second.authorization_url)];
}

describe("token without --session", () => {
  test("several live pending sessions: exit 3 AMBIGUOUS_SESSION listing them, nothing sent", async () => {
    const [first, second, code] = await startTwo();
    for (const tty of [false, true]) {
      const r = await ath(["token", "-g", GW, "--code", code, "--format", "json"], tty);
      expect(r.code).toBe(3);
      const { error } = JSON.parse(r.stdout);
      expect(error.code).toBe("AMBIGUOUS_SESSION");
      expect(error.message).toContain("pass --session");
      expect(error.details.sessions.map((s: { ath_session_id: string }) => s.ath_session_id).sort()).toEqual([first, second].sort());
      const text = await ath(["token", "-g", GW, "--code", code], tty);
      expect(text.code).toBe(3);
      expect(text.stderr).toContain(first);
      expect(text.stderr).toContain(second);
    }
    expect(tokenCalls()).toBe(0);
  });

  test("--provider narrows the candidates to that provider's sessions", async () => {
    const [, , code] = await startTwo();
    const lab = await started("gitlab", "api");
    const r = await ath(["token", "-g", GW, "--code", await fx.consent(lab.authorization_url), "--provider", "gitlab", "--format", "json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).provider_id).toBe("gitlab");
    expect((await ath(["token", "-g", GW, "--code", code, "--provider", "github"])).code).toBe(3);
  });
});

describe("a code this home already exchanged", () => {
  test("re-running `token --code C` sends nothing, not even against another pending session, and prints the saved token", async () => {
    const [, second, code] = await startTwo();
    const first = await ath(["token", "-g", GW, "--code", code, "--session", second, "--format", "json"]);
    expect(first.code).toBe(0);
    expect(tokenCalls()).toBe(1);
    // The abandoned first session is now the only pending one: without the record, C would be sent against it.
    for (const argv of [["--format", "json"], ["--session", second, "--format", "json"]]) {
      const again = await ath(["token", "-g", GW, "--code", code, ...argv]);
      expect(again.code).toBe(0);
      const doc = JSON.parse(again.stdout);
      expect(doc).toMatchObject({ already_exchanged: true, provider_id: "github", token_type: JSON.parse(first.stdout).token_type, effective_scopes: ["repo"] });
      expect(doc.access_token).toBe(JSON.parse(first.stdout).access_token);
      expect(doc.expires_at).toBe(JSON.parse(first.stdout).expires_at);
      // the refresh token the lost first answer carried is part of the answer again
      expect(JSON.parse(first.stdout).refresh_token).toBeString();
      expect(doc.refresh_token).toBe(JSON.parse(first.stdout).refresh_token);
      expect(doc.refresh_expires_at).toBe(JSON.parse(first.stdout).refresh_expires_at);
    }
    const text = await ath(["token", "-g", GW, "--code", code]);
    expect(text.code).toBe(0);
    expect(text.stderr).toContain("already exchanged");
    expect(tokenCalls()).toBe(1);
    // The code itself is never stored, only its hash.
    expect(await readFile(join(fx.home.dir, "credentials.json"), "utf8")).not.toContain(code);
  });

  test("once its token is revoked, a re-run exits 3 CODE_ALREADY_EXCHANGED naming `ath authorize`, nothing sent", async () => {
    const [, second, code] = await startTwo();
    expect((await ath(["token", "-g", GW, "--code", code, "--session", second])).code).toBe(0);
    expect((await ath(["revoke", "-g", GW, "--provider", "github"])).code).toBe(0);
    const r = await ath(["token", "-g", GW, "--code", code, "--format", "json"]);
    expect(r.code).toBe(3);
    const { error } = JSON.parse(r.stdout);
    expect(error.code).toBe("CODE_ALREADY_EXCHANGED");
    expect(error.message).toContain(`ath authorize -g ${GW} --provider github`);
    expect(tokenCalls()).toBe(1);
  });

  test("a code exchanged by `authorize --wait` is recorded too", async () => {
    await fx.registered();
    let landed = "";
    const r = await fx.athWith(["authorize", "-g", GW, "--provider", "github", "--scopes", "repo", "--wait", "--timeout", "30", "--format", "json"], {
      // the person consents in the browser the CLI opened, which lands on the CLI's loopback listener
      openUrl: async (url) => void (landed = (await fx.consentToLoopback(url)).url),
    });
    expect(r.code).toBe(0);
    const code = new URL(landed).searchParams.get("code")!;
    expect(code).toMatch(/^ath_code_/);
    const again = await ath(["token", "-g", GW, "--code", code, "--format", "json"]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).already_exchanged).toBe(true);
    expect(tokenCalls()).toBe(1);
  });
});

describe("token (Phase B)", () => {
  test("token without --session takes the only unexpired pending session; none → exit 3 NO_PENDING_SESSION, nothing sent", async () => {
    await fx.registered();
    const t0 = Date.now();
    const a = await fx.athWith(["authorize", "-g", GW, "--provider", "github", "--scopes", "repo", "--no-wait", "--format", "json"], { now: () => t0 });
    const code = await fx.consent(JSON.parse(a.stdout).authorization_url);
    const late = await fx.athWith(["token", "-g", GW, "--code", code, "--format", "json"], { now: () => t0 + 600_000 });
    expect(late.code).toBe(3);
    const { error } = JSON.parse(late.stdout);
    expect(error.code).toBe("NO_PENDING_SESSION");
    expect(error.message).toContain("pass --session");
    expect(error.message).toContain(`run \`ath authorize -g ${GW} --provider <id>\` again`);
    expect(tokenCalls()).toBe(0);
    const inTime = await fx.athWith(["token", "-g", GW, "--code", code], { now: () => t0 + 599_000 });
    expect(inTime.code).toBe(0);
    expect(await fx.pendingIds()).toEqual([]); // exchanged: forgotten
  });

  test("token: a dead session (SESSION_EXPIRED) is forgotten; a wrong code keeps the session for another try", async () => {
    await fx.registered();
    const a = await started();
    const code = await fx.consent(a.authorization_url);
    const wrong = await ath(["token", "-g", GW, "--code", "ath_code_wrong", "--format", "json"]);
    expect(wrong.code).toBe(4);
    expect(await fx.pendingIds()).toEqual([a.ath_session_id]);
    // ten minutes pass, for the gateway and the CLI alike (its attestations read the system clock); the CLI is told
    // which session the code is for
    fx.g.clock.advance(601);
    setSystemTime(new Date(fx.g.clock.now()));
    const dead = await fx.athWith(["token", "-g", GW, "--code", code, "--session", a.ath_session_id, "--format", "json"], { now: fx.g.clock.now }).finally(() => setSystemTime());
    expect(dead.code).toBe(4);
    expect(JSON.parse(dead.stdout).error.code).toBe("SESSION_EXPIRED");
    expect(await fx.pendingIds()).toEqual([]);
  });

  test("a refused token exchange exits 4 with the gateway's code and an ofetch-style message", async () => {
    await fx.registered();
    const code = await fx.consent((await started()).authorization_url);
    // the saved client secret is no longer the one the gateway holds
    const creds = await fx.credentials();
    (Object.values(creds.gateways[GW].agents)[0] as { client_secret: string }).client_secret = "ath_secret_notthisoneatall0123456789abcdefghijkl";
    await writeFile(join(fx.home.dir, "credentials.json"), JSON.stringify(creds));
    const r = await ath(["token", "-g", GW, "--code", code]);
    expect(r.code).toBe(4);
    expect(r.stderr).toStartWith(`ath: [POST] "${GW}/ath/token": 401 INVALID_CLIENT — `);
    expect(r.stderr.split("\n")).toHaveLength(2); // one line
    expect(r.stderr).not.toContain("ath_secret_");
  });
});
