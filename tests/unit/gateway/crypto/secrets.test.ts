/** Secret handling: comparison in constant time. */
import { describe, expect, test } from "bun:test";
import { constantTimeEqual } from "../../../../src/gateway/crypto/secrets.ts";

describe("secrets", () => {
  test("constant-time comparison is still a comparison", () => {
    expect(constantTimeEqual("ath_secret_a", "ath_secret_a")).toBe(true);
    expect(constantTimeEqual("ath_secret_a", "ath_secret_b")).toBe(false);
    expect(constantTimeEqual("a", "aa")).toBe(false);
    expect(constantTimeEqual("", "")).toBe(true);
  });
});
