/**
 * `ath token` (Phase B) exchanges the code of the pending session (form-encoded, RFC 6749 §4.1.3), forgets a
 * session the gateway says is dead and keeps one a wrong code may retry. It never guesses which session a code
 * belongs to (a code sent against another session answers `authorization_pending`, which agents poll on), and a
 * re-run with a code this home already exchanged sends nothing: it prints the saved token with `already_exchanged`.
 */
import { describe, expect, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { GW, codeFor, runAth, cliFixture } from "../../helpers/cli-harness.ts";

const fx = cliFixture();
const ath = fx.ath;
const tokenCalls = () => fx.gw.requests.filter((q) => q.path === "/ath/token").length;

async function startTwo(): Promise<[string, string]> {
  expect((await ath(["register", "-g", GW, "--provider", "github,gitlab", "--scopes", "repo"])).code).toBe(0);
  const first = JSON.parse((await ath(["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"])).stdout).ath_session_id;
  const second = JSON.parse((await ath(["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"])).stdout).ath_session_id;
  return [first, second];
}

describe("token without --session", () => {
  test("several live pending sessions: exit 3 AMBIGUOUS_SESSION listing them, nothing sent", async () => {
    const [first, second] = await startTwo();
    for (const tty of [false, true]) {
      const r = await ath(["token", "-g", GW, "--code", codeFor(second), "--format", "json"], tty);
      expect(r.code).toBe(3);
      const { error } = JSON.parse(r.stdout);
      expect(error.code).toBe("AMBIGUOUS_SESSION");
      expect(error.message).toContain("pass --session");
      expect(error.details.sessions.map((s: { ath_session_id: string }) => s.ath_session_id).sort()).toEqual([first, second].sort());
      const text = await ath(["token", "-g", GW, "--code", codeFor(second)], tty);
      expect(text.code).toBe(3);
      expect(text.stderr).toContain(first);
      expect(text.stderr).toContain(second);
    }
    expect(tokenCalls()).toBe(0);
  });

  test("--provider narrows the candidates to that provider's sessions", async () => {
    const [, second] = await startTwo();
    const lab = JSON.parse((await ath(["authorize", "-g", GW, "--provider", "gitlab", "--scopes", "repo", "--no-wait", "--format", "json"])).stdout);
    const r = await ath(["token", "-g", GW, "--code", codeFor(lab.ath_session_id), "--provider", "gitlab", "--format", "json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).provider_id).toBe("gitlab");
    expect((await ath(["token", "-g", GW, "--code", codeFor(second), "--provider", "github"])).code).toBe(3);
  });
});

describe("a code this home already exchanged", () => {
  test("re-running `token --code C` sends nothing, not even against another pending session, and prints the saved token", async () => {
    const [, second] = await startTwo();
    const code = codeFor(second);
    const first = await ath(["token", "-g", GW, "--code", code, "--session", second, "--format", "json"]);
    expect(first.code).toBe(0);
    expect(tokenCalls()).toBe(1);
    // The abandoned first session is now the only pending one: without the record, C would be sent against it.
    for (const argv of [["--format", "json"], ["--session", second, "--format", "json"]]) {
      const again = await ath(["token", "-g", GW, "--code", code, ...argv]);
      expect(again.code).toBe(0);
      const doc = JSON.parse(again.stdout);
      expect(doc).toMatchObject({ already_exchanged: true, provider_id: "github", token_type: "Bearer", effective_scopes: ["repo"] });
      expect(doc.access_token).toBe(JSON.parse(first.stdout).access_token);
      expect(doc.expires_at).toBe(JSON.parse(first.stdout).expires_at);
    }
    const text = await ath(["token", "-g", GW, "--code", code]);
    expect(text.code).toBe(0);
    expect(text.stderr).toContain("already exchanged");
    expect(tokenCalls()).toBe(1);
    // The code itself is never stored, only its hash.
    expect(await readFile(join(fx.home.dir, "credentials.json"), "utf8")).not.toContain(code);
  });

  test("once its token is revoked, a re-run exits 3 CODE_ALREADY_EXCHANGED naming `ath authorize`, nothing sent", async () => {
    const [, second] = await startTwo();
    expect((await ath(["token", "-g", GW, "--code", codeFor(second), "--session", second])).code).toBe(0);
    expect((await ath(["revoke", "-g", GW, "--provider", "github"])).code).toBe(0);
    const r = await ath(["token", "-g", GW, "--code", codeFor(second), "--format", "json"]);
    expect(r.code).toBe(3);
    const { error } = JSON.parse(r.stdout);
    expect(error.code).toBe("CODE_ALREADY_EXCHANGED");
    expect(error.message).toContain(`ath authorize -g ${GW} --provider github`);
    expect(tokenCalls()).toBe(1);
  });

  test("a code exchanged by `authorize --wait` is recorded too", async () => {
    expect((await ath(["register", "-g", GW, "--provider", "github", "--scopes", "repo"])).code).toBe(0);
    const r = await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", "30", "--format", "json"], {
      fetch: fx.gw.fetch,
      openUrl: async () => {
        const req = fx.gw.requests.find((q) => q.path === "/ath/authorize")!;
        await fetch(`${req.body.user_redirect_uri}?code=ath_code_2&state=${req.body.state}&ath_session_id=ath_sess_2`);
      },
    });
    expect(r.code).toBe(0);
    const again = await ath(["token", "-g", GW, "--code", "ath_code_2", "--format", "json"]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).already_exchanged).toBe(true);
    expect(tokenCalls()).toBe(1);
  });
});

describe("token (Phase B)", () => {
  test("token without --session takes the only unexpired pending session; none → exit 3 NO_PENDING_SESSION, nothing sent", async () => {
    await fx.registered();
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
    expect(await fx.pendingIds()).toEqual([]); // exchanged: forgotten
  });

  test("token: a dead session (SESSION_EXPIRED) is forgotten; a wrong code keeps the session for another try", async () => {
    await fx.registered();
    const a = JSON.parse((await ath(["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"])).stdout);
    expect((await ath(["token", "-g", GW, "--code", "ath_code_wrong"])).code).toBe(4);
    expect(await fx.pendingIds()).toEqual([a.ath_session_id]);
    fx.gw.tokenError = { status: 400, code: "SESSION_EXPIRED", message: "The authorization session has expired" };
    expect((await ath(["token", "-g", GW, "--code", codeFor(a.ath_session_id)])).code).toBe(4);
    expect(await fx.pendingIds()).toEqual([]);
  });

  test("a refused token exchange exits 4 with the gateway's code and an ofetch-style message", async () => {
    await fx.registered();
    await ath(["authorize", "-g", GW, "--provider", "github", "--no-wait"]);
    fx.gw.tokenError = { status: 401, code: "INVALID_CLIENT", message: "Client authentication failed" };
    const r = await ath(["token", "-g", GW, "--code", "whatever"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toBe(`ath: [POST] "${GW}/ath/token": 401 INVALID_CLIENT — Client authentication failed\n`);
  });
});
