/** The browser-binding cookie of the consent flow (DESIGN §3 Phase B step 2). */
import { describe, expect, test } from "bun:test";
import { browserPseudonym, csrfToken, ensureBinding, readBinding } from "../../../../src/gateway/domain/browser-binding.ts";
import type { Gateway } from "../../../../src/gateway/context.ts";

const gw = (baseUrl: string) => ({ opts: { baseUrl } }) as unknown as Gateway;
const req = (cookie?: string) => new Request("http://127.0.0.1/ath/consent/h", cookie ? { headers: { cookie } } : {});

describe("browser binding", () => {
  test("a new browser gets an HttpOnly, SameSite=Lax cookie; under https a __Host- cookie nobody else can plant", () => {
    const plain = ensureBinding(gw("http://127.0.0.1:8787"), req());
    expect(plain.setCookie).toMatch(/^ath_browser=[\w-]{43}; Path=\/ath\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    const tls = ensureBinding(gw("https://gw.example"), req());
    expect(tls.setCookie).toMatch(/^__Host-ath_browser=[\w-]{43}; Path=\/; Secure; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    // under https only the __Host- name counts: a plain-named cookie planted by a sibling domain is ignored
    const planted = "p".repeat(43);
    expect(readBinding(gw("https://gw.example"), req(`ath_browser=${planted}`))).toBeNull();
    expect(readBinding(gw("https://gw.example"), req(`__Host-ath_browser=${planted}`))).toBe(planted);
  });

  test("a browser that has the cookie keeps it; malformed values are ignored", () => {
    const value = "a".repeat(43);
    expect(ensureBinding(gw("http://x"), req(`x=1; ath_browser=${value}`))).toEqual({ value, setCookie: null });
    expect(readBinding(gw("http://x"), req("ath_browser=short"))).toBeNull();
    expect(readBinding(gw("http://x"), req(`ath_browser=${"<".repeat(43)}`))).toBeNull();
  });

  test("the CSRF token and pseudonym depend on the secret cookie and differ per session", () => {
    const a = "a".repeat(43);
    const b = "b".repeat(43);
    expect(csrfToken("h1", a)).not.toBe(csrfToken("h1", b));
    expect(csrfToken("h1", a)).not.toBe(csrfToken("h2", a));
    expect(browserPseudonym(a)).toMatch(/^browser:[0-9a-f]{32}$/);
    expect(browserPseudonym(a)).toBe(browserPseudonym(a));
    expect(browserPseudonym(a)).not.toBe(browserPseudonym(b));
  });
});
