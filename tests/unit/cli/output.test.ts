/**
 * What reaches the terminal and stdout: server text is one printable line (no escape sequences, no forged lines,
 * an HTML page summarised), answers are read up to 1 MiB, and redirects and TLS failures are explained.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { runAth, tempHome } from "../../helpers/cli-harness.ts";

/** The gateway's address; nothing listens there — every test gives the one answer it needs as the fetch. */
const GW = "http://127.0.0.1:8787";
import { httpError } from "../../../src/agent/http.ts";

let home: { dir: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  home = await tempHome();
});
afterEach(() => home.cleanup());

const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

describe("server text reaching the terminal", () => {
  test("a gateway message cannot send escape sequences, BEL, CR or extra lines to stderr", async () => {
    const fetch = async () => Response.json({ code: "INVALID_REQUEST", message: "x\u001b]0;PWNED\u0007\u001b[2Jy\r\nsecond line\u009b31m" }, { status: 400 });
    const r = await runAth(home.dir, ["discover", "-g", GW], { fetch });
    expect(r.code).toBe(4);
    expect(r.stderr).not.toMatch(CONTROL);
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain("second line");
  });

  test("an HTML error page is summarised on one line: its text, without tags", async () => {
    const fetch = async () => new Response("<html>\n<head><style>h1{}</style></head>\n<h1>502 Bad Gateway</h1>\n</html>\n", { status: 502, headers: { "content-type": "text/html" } });
    for (const format of ["text", "json"]) {
      const r = await runAth(home.dir, ["discover", "-g", GW, "--format", format], { fetch });
      expect(r.code).toBe(1);
      const message = format === "json" ? JSON.parse(r.stdout).error.message : r.stderr;
      expect(message.trimEnd().split("\n")).toHaveLength(1);
      expect(message).toContain(": 502 — 502 Bad Gateway");
      expect(message).not.toContain("<h1>");
    }
  });

  test("a server's text in a table (discover's display name) cannot add rows or control the terminal, piped or not", async () => {
    const doc = {
      ath_version: "0.1",
      gateway_id: "gw\u001b]0;x\u0007",
      agent_registration_endpoint: `${GW}/ath/agents/register`,
      supported_providers: [{ provider_id: "p", display_name: "Evil\nforged\trow\u001b[2J", available_scopes: ["a"], auth_mode: "OAUTH2", agent_approval_required: true }],
    };
    for (const tty of [false, true]) {
      const r = await runAth(home.dir, ["discover", "-g", GW], { fetch: async () => Response.json(doc), tty });
      expect(r.code).toBe(0);
      expect(r.stdout.replace(/\u001b\[[0-9;]*m/g, "")).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
      expect(r.stdout.trimEnd().split("\n")).toHaveLength(tty ? 3 : 1);
    }
  });

  test("a message of ath's own with a control character from a file or flag is made printable too", async () => {
    const r = await runAth(home.dir, ["discover", "-g", "bad\u001b[2Jname"]);
    expect(r.code).toBe(3);
    expect(r.stderr).not.toMatch(CONTROL);
  });
});

describe("answers the CLI does not expect", () => {
  test("an ATH answer larger than 1 MiB is refused (exit 1 INVALID_RESPONSE) without reading it all", async () => {
    let sent = 0;
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    const fetch = async () =>
      new Response(
        new ReadableStream<Uint8Array>(
          {
            pull(c) {
              if (sent >= 8 * 1024 * 1024) return c.close();
              sent += chunk.byteLength;
              c.enqueue(chunk);
            },
          },
          { highWaterMark: 0 },
        ),
      );
    const r = await runAth(home.dir, ["discover", "-g", GW, "--format", "json"], { fetch });
    expect(r.code).toBe(1);
    const { error } = JSON.parse(r.stdout);
    expect(error.code).toBe("INVALID_RESPONSE");
    expect(error.message).toContain("larger than 1048576 bytes");
    expect(sent).toBeLessThan(2 * 1024 * 1024);
    const declared = await runAth(home.dir, ["discover", "-g", GW, "--format", "json"], {
      fetch: async () => new Response("{}", { headers: { "content-length": String(5 * 1024 * 1024) } }),
    });
    expect(JSON.parse(declared.stdout).error.code).toBe("INVALID_RESPONSE");
  });

  test("a 3xx answer names where it points and says it was not followed", async () => {
    const fetch = async () => new Response(null, { status: 301, headers: { location: "https://127.0.0.1:8443/.well-known/ath.json" } });
    const r = await runAth(home.dir, ["discover", "-g", GW, "--format", "json"], { fetch });
    expect(r.code).toBe(1);
    const { error } = JSON.parse(r.stdout);
    expect(error).toMatchObject({ code: "HTTP_ERROR", status: 301, details: { location: "https://127.0.0.1:8443/.well-known/ath.json" } });
    expect(error.message).toContain("301 redirect to https://127.0.0.1:8443/.well-known/ath.json, not followed");
    expect(httpError({ method: "GET", url: GW }, 302, "").message).toContain("302 redirect, not followed");
  });

  test("a TLS failure names its code once (not `EPROTO: EPROTO: …`) and exits 5", async () => {
    const fetch = async () => {
      throw Object.assign(new TypeError("EPROTO: The TLS handshake failed. Does the server speak TLS on this port?"), { code: "EPROTO" });
    };
    const r = await runAth(home.dir, ["discover", "-g", GW], { fetch });
    expect(r.code).toBe(5);
    expect(r.stderr).toBe(`ath: [GET] "${GW}/.well-known/ath.json": EPROTO: The TLS handshake failed. Does the server speak TLS on this port?\n`);
  });

  test("-g with a URL that is not http(s) is a usage error, not advice to save it as a gateway name", async () => {
    const r = await runAth(home.dir, ["discover", "-g", "ftp://x", "--format", "json"]);
    expect(r.code).toBe(2);
    const { error } = JSON.parse(r.stdout);
    expect(error.message).toContain("http(s) URL");
    expect(error.message).not.toContain("set-gateway");
  });
});
