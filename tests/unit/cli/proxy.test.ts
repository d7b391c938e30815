/**
 * `ath proxy` in process against the real gateway in process (providers github and gitlab on a scripted provider, whose
 * API answers what each test needs): it sends the saved bearer token, relays the upstream answer (text:
 * its bytes as they arrive; json: `{status, headers, body}`), exits 1 for an upstream ≥ 400 and 4 only when the
 * gateway itself refused (X-ATH-Error), and 3 before any request without a live token. Request rules: `-H` names
 * are case-insensitive and replace rather than merge, the two headers ath sets itself cannot be given, no Accept is
 * sent unless asked, and a body on GET/HEAD or a malformed header is a usage error (not a network error).
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { runAth } from "../../helpers/cli-harness.ts";
import { GATEWAY as GW, cliOnGateway, githubAndGitlab } from "../../helpers/cli-in-process.ts";
import { setDeps } from "../../../src/cli/kit/deps.ts";
import { run as main } from "../../../src/cli/root.ts";

const fx = cliOnGateway({
  scripted: githubAndGitlab,
  provider: "github",
  scopes: "repo,read:user",
});
const ath = fx.ath;

/** What the upstream answers at `…/binary`: bytes that are not UTF-8 (a lone 0xff, a NUL, a cut sequence). */
const BINARY_BODY = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe, 0xe2, 0x82]);

beforeEach(() => {
  const { routes } = fx.p;
  routes.set("/missing", () => Response.json({ message: "Not Found" }, { status: 404 }));
  routes.set("/binary", () => new Response(BINARY_BODY, { headers: { "content-type": "application/octet-stream" } }));
  routes.set("/plain", () => new Response("no newline at the end", { headers: { "content-type": "text/plain" } }));
  // An upstream error whose body looks like an ATH error: the gateway relays it marked X-ATH-Upstream.
  routes.set("/lookalike", () => Response.json({ code: "TOKEN_REVOKED", message: "upstream: your upstream token was revoked" }, { status: 401 }));
});

/** The proxy requests the CLI sent, as they left it. */
const proxied = () => fx.sent.filter((r) => r.path.startsWith("/ath/proxy/"));

describe("proxy", () => {
  test("proxy sends the saved bearer token, the JSON body and extra headers; json mode wraps status, headers and parsed body", async () => {
    await fx.authorized();
    const r = await ath(["proxy", "-g", GW, "github", "post", "/v1/items?x=1", "--body", '{"a":1}', "-H", "X-Trace: 7", "--format", "json"]);
    expect(r.code).toBe(0);
    const sent = proxied()[0]!;
    expect(sent.path).toBe("/ath/proxy/github/v1/items?x=1");
    const saved = (Object.values((await fx.credentials()).gateways[GW].agents)[0] as { tokens: { github: { access_token: string; token_type: string } } }).tokens.github;
    expect(saved.access_token).toMatch(/^ath_tk_/);
    expect(sent.headers.get("authorization")).toBe(`${saved.token_type} ${saved.access_token}`);
    // what the provider's API received through the gateway
    const seen = fx.p.api[0]!;
    expect(seen.headers["x-trace"]).toBe("7");
    expect(seen.headers["content-type"]).toBe("application/json");
    const doc = JSON.parse(r.stdout);
    expect(doc.status).toBe(200);
    expect(doc.body).toEqual({ method: "POST", path: "/v1/items", query: "?x=1", body: '{"a":1}' });
  });

  test("an upstream answer ≥ 400: body on stdout, `ath: HTTP 404` on stderr, exit 1", async () => {
    await fx.authorized();
    const r = await ath(["proxy", "-g", GW, "github", "GET", "/missing"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ message: "Not Found" });
    expect(r.stderr).toBe("ath: HTTP 404\n");
    const j = await ath(["proxy", "-g", GW, "github", "GET", "/missing", "--format", "json"]);
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stdout).status).toBe(404); // exactly one JSON document
  });

  test("a token the gateway refuses at the proxy exits 4 with its code and names `ath authorize`", async () => {
    await fx.authorized();
    const saved = Object.values((await fx.credentials()).gateways[GW].agents)[0] as { client_id: string; client_secret: string; tokens: { github: { access_token: string } } };
    const revoked = await fx.g.fetch("/ath/revoke", {
      method: "POST",
      body: new URLSearchParams({ client_id: saved.client_id, client_secret: saved.client_secret, token: saved.tokens.github.access_token }),
    });
    expect(revoked.status).toBe(200);
    const r = await ath(["proxy", "-g", GW, "github", "GET", "/v1/items", "--format", "json"]);
    expect(r.code).toBe(4);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 401, body: { code: "TOKEN_REVOKED" } }); // one document: the relayed answer
    const text = await ath(["proxy", "-g", GW, "github", "GET", "/v1/items"]);
    expect(text.code).toBe(4);
    expect(text.stderr).toContain("401 TOKEN_REVOKED");
    expect(text.stderr).toContain("ath authorize");
  });

  test("text mode writes the upstream body's bytes unchanged: binary-safe, no newline added", async () => {
    await fx.authorized();
    const bin = await ath(["proxy", "-g", GW, "github", "GET", "/binary"]);
    expect(bin.code).toBe(0);
    expect(bin.stdoutBytes).toEqual(BINARY_BODY);
    const plain = await ath(["proxy", "-g", GW, "github", "GET", "/plain"]);
    expect(plain.stdoutBytes).toEqual(new TextEncoder().encode("no newline at the end"));
  });

  test("json mode: a non-UTF-8 body is base64 with body_encoding \"base64\"; text stays a string, JSON is parsed", async () => {
    await fx.authorized();
    const bin = JSON.parse((await ath(["proxy", "-g", GW, "github", "GET", "/binary", "--format", "json"])).stdout);
    expect(bin).toMatchObject({ status: 200, body_encoding: "base64" });
    expect(new Uint8Array(Buffer.from(bin.body, "base64"))).toEqual(BINARY_BODY);
    const plain = JSON.parse((await ath(["proxy", "-g", GW, "github", "GET", "/plain", "--format", "json"])).stdout);
    expect(plain).toMatchObject({ status: 200, body: "no newline at the end" });
    expect(plain.body_encoding).toBeUndefined();
  });

  test("a 401 with an ATH token-refusal body and neither X-ATH-Error nor X-ATH-Upstream (a gateway that marks neither) is a refusal: exit 4", async () => {
    await fx.authorized();
    // Only a scripted answer shows this: the real gateway marks its refusals. A gateway that marks neither (the
    // official SDK's) answers its refusal as an ATH error body alone.
    const unmarkedRefusal = async (input: string | URL | Request, init?: RequestInit) =>
      new Request(input, init).url.includes("/ath/proxy/") ? Response.json({ code: "TOKEN_REVOKED", message: "The access token has been revoked" }, { status: 401 }) : fx.fetch(input, init);
    const r = await fx.athWith(["proxy", "-g", GW, "github", "GET", "/v1/items", "--format", "json"], { fetch: unmarkedRefusal as never });
    expect(r.code).toBe(4);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 401, body: { code: "TOKEN_REVOKED" } });
  });

  test("an upstream ≥ 400 whose body looks like an ATH error exits 1 UPSTREAM_ERROR: ath serve marked it as the provider's answer", async () => {
    await fx.authorized();
    const r = await ath(["proxy", "-g", GW, "github", "GET", "/lookalike"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ code: "TOKEN_REVOKED", message: "upstream: your upstream token was revoked" });
    expect(r.stderr).toBe("ath: HTTP 401\n");
    const j = await ath(["proxy", "-g", GW, "github", "GET", "/lookalike", "--format", "json"]);
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stdout)).toMatchObject({ status: 401, body: { code: "TOKEN_REVOKED" } });
  });

  test("an expired saved token with no refresh token exits 3 before any request", async () => {
    await fx.authorized();
    // a token from a gateway that gives no refresh tokens: nothing to renew it with
    const creds = await fx.credentials();
    const token = (Object.values(creds.gateways[GW].agents)[0] as { tokens: { github: Record<string, unknown> } }).tokens.github;
    delete token.refresh_token;
    delete token.refresh_expires_at;
    await writeFile(join(fx.home.dir, "credentials.json"), JSON.stringify(creds));
    const later = Date.now() + 2 * 3600_000;
    const r = await fx.athWith(["proxy", "-g", GW, "github", "GET", "/v1/items"], { now: () => later });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("expired");
    expect(r.stderr).toContain("ath authorize");
    expect(proxied()).toHaveLength(0);
    expect(fx.p.api).toHaveLength(0);
  });
});

describe("-H headers", () => {
  test("a -H Accept replaces the default instead of being merged with it; without -H no Accept is sent", async () => {
    await fx.authorized("repo");
    expect((await ath(["proxy", "github", "GET", "/user", "-g", GW, "-H", "Accept: application/vnd.github+json"])).code).toBe(0);
    expect(proxied()[0]!.headers.get("accept")).toBe("application/vnd.github+json");
    expect(fx.p.api[0]!.headers.accept).toBe("application/vnd.github+json");
    expect((await ath(["proxy", "github", "GET", "/user", "-g", GW])).code).toBe(0);
    expect(proxied()[1]!.headers.has("accept")).toBe(false);
  });

  test("header names are case-insensitive: -H CONTENT-TYPE keeps --body from adding a second content type; repeats join", async () => {
    await fx.authorized("repo");
    const r = await ath(["proxy", "github", "POST", "/x", "-g", GW, "--body", "{}", "-H", "CONTENT-TYPE: application/merge-patch+json", "-H", "X-A: 1", "-H", "x-a: 2"]);
    expect(r.code).toBe(0);
    expect(proxied()[0]!.headers.get("content-type")).toBe("application/merge-patch+json");
    expect(proxied()[0]!.headers.get("x-a")).toBe("1, 2");
    expect(fx.p.api[0]!.headers["content-type"]).toBe("application/merge-patch+json");
    expect(fx.p.api[0]!.headers["x-a"]).toBe("1, 2");
  });

  test("Authorization and X-ATH-Agent-ID, in any case, are usage errors: the saved token and identity are never altered", async () => {
    await fx.authorized("repo");
    for (const h of ["Authorization: token upstream", "authorization: Bearer x", "X-ATH-Agent-ID: did:key:zother", "x-ath-agent-id: y"]) {
      const r = await ath(["proxy", "github", "GET", "/user", "-g", GW, "-H", h, "--format", "json"]);
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout).error.code).toBe("USAGE");
    }
    expect(proxied()).toHaveLength(0);
  });

  test("--approval sends X-ATH-Approval; a value that is not an approval id is a usage error, nothing sent", async () => {
    await fx.authorized();
    const ok = await ath(["proxy", "-g", GW, "github", "POST", "/v1/items", "--body", "{}", "--approval", "ath_apr_abc-DEF_123", "--format", "json"]);
    expect(ok.code).toBe(0);
    expect(proxied()[0]!.headers.get("x-ath-approval")).toBe("ath_apr_abc-DEF_123");
    const bad = await ath(["proxy", "-g", GW, "github", "POST", "/v1/items", "--body", "{}", "--approval", "apr\r\nX: y", "--format", "json"]);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout).error.code).toBe("USAGE");
    expect(proxied()).toHaveLength(1);
  });

  test("a header name or value fetch would refuse (CR/LF, controls, spaces in the name) is a usage error, not a network error", async () => {
    await fx.authorized("repo");
    for (const h of ["X-A: a\r\nX-Injected: 1", "X-A: a\u0000b", "Bad Name: v", "X-A: \u2603"]) {
      const r = await ath(["proxy", "github", "GET", "/user", "-g", GW, "-H", h, "--format", "json"]);
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout).error.code).toBe("USAGE");
    }
    expect(proxied()).toHaveLength(0);
  });
});

describe("--body", () => {
  test("with GET or HEAD it is a usage error (exit 2) naming the method, nothing sent", async () => {
    await fx.authorized("repo");
    for (const method of ["GET", "head"]) {
      const r = await ath(["proxy", "github", method, "/user", "-g", GW, "--body", "{}", "--format", "json"]);
      expect(r.code).toBe(2);
      const { error } = JSON.parse(r.stdout);
      expect(error.code).toBe("USAGE");
      expect(error.message).toContain(method.toUpperCase());
    }
    expect(proxied()).toHaveLength(0);
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
    await fx.authorized("repo");
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
        return url.includes("/ath/proxy/") ? new Response(body) : fx.fetch(input, init);
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

describe("--body @file and --body - (stdin), and what a person's terminal shows", () => {
  test("@file sends the file's contents; - sends stdin; a non-JSON body needs its Content-Type", async () => {
    await fx.authorized();
    const file = `${fx.home.dir}/issue.json`;
    await Bun.write(file, '{"title":"from a file"}');
    const fromFile = await ath(["proxy", "-g", GW, "github", "POST", "/v1/items", "--body", `@${file}`, "--format", "json"]);
    expect(fromFile.code).toBe(0);
    expect(JSON.parse(JSON.parse(fromFile.stdout).body.body)).toEqual({ title: "from a file" });

    const piped = await fx.athWith(["proxy", "-g", GW, "github", "PUT", "/v1/items", "--body", "-", "--format", "json"], { stdin: '{"title":"from stdin"}' });
    expect(piped.code).toBe(0);
    expect(JSON.parse(piped.stdout).body).toMatchObject({ method: "PUT", body: '{"title":"from stdin"}' });

    const notJson = await fx.athWith(["proxy", "-g", GW, "github", "POST", "/v1/items", "--body", "-"], { stdin: "a=1&b=2" });
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toContain("-H 'Content-Type: …'");
    const typed = await fx.athWith(["proxy", "-g", GW, "github", "POST", "/v1/items", "--body", "-", "-H", "Content-Type: application/x-www-form-urlencoded", "--format", "json"], {
      stdin: "a=1&b=2",
    });
    expect(typed.code).toBe(0);
    expect(fx.p.api.at(-1)!.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(JSON.parse(typed.stdout).body.body).toBe("a=1&b=2");

    const missing = await ath(["proxy", "-g", GW, "github", "POST", "/v1/items", "--body", "@/nonexistent/body.json"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("cannot read /nonexistent/body.json: no such file");
  });

  test("on a terminal JSON is pretty-printed and text ends with a newline; piped, the bytes are unchanged", async () => {
    await fx.authorized();
    const tty = await ath(["proxy", "-g", GW, "github", "GET", "/v1/items"], true);
    expect(tty.code).toBe(0);
    const piped = await ath(["proxy", "-g", GW, "github", "GET", "/v1/items"]);
    expect(tty.stdout).toBe(`${JSON.stringify(JSON.parse(piped.stdout), null, 2)}\n`);
    expect(piped.stdout).not.toEndWith("\n");
    expect((await ath(["proxy", "-g", GW, "github", "GET", "/plain"], true)).stdout).toBe("no newline at the end\n");
    // binary on a terminal is data too (DESIGN §14): decoded lossily and sanitized, never raw control bytes
    expect((await ath(["proxy", "-g", GW, "github", "GET", "/binary"], true)).stdout).toBe("\ufffdPNG\ufffd\n\ufffd\n\ufffd\ufffd\ufffd\ufffd\n");
  });
});
