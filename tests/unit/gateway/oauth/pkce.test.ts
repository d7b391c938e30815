/** PKCE (RFC 7636) as the gateway computes it for its upstream requests. */
import { describe, expect, test } from "bun:test";
import { s256 } from "../../../../src/gateway/oauth/pkce.ts";

describe("PKCE RFC 7636", () => {
  test("S256 matches RFC 7636 Appendix B", () => {
    expect(s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")).toBe("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  });
});
