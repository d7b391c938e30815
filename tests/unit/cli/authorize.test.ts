/**
 * `authorize --wait` in the hands of agents and people: json mode never waits unless asked, the browser opener
 * is not awaited, `--timeout` stays within the gateway's 600 s session lifetime, a timeout names the command to
 * re-run, and Ctrl-C drops the pending session it started. `authorize` and `token` take one `--provider`.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { GW, fakeGateway, runAth, tempHome, type FakeGateway } from "../../helpers/cli-harness.ts";
import { setDeps } from "../../../src/cli/deps.ts";
import { main } from "../../../src/main.ts";

let home: { dir: string; cleanup: () => Promise<void> };
let gw: FakeGateway;
beforeEach(async () => {
  home = await tempHome();
  gw = fakeGateway();
  expect((await runAth(home.dir, ["register", "-g", GW, "--provider", "github", "--scopes", "repo"], { fetch: gw.fetch })).code).toBe(0);
});
afterEach(() => home.cleanup());

const pending = async () =>
  Object.keys((Object.values(JSON.parse(await readFile(join(home.dir, "credentials.json"), "utf8")).gateways[GW].agents)[0] as { pending: object }).pending);

/** Answers the loopback redirect as the browser would, for the session the fake gateway numbered `n`. */
async function redirect(n: number): Promise<void> {
  const req = gw.requests.find((q) => q.path === "/ath/authorize")!;
  await fetch(`${req.body.user_redirect_uri}?code=ath_code_${n}&state=${req.body.state}&ath_session_id=ath_sess_${n}`);
}

describe("the default of --wait", () => {
  test("--format json on a terminal prints {authorization_url, ath_session_id} and does not wait or open a browser", async () => {
    let opened = 0;
    const r = await runAth(home.dir, ["authorize", "-g", GW, "--provider", "github", "--format", "json"], {
      fetch: gw.fetch,
      tty: true,
      openUrl: async () => void opened++,
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ authorization_url: expect.any(String), ath_session_id: expect.stringMatching(/^ath_sess_/) });
    expect(opened).toBe(0);
  });

  test("text mode on a terminal still waits (and opens the browser)", async () => {
    let opened = 0;
    const r = await runAth(home.dir, ["authorize", "-g", GW, "--provider", "github", "--timeout", "30"], {
      fetch: gw.fetch,
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
  test("completes when the browser opener never exits", async () => {
    const r = await runAth(home.dir, ["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", "30", "--format", "json"], {
      fetch: gw.fetch,
      openUrl: async () => {
        await redirect(2);
        return new Promise<void>(() => {}); // xdg-open waiting for the browser it started
      },
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).provider_id).toBe("github");
  });

  test("json mode: stdout keeps one document; stderr carries the URL, also as a JSON line", async () => {
    const r = await runAth(home.dir, ["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", "30", "--format", "json"], {
      fetch: gw.fetch,
      openUrl: () => redirect(2),
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).access_token).toMatch(/^ath_tk_/);
    const lines = r.stderr.trimEnd().split("\n").filter((l) => l.startsWith("{"));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual({ authorization_url: expect.any(String), ath_session_id: "ath_sess_2", redirect_uri: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/callback$/) });
  });

  test("--timeout outside 1..600 s (a timer overflow at 2147484) is a usage error; nothing is sent", async () => {
    const before = gw.requests.length;
    for (const t of ["2147484", "601", "0", "-5", "1.5", "soon"]) {
      const r = await runAth(home.dir, ["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", t, "--format", "json"], { fetch: gw.fetch });
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout).error.message).toContain("from 1 to 600");
    }
    expect(gw.requests.length).toBe(before);
  });

  test("a timeout names the authorize command to re-run, with its gateway and provider", async () => {
    // The clock is the loopback's own timer: the shortest allowed wait, with nobody answering.
    const r = await runAth(home.dir, ["authorize", "-g", GW, "--provider", "github", "--wait", "--timeout", "1", "--format", "json"], { fetch: gw.fetch });
    expect(r.code).toBe(1);
    const { error } = JSON.parse(r.stdout);
    expect(error.code).toBe("AUTHORIZATION_TIMEOUT");
    expect(error.message).toContain(`run \`ath authorize -g ${GW} --provider github\` again`);
  });

  test("an interrupt (Ctrl-C) during the wait drops its pending session", async () => {
    let interrupt: (() => Promise<void>) | undefined;
    let removed = false;
    const restore = setDeps({
      env: { ATH_HOME: home.dir },
      fetch: gw.fetch,
      stdout: () => {},
      stderr: () => {},
      stdinTTY: false,
      stdoutTTY: false,
      stderrTTY: false,
      openUrl: async () => {
        expect(await pending()).toEqual(["ath_sess_2"]);
        await interrupt!(); // what the SIGINT handler runs before it exits 130
        expect(await pending()).toEqual([]);
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
  test("several providers (repeated or a,b) are a usage error, nothing sent", async () => {
    const before = gw.requests.length;
    for (const argv of [
      ["authorize", "-g", GW, "--provider", "github", "--provider", "gitlab", "--no-wait"],
      ["authorize", "-g", GW, "--provider", "github,gitlab", "--no-wait"],
      ["token", "-g", GW, "--code", "ath_code_1", "--provider", "github", "--provider=gitlab"],
      ["token", "-g", GW, "--code", "ath_code_1", "--provider", "github,gitlab"],
    ]) {
      const r = await runAth(home.dir, [...argv, "--format", "json"], { fetch: gw.fetch });
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout).error.message).toContain("takes one --provider");
    }
    expect(gw.requests.length).toBe(before);
  });
});
