/** THE sanitizer (src/text/sanitize.ts, DESIGN §14 "Strings from elsewhere are data") and the gateway-link rule. */
import { describe, expect, test } from "bun:test";
import { gatewayLink } from "../../../src/agent/links.ts";
import { browserCommands } from "../../../src/cli/kit/deps.ts";
import { forPage, forTerminal, jsonInert, sameOriginUrl, stringifyInert } from "../../../src/text/sanitize.ts";

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
  test("only http(s) of the gateway's own origin", () => {
    expect(sameOriginUrl("https://gw.example:8443/ath/approvals/x", gw)).toBe("https://gw.example:8443/ath/approvals/x");
    for (const bad of ["javascript:alert(1)", "https://evil.example/ath", "http://gw.example:8443/x", "file:///etc/passwd", "data:text/html,x", "https://gw.example/x"]) {
      expect({ bad, ok: sameOriginUrl(bad, gw) }).toEqual({ bad, ok: null });
    }
  });
  test("a refused link is exit 4 (refused) naming its origin only, never the whole URL", () => {
    let err: { kind?: string; code?: string; message?: string } = {};
    try {
      gatewayLink("https://evil.example:444/steal?token=secret", gw);
    } catch (e) {
      err = e as typeof err;
    }
    expect({ kind: err.kind, code: err.code }).toEqual({ kind: "refused", code: "UNSAFE_URL" });
    expect(err.message).toContain("https://evil.example:444");
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
