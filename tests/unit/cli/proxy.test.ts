/**
 * `ath proxy` request rules: `-H` names are case-insensitive and replace rather than merge, the two headers ath
 * sets itself cannot be given, no Accept is sent unless asked, a body on GET/HEAD and a malformed header are usage
 * errors (not network errors), and text mode relays the body as it arrives instead of holding it in memory.
 */
import { describe, expect, test } from "bun:test";
import { GW, codeFor, fakeGateway, runAth, tempHome, type FakeGateway, cliFixture } from "../../helpers/cli-harness.ts";
import { setDeps } from "../../../src/cli/deps.ts";
import { main } from "../../../src/main.ts";

const fx = cliFixture();
const ath = fx.ath;

async function withToken(): Promise<void> {
  expect((await ath(["register", "-g", GW, "--provider", "github", "--scopes", "repo"])).code).toBe(0);
  const a = await ath(["authorize", "-g", GW, "--provider", "github", "--no-wait", "--format", "json"]);
  expect((await ath(["token", "-g", GW, "--code", codeFor(JSON.parse(a.stdout).ath_session_id)])).code).toBe(0);
}

describe("-H headers", () => {
  test("a -H Accept replaces the default instead of being merged with it; without -H no Accept is sent", async () => {
    await withToken();
    expect((await ath(["proxy", "github", "GET", "/user", "-g", GW, "-H", "Accept: application/vnd.github+json"])).code).toBe(0);
    expect(fx.gw.proxied[0]!.headers.get("accept")).toBe("application/vnd.github+json");
    expect((await ath(["proxy", "github", "GET", "/user", "-g", GW])).code).toBe(0);
    expect(fx.gw.proxied[1]!.headers.has("accept")).toBe(false);
  });

  test("header names are case-insensitive: -H CONTENT-TYPE keeps --body from adding a second content type; repeats join", async () => {
    await withToken();
    const r = await ath(["proxy", "github", "POST", "/x", "-g", GW, "--body", "{}", "-H", "CONTENT-TYPE: application/merge-patch+json", "-H", "X-A: 1", "-H", "x-a: 2"]);
    expect(r.code).toBe(0);
    expect(fx.gw.proxied[0]!.headers.get("content-type")).toBe("application/merge-patch+json");
    expect(fx.gw.proxied[0]!.headers.get("x-a")).toBe("1, 2");
  });

  test("Authorization and X-ATH-Agent-ID, in any case, are usage errors: the saved token and identity are never altered", async () => {
    await withToken();
    for (const h of ["Authorization: token upstream", "authorization: Bearer x", "X-ATH-Agent-ID: did:key:zother", "x-ath-agent-id: y"]) {
      const r = await ath(["proxy", "github", "GET", "/user", "-g", GW, "-H", h, "--format", "json"]);
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout).error.code).toBe("USAGE");
    }
    expect(fx.gw.proxied).toHaveLength(0);
  });

  test("a header name or value fetch would refuse (CR/LF, controls, spaces in the name) is a usage error, not a network error", async () => {
    await withToken();
    for (const h of ["X-A: a\r\nX-Injected: 1", "X-A: a\u0000b", "Bad Name: v", "X-A: \u2603"]) {
      const r = await ath(["proxy", "github", "GET", "/user", "-g", GW, "-H", h, "--format", "json"]);
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout).error.code).toBe("USAGE");
    }
    expect(fx.gw.proxied).toHaveLength(0);
  });
});

describe("--body", () => {
  test("with GET or HEAD it is a usage error (exit 2) naming the method, nothing sent", async () => {
    await withToken();
    for (const method of ["GET", "head"]) {
      const r = await ath(["proxy", "github", method, "/user", "-g", GW, "--body", "{}", "--format", "json"]);
      expect(r.code).toBe(2);
      const { error } = JSON.parse(r.stdout);
      expect(error.code).toBe("USAGE");
      expect(error.message).toContain(method.toUpperCase());
    }
    expect(fx.gw.proxied).toHaveLength(0);
  });
});

describe("a request fetch refuses to send", () => {
  test("is exit 1 REQUEST_ERROR naming the URL, not exit 5 NETWORK_ERROR", async () => {
    const fetch = async () => {
      throw Object.assign(new TypeError("fetch() request with GET/HEAD method cannot have body."), { code: "ERR_INVALID_ARG_VALUE" });
    };
    const r = await runAth(fx.home.dir, ["discover", "-g", GW, "--format", "json"], { fetch });
    expect(r.code).toBe(1);
    const { error } = JSON.parse(r.stdout);
    expect(error.code).toBe("REQUEST_ERROR");
    expect(error.message).toContain(`"${GW}/.well-known/ath.json"`);
  });
});

describe("text mode streams the body", () => {
  test("each chunk reaches stdout before the next one is read", async () => {
    await withToken();
    const written: string[] = [];
    let pulls = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        // A chunk is asked for only once the previous one was written: a buffering proxy would hang or fail here.
        if (pulls > 0 && written.join("") !== "x".repeat(pulls)) c.error(new Error(`chunk ${pulls} was not written before the next read`));
        else if (pulls === 5) c.close();
        else c.enqueue(new TextEncoder().encode("x"));
        pulls++;
      },
    }, { highWaterMark: 0 });
    const restore = setDeps({
      env: { ATH_HOME: fx.home.dir },
      stdout: (s) => void written.push(typeof s === "string" ? s : new TextDecoder().decode(s)),
      stderr: () => {},
      stdinTTY: false,
      stdoutTTY: false,
      stderrTTY: false,
      fetch: async (input, init) => {
        const url = new Request(input as string, init).url;
        return url.includes("/ath/proxy/") ? new Response(body) : fx.gw.fetch(input, init);
      },
    });
    try {
      expect(await main(["proxy", "github", "GET", "/big", "-g", GW])).toBe(0);
    } finally {
      restore();
    }
    expect(written.join("")).toBe("xxxxx");
  });
});
