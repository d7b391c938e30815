/**
 * `ath authorize` (Phase B) in process against the real gateway in process (github and gitlab on a scripted provider; the
 * person consents in the gateway's pages, and their browser lands on the CLI's loopback listener): without `--wait` it prints the URL and saves the
 * pending session; with `--wait` it receives the loopback redirect, checks state, exchanges the code and saves the
 * token, leaving no pending session behind when it fails. In the hands of agents and people: json mode never waits
 * unless asked, the browser opener is not awaited, `--timeout` stays within the gateway's 600 s session lifetime, a
 * timeout names the command to re-run, and Ctrl-C drops the pending session it started. `authorize` and `token`
 * take one `--provider`.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { GATEWAY as GW, cliOnGateway, githubAndGitlab, type Sent } from "../../helpers/cli-in-process.ts";
import { setDeps } from "../../../src/cli/kit/deps.ts";
import { run as main } from "../../../src/cli/root.ts";

const fx = cliOnGateway({
  scripted: githubAndGitlab,
  provider: "github",
  scopes: "repo,read:user",
});
const ath = fx.ath;
const wait = (argv: string[], o: Parameters<typeof fx.athWith>[1] = {}) => fx.athWith(argv, o);

/** The last request the CLI sent to `path`. */
const lastTo = (path: string): Sent => fx.sent.filter((q) => q.path === path).at(-1)!;
/** The person consents at the URL the CLI opened; their browser lands on the CLI's loopback redirect URI. */
const redirect = async (url: string): Promise<void> => void (await fx.consentToLoopback(url));

describe("authorize (Phase B)", () => {
  test("authorize without --wait prints the URL and session and saves the pending session; token defaults --session to it", async () => {
    await fx.registered();
    const a = await ath(["authorize", "-g", GW, "--provider", "github", "--scopes", "repo", "--no-wait", "--format", "json"]);
    expect(a.code).toBe(0);
    const res = JSON.parse(a.stdout);
    expect(res.ath_session_id).toMatch(/^ath_sess_/);
    const sent = lastTo("/ath/authorize");
    expect(String(sent.body.state)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sent.body.user_redirect_uri).toBeUndefined();
    const pending = (Object.values((await fx.credentials()).gateways[GW].agents)[0] as { pending: Record<string, unknown> }).pending;
    expect(Object.keys(pending)).toEqual([res.ath_session_id]);

    const t = await ath(["token", "-g", GW, "--code", await fx.consent(res.authorization_url), "--format", "json"]);
    expect(t.code).toBe(0);
    const exchange = lastTo("/ath/token");
    expect(exchange.headers.get("content-type")).toBe("application/json");
    expect(exchange.body.grant_type).toBe("authorization_code");
    expect(exchange.body.ath_session_id).toBe(res.ath_session_id);
    const tok = JSON.parse(t.stdout);
    const agent = Object.values((await fx.credentials()).gateways[GW].agents)[0] as { pending: object; tokens: Record<string, { access_token: string }> };
    expect(agent.pending).toEqual({});
    expect(agent.tokens.github!.access_token).toMatch(/^ath_tk_/);
    // printed shortened, never whole
    expect(tok.access_token).toBe(`${agent.tokens.github!.access_token.slice(0, "ath_tk_".length + 4)}…`);
    expect(tok.effective_scopes).toEqual(["repo"]);
  });

  test("authorize --wait receives the loopback redirect, checks state, exchanges the code and saves the token", async () => {
    await fx.registered();
    let opened = "";
    let browserSaw = 0;
    let foreignState = 0;
    // the opener is not awaited (its failure would not fail the command): what it saw is checked after
    let redirectUri = "";
    let states: unknown[] = [];
    let browserPage = "";
    const r = await wait(["authorize", "-g", GW, "--provider", "github", "--wait", "--format", "json"], {
      openUrl: async (url) => {
        opened = url;
        const sent = lastTo("/ath/authorize");
        const redirect = String(sent.body.user_redirect_uri);
        redirectUri = redirect;
        const [session] = await fx.pendingIds();
        // A response with a foreign state is refused and the CLI keeps waiting.
        foreignState = (await fetch(`${redirect}?code=x&state=${"a".repeat(43)}&ath_session_id=${session}`)).status;
        // the person consents; the browser lands on the loopback with the code and the right state
        const landed = await fx.consentToLoopback(url);
        states = [new URL(landed.url).searchParams.get("state"), String(sent.body.state)];
        browserSaw = landed.status;
        browserPage = landed.body;
      },
    });
    expect(r.code).toBe(0);
    expect(opened).toContain("/ath/consent/");
    expect(redirectUri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(foreignState).toBe(400);
    expect(states[0]).toBe(states[1]);
    expect(browserSaw).toBe(200);
    expect(browserPage).toContain("You can close this tab");
    expect(JSON.parse(r.stdout).scope_intersection.effective).toEqual(["repo", "read:user"]);
    expect(r.stderr).toContain(opened);
  });

  test("authorize --wait listens on the identity's registered port (a server matching redirect URIs exactly accepts it); that port taken, on any free one", async () => {
    await fx.registered();
    const registeredUris = lastTo("/ath/agents/register").body.redirect_uris as string[];
    const waitOnce = async () => {
      let used = "";
      let landedAt = "";
      const r = await wait(["authorize", "-g", GW, "--provider", "github", "--wait", "--format", "json"], {
        openUrl: async (url) => {
          used = String(lastTo("/ath/authorize").body.user_redirect_uri);
          // the gateway sends the browser to the redirect URI the CLI gave, which must be one it registered
          landedAt = new URL((await fx.consentToLoopback(url)).url).origin;
        },
      });
      expect(r.code).toBe(0);
      expect(landedAt).toBe(new URL(used).origin);
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
    let landedError = "" as string | null;
    const r = await wait(["authorize", "-g", GW, "--provider", "github", "--wait", "--format", "json"], {
      // the person presses Deny on the gateway's consent page; the browser lands on the loopback with access_denied
      openUrl: async (url) => void (landedError = new URL((await fx.consentToLoopback(url, "Deny")).url).searchParams.get("error")),
    });
    expect(landedError).toBe("access_denied");
    expect(r.code).toBe(4);
    expect(JSON.parse(r.stdout).error.code).toBe("USER_DENIED");
    expect(fx.sent.some((q) => q.path === "/ath/token")).toBe(false);
    expect(await fx.pendingIds()).toEqual([]); // nothing `ath token` could still exchange
  });

  test("authorize --wait: a failed exchange and a timeout leave no pending session behind", async () => {
    await fx.registered();
    const r = await wait(["authorize", "-g", GW, "--provider", "github", "--wait", "--format", "json"], {
      openUrl: async () => {
        // the loopback gets the right state with a code the gateway never issued: the exchange is refused
        const sent = lastTo("/ath/authorize");
        await fetch(`${sent.body.user_redirect_uri}?code=ath_code_x&state=${sent.body.state}`);
      },
    });
    expect(r.code).toBe(4);
    expect(JSON.parse(r.stdout).error.code).toBe("INVALID_GRANT");
    expect(await fx.pendingIds()).toEqual([]);
    const timedOut = await ath(["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", "1", "--format", "json"]);
    expect(timedOut.code).toBe(1);
    expect(JSON.parse(timedOut.stdout).error.code).toBe("AUTHORIZATION_TIMEOUT");
    expect(await fx.pendingIds()).toEqual([]);
  });

  test("pending sessions older than the gateway's 600 s session lifetime are pruned whenever credentials.json is written", async () => {
    await fx.registered();
    const t0 = Date.now();
    const at = (ms: number) => ({ now: () => ms });
    const first = JSON.parse((await wait(["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"], at(t0))).stdout);
    const second = JSON.parse((await wait(["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"], at(t0 + 599_000))).stdout);
    expect(await fx.pendingIds()).toEqual([first.ath_session_id, second.ath_session_id]);
    const third = JSON.parse((await wait(["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"], at(t0 + 600_000))).stdout);
    expect(await fx.pendingIds()).toEqual([second.ath_session_id, third.ath_session_id]);
  });

  test("authorize before register exits 3 and names `ath register`", async () => {
    const r = await ath(["authorize", "-g", GW, "--provider", "github", "--no-wait"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("ath register");
    expect(fx.sent).toHaveLength(0);
  });
});

describe("the default of --wait", () => {
  beforeEach(() => fx.registered("repo"));

  test("--format json on a terminal prints {authorization_url, ath_session_id} and does not wait or open a browser", async () => {
    let opened = 0;
    const r = await wait(["authorize", "-g", GW, "--provider", "github", "--format", "json"], {
      tty: true,
      openUrl: async () => void opened++,
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ authorization_url: expect.any(String), ath_session_id: expect.stringMatching(/^ath_sess_/) });
    expect(opened).toBe(0);
  });

  test("text mode on a terminal still waits (and opens the browser)", async () => {
    let opened = 0;
    const r = await wait(["authorize", "-g", GW, "--provider", "github", "--timeout", "30"], {
      tty: true,
      openUrl: async (url) => {
        opened++;
        await redirect(url);
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
    const r = await wait(["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", "30", "--format", "json"], {
      openUrl: async (url) => {
        await redirect(url);
        return new Promise<void>(() => {}); // xdg-open waiting for the browser it started
      },
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).provider_id).toBe("github");
  });

  test("json mode: stdout keeps one document; stderr carries the URL, also as a JSON line", async () => {
    const r = await wait(["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", "30", "--format", "json"], {
      openUrl: (url) => redirect(url),
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).access_token).toMatch(/^ath_tk_/);
    const lines = r.stderr.trimEnd().split("\n").filter((l) => l.startsWith("{"));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual({ authorization_url: expect.any(String), ath_session_id: lastTo("/ath/token").body.ath_session_id, redirect_uri: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/callback$/) });
  });

  test("--timeout outside 1..600 s (a timer overflow at 2147484) is a usage error; nothing is sent", async () => {
    const before = fx.sent.length;
    for (const t of ["2147484", "601", "0", "-5", "1.5", "soon"]) {
      const r = await ath(["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", t, "--format", "json"]);
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout).error.message).toContain("from 1 to 600");
    }
    expect(fx.sent.length).toBe(before);
  });

  test("a timeout names the authorize command to re-run, with its gateway and provider", async () => {
    // The clock is the loopback's own timer: the shortest allowed wait, with nobody answering.
    const r = await ath(["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", "1", "--format", "json"]);
    expect(r.code).toBe(1);
    const { error } = JSON.parse(r.stdout);
    expect(error.code).toBe("AUTHORIZATION_TIMEOUT");
    expect(error.message).toContain(`run \`ath authorize -g ${GW} --provider github\` again`);
  });

  test("an interrupt (Ctrl-C) during the wait drops its pending session", async () => {
    let interrupt: ((signal: "SIGINT" | "SIGTERM") => Promise<void>) | undefined;
    let removed = false;
    // the opener is not awaited (its failure would not fail the command): what it saw is checked after
    const seen: { before?: string[]; after?: string[] } = {};
    const restore = setDeps({
      env: { ATH_HOME: fx.home.dir },
      fetch: fx.fetch,
      stdout: () => {},
      stderr: () => {},
      stdinTTY: false,
      stdoutTTY: false,
      stderrTTY: false,
      openUrl: async (url) => {
        seen.before = await fx.pendingIds();
        await interrupt!("SIGINT"); // what the SIGINT handler runs before it exits 130
        seen.after = await fx.pendingIds();
        await redirect(url); // the real handler exits 130 here; in process, let the command end
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
    expect(seen.before).toHaveLength(1);
    expect(seen.after).toEqual([]);
    expect(removed).toBe(true);
  });
});

describe("authorize and token take one --provider", () => {
  beforeEach(() => fx.registered("repo"));

  test("several providers (repeated or a,b) are a usage error, nothing sent", async () => {
    const before = fx.sent.length;
    for (const argv of [
      ["authorize", "-g", GW, "--provider", "github", "--provider", "gitlab", "--no-wait"],
      ["authorize", "-g", GW, "--provider", "github,gitlab", "--no-wait"],
      ["token", "-g", GW, "--code", "ath_code_1", "--provider", "github", "--provider=gitlab"],
      ["token", "-g", GW, "--code", "ath_code_1", "--provider", "github,gitlab"],
    ]) {
      const r = await ath([...argv, "--format", "json"]);
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout).error.message).toContain("takes one --provider");
    }
    expect(fx.sent.length).toBe(before);
  });
});
