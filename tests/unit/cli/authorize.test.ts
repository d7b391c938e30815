/**
 * `ath authorize` (Phase B) in process against a fake gateway: without `--wait` it prints the URL and saves the
 * pending session; with `--wait` it receives the loopback redirect, checks state, exchanges the code and saves the
 * token, leaving no pending session behind when it fails. In the hands of agents and people: json mode never waits
 * unless asked, the browser opener is not awaited, `--timeout` stays within the gateway's 600 s session lifetime, a
 * timeout names the command to re-run, and Ctrl-C drops the pending session it started. `authorize` and `token`
 * take one `--provider`.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { GW, codeFor, runAth, cliFixture } from "../../helpers/cli-harness.ts";
import { setDeps } from "../../../src/cli/kit/deps.ts";
import { run as main } from "../../../src/cli/root.ts";

const fx = cliFixture();
const ath = fx.ath;

/** Answers the loopback redirect as the browser would, for the session the fake gateway numbered `n`. */
async function redirect(n: number): Promise<void> {
  const req = fx.gw.requests.find((q) => q.path === "/ath/authorize")!;
  await fetch(`${req.body.user_redirect_uri}?code=ath_code_${n}&state=${req.body.state}&ath_session_id=ath_sess_${n}`);
}

describe("authorize (Phase B)", () => {
  test("authorize without --wait prints the URL and session and saves the pending session; token defaults --session to it", async () => {
    await fx.registered();
    const a = await ath(["authorize", "-g", GW, "--provider", "github", "--scopes", "repo", "--no-wait", "--format", "json"]);
    expect(a.code).toBe(0);
    const res = JSON.parse(a.stdout);
    expect(res.ath_session_id).toMatch(/^ath_sess_/);
    const sent = fx.gw.requests.find((q) => q.path === "/ath/authorize")!;
    expect(String(sent.body.state)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sent.body.user_redirect_uri).toBeUndefined();
    const pending = (Object.values((await fx.credentials()).gateways[GW].agents)[0] as { pending: Record<string, unknown> }).pending;
    expect(Object.keys(pending)).toEqual([res.ath_session_id]);

    const t = await ath(["token", "-g", GW, "--code", codeFor(res.ath_session_id), "--format", "json"]);
    expect(t.code).toBe(0);
    const exchange = fx.gw.requests.find((q) => q.path === "/ath/token")!;
    expect(exchange.contentType).toBe("application/json");
    expect(exchange.body.grant_type).toBe("authorization_code");
    expect(exchange.body.ath_session_id).toBe(res.ath_session_id);
    const tok = JSON.parse(t.stdout);
    expect(tok.access_token).toBe("ath_tk_toke…");
    expect(tok.effective_scopes).toEqual(["repo"]);
    const agent = Object.values((await fx.credentials()).gateways[GW].agents)[0] as { pending: object; tokens: Record<string, { access_token: string }> };
    expect(agent.pending).toEqual({});
    expect(agent.tokens.github!.access_token).toMatch(/^ath_tk_tokenvalue/);
  });

  test("authorize --wait receives the loopback redirect, checks state, exchanges the code and saves the token", async () => {
    await fx.registered();
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

  test("authorize --wait listens on the identity's registered port (a server matching redirect URIs exactly accepts it); that port taken, on any free one", async () => {
    await fx.registered();
    const registeredUris = fx.gw.requests.find((q) => q.path === "/ath/agents/register")!.body.redirect_uris as string[];
    const waitOnce = async () => {
      let used = "";
      const r = await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--wait", "--format", "json"], {
        fetch: fx.gw.fetch,
        openUrl: async () => {
          const sent = fx.gw.requests.filter((q) => q.path === "/ath/authorize").at(-1)!;
          used = String(sent.body.user_redirect_uri);
          const session = (await fx.pendingIds()).at(-1)!;
          await fetch(`${used}?code=${codeFor(session)}&state=${sent.body.state}&ath_session_id=${session}`);
        },
      });
      expect(r.code).toBe(0);
      return used;
    };
    const first = await waitOnce();
    expect(registeredUris).toContain(first); // exactly as registered, port included
    const port = Number(new URL(first).port);
    const squatter = Bun.serve({ hostname: "127.0.0.1", port, fetch: () => new Response("another program") });
    try {
      const second = await waitOnce();
      expect(Number(new URL(second).port)).not.toBe(port); // any free port (the port-less URI's any-port rule)
    } finally {
      squatter.stop(true);
    }
  });

  test("authorize --wait: the user denying exits 4 USER_DENIED and saves no token", async () => {
    await fx.registered();
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
    expect(await fx.pendingIds()).toEqual([]); // nothing `ath token` could still exchange
  });

  test("authorize --wait: a failed exchange and a timeout leave no pending session behind", async () => {
    await fx.registered();
    const r = await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--wait", "--format", "json"], {
      fetch: fx.gw.fetch,
      openUrl: async () => {
        const sent = fx.gw.requests.find((q) => q.path === "/ath/authorize")!;
        fx.gw.tokenError = { status: 403, code: "SCOPE_NOT_APPROVED", message: "A requested scope is not approved" };
        await fetch(`${sent.body.user_redirect_uri}?code=ath_code_x&state=${sent.body.state}`);
      },
    });
    expect(r.code).toBe(4);
    expect(await fx.pendingIds()).toEqual([]);
    const timedOut = await ath(["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", "1", "--format", "json"]);
    expect(timedOut.code).toBe(1);
    expect(JSON.parse(timedOut.stdout).error.code).toBe("AUTHORIZATION_TIMEOUT");
    expect(await fx.pendingIds()).toEqual([]);
  });

  test("pending sessions older than the gateway's 600 s session lifetime are pruned whenever credentials.json is written", async () => {
    await fx.registered();
    const t0 = Date.now();
    const at = (ms: number) => ({ fetch: fx.gw.fetch, now: () => ms });
    const first = JSON.parse((await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"], at(t0))).stdout);
    const second = JSON.parse((await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"], at(t0 + 599_000))).stdout);
    expect(await fx.pendingIds()).toEqual([first.ath_session_id, second.ath_session_id]);
    const third = JSON.parse((await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"], at(t0 + 600_000))).stdout);
    expect(await fx.pendingIds()).toEqual([second.ath_session_id, third.ath_session_id]);
  });

  test("authorize before register exits 3 and names `ath register`", async () => {
    const r = await ath(["authorize", "-g", GW, "--provider", "github", "--no-wait"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("ath register");
    expect(fx.gw.requests).toHaveLength(0);
  });
});

describe("the default of --wait", () => {
  beforeEach(() => fx.registered("repo"));

  test("--format json on a terminal prints {authorization_url, ath_session_id} and does not wait or open a browser", async () => {
    let opened = 0;
    const r = await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--format", "json"], {
      fetch: fx.gw.fetch,
      tty: true,
      openUrl: async () => void opened++,
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ authorization_url: expect.any(String), ath_session_id: expect.stringMatching(/^ath_sess_/) });
    expect(opened).toBe(0);
  });

  test("text mode on a terminal still waits (and opens the browser)", async () => {
    let opened = 0;
    const r = await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--timeout", "30"], {
      fetch: fx.gw.fetch,
      tty: true,
      openUrl: async () => {
        opened++;
        await redirect(2);
      },
    });
    expect(r.code).toBe(0);
    expect(opened).toBe(1);
    expect(r.stdout).toContain("token for github saved");
  });
});

describe("authorize --wait", () => {
  beforeEach(() => fx.registered("repo"));

  test("completes when the browser opener never exits", async () => {
    const r = await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", "30", "--format", "json"], {
      fetch: fx.gw.fetch,
      openUrl: async () => {
        await redirect(2);
        return new Promise<void>(() => {}); // xdg-open waiting for the browser it started
      },
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).provider_id).toBe("github");
  });

  test("json mode: stdout keeps one document; stderr carries the URL, also as a JSON line", async () => {
    const r = await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", "30", "--format", "json"], {
      fetch: fx.gw.fetch,
      openUrl: () => redirect(2),
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).access_token).toMatch(/^ath_tk_/);
    const lines = r.stderr.trimEnd().split("\n").filter((l) => l.startsWith("{"));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual({ authorization_url: expect.any(String), ath_session_id: "ath_sess_2", redirect_uri: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/callback$/) });
  });

  test("--timeout outside 1..600 s (a timer overflow at 2147484) is a usage error; nothing is sent", async () => {
    const before = fx.gw.requests.length;
    for (const t of ["2147484", "601", "0", "-5", "1.5", "soon"]) {
      const r = await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", t, "--format", "json"], { fetch: fx.gw.fetch });
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout).error.message).toContain("from 1 to 600");
    }
    expect(fx.gw.requests.length).toBe(before);
  });

  test("a timeout names the authorize command to re-run, with its gateway and provider", async () => {
    // The clock is the loopback's own timer: the shortest allowed wait, with nobody answering.
    const r = await runAth(fx.home.dir, ["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", "1", "--format", "json"], { fetch: fx.gw.fetch });
    expect(r.code).toBe(1);
    const { error } = JSON.parse(r.stdout);
    expect(error.code).toBe("AUTHORIZATION_TIMEOUT");
    expect(error.message).toContain(`run \`ath authorize -g ${GW} --provider github\` again`);
  });

  test("an interrupt (Ctrl-C) during the wait drops its pending session", async () => {
    let interrupt: ((signal: "SIGINT" | "SIGTERM") => Promise<void>) | undefined;
    let removed = false;
    const restore = setDeps({
      env: { ATH_HOME: fx.home.dir },
      fetch: fx.gw.fetch,
      stdout: () => {},
      stderr: () => {},
      stdinTTY: false,
      stdoutTTY: false,
      stderrTTY: false,
      openUrl: async () => {
        expect(await fx.pendingIds()).toEqual(["ath_sess_2"]);
        await interrupt!("SIGINT"); // what the SIGINT handler runs before it exits 130
        expect(await fx.pendingIds()).toEqual([]);
        await redirect(2); // the real handler exits 130 here; in process, let the command end
      },
      onInterrupt: (cleanup) => {
        interrupt = cleanup;
        return () => void (removed = true);
      },
    });
    try {
      await main(["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", "30"]);
    } finally {
      restore();
    }
    expect(interrupt).toBeDefined();
    expect(removed).toBe(true);
  });
});

describe("authorize and token take one --provider", () => {
  beforeEach(() => fx.registered("repo"));

  test("several providers (repeated or a,b) are a usage error, nothing sent", async () => {
    const before = fx.gw.requests.length;
    for (const argv of [
      ["authorize", "-g", GW, "--provider", "github", "--provider", "gitlab", "--no-wait"],
      ["authorize", "-g", GW, "--provider", "github,gitlab", "--no-wait"],
      ["token", "-g", GW, "--code", "ath_code_1", "--provider", "github", "--provider=gitlab"],
      ["token", "-g", GW, "--code", "ath_code_1", "--provider", "github,gitlab"],
    ]) {
      const r = await runAth(fx.home.dir, [...argv, "--format", "json"], { fetch: fx.gw.fetch });
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout).error.message).toContain("takes one --provider");
    }
    expect(fx.gw.requests.length).toBe(before);
  });
});
