/** THE sanitizer (src/text/sanitize.ts, DESIGN §14 "Strings from elsewhere are data") and the gateway-link rule. */
import { describe, expect, test } from "bun:test";
import { gatewayLink, opensElsewhere } from "../../../src/agent/links.ts";
import { browserCommands } from "../../../src/cli/kit/deps.ts";
import { checkLink, forPage, forTerminal, jsonInert, stringifyInert } from "../../../src/text/sanitize.ts";

const EVIL = "a\u001b]52;c;eA==\u0007b\u001b[2Jc\u009bd\u007fe\u202ef\u200bg\ufeffh\u{e0041}i\u2028j\r\nk\tl";

describe("forTerminal / forPage / jsonInert", () => {
  test("terminal: every control, DEL, C1, Cf and separator becomes U+FFFD; tab and line feed kept (or folded)", () => {
    expect(forTerminal(EVIL)).toBe("a\ufffd]52;c;eA==\ufffdb\ufffd[2Jc\ufffdd\ufffde\ufffdf\ufffdg\ufffdh\ufffdi\ufffdj\ufffd\nk\tl");
    expect(forTerminal(EVIL, { multiline: false })).not.toMatch(/[\n\t]/);
  });
  test("page: made visible as ⟨U+XXXX⟩", () => {
    expect(forPage("x\u202ey\u001b")).toBe("x⟨U+202E⟩y⟨U+001B⟩");
  });
  test("JSON: the value is kept, and the text carries none of those characters raw", () => {
    const text = stringifyInert({ v: EVIL });
    expect(JSON.parse(text).v).toBe(EVIL);
    expect(text).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e\u200b\ufeff\u2028]|\u{e0041}/u);
    expect(jsonInert('"\u202e"')).toBe('"\\u202e"');
  });
});

describe("links from a gateway", () => {
  const gw = "https://gw.example:8443";
  test("DESIGN §14: https to any origin (another one named first), http only to the gateway or a loopback host", () => {
    expect(checkLink("https://gw.example:8443/ath/approvals/x", gw)).toEqual({ ok: true, href: "https://gw.example:8443/ath/approvals/x", elsewhere: null });
    // the official SDK's gateway hands out the provider's own authorize URL: allowed, and named
    expect(checkLink("https://accounts.example.com/o/oauth2/auth?client_id=x", gw)).toEqual({ ok: true, href: "https://accounts.example.com/o/oauth2/auth?client_id=x", elsewhere: "accounts.example.com" });
    expect(opensElsewhere("https://accounts.example.com/o/oauth2/auth", gw)).toBe("opens accounts.example.com");
    expect(opensElsewhere("https://gw.example:8443/ath/consent/x", gw)).toBe("");
    for (const loopback of ["http://127.0.0.1:51309/consent", "http://localhost:3000/x", "http://[::1]:8080/y"]) {
      expect({ loopback, ok: checkLink(loopback, gw).ok }).toEqual({ loopback, ok: true });
    }
    expect(checkLink("http://gw.example:8443/x", "http://gw.example:8443")).toMatchObject({ ok: true, elsewhere: null });
    const refused = [
      "javascript:alert(1)",
      "http://evil.example/ath", // plain http off the gateway
      "http://gw.example:8443/x", // plain http to an https gateway's host is another origin
      "file:///etc/passwd",
      "data:text/html,x",
      "https://user:pw@accounts.example.com/", // userinfo
      "https://accounts.example.com/\r\nSYSTEM", // controls
      "https://accounts.example.com/a\tb",
      "https://accounts.example.com/\u202e/x", // a bidi override
      "not a url",
    ];
    for (const bad of refused) expect({ bad, ok: checkLink(bad, gw).ok }).toEqual({ bad, ok: false });
  });
  test("a refused link is exit 4 (refused) naming its origin only, never the whole URL", () => {
    let err: { kind?: string; code?: string; message?: string } = {};
    try {
      gatewayLink("http://evil.example:444/steal?token=secret", gw);
    } catch (e) {
      err = e as typeof err;
    }
    expect({ kind: err.kind, code: err.code }).toEqual({ kind: "refused", code: "UNSAFE_URL" });
    expect(err.message).toContain("http://evil.example:444, which ath does not open: it is plain http to another host");
    expect(err.message).not.toContain("secret");
    expect(() => gatewayLink("javascript:alert(1)", gw)).toThrow("javascript:");
  });
  test("the browser starts without a shell on every OS, and only for http(s)", () => {
    const url = "https://gw.example/a?b=1&c=2|calc";
    expect(browserCommands(url, {}, "win32")).toEqual([["rundll32", "url.dll,FileProtocolHandler", url]]);
    expect(browserCommands(url, {}, "darwin")).toEqual([["open", url]]);
    expect(browserCommands(url, { DISPLAY: ":0" }, "linux")).toEqual([["xdg-open", url]]);
    expect(() => browserCommands("javascript:alert(1)", { BROWSER: "/bin/echo" }, "linux")).toThrow("only http(s)");
  });
});
