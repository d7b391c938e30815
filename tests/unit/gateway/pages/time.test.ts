/** How pages state an expiry: relative to now, rounded down. */
import { describe, expect, test } from "bun:test";
import { relativeExpiry } from "../../../../src/gateway/pages/index.ts";

const now = new Date("2025-06-01T14:00:00Z");

describe("relativeExpiry", () => {
  test("a relative expiry rounds down and names its unit", () => {
    const at = (s: number) => relativeExpiry(new Date(now.getTime() + s * 1000), now);
    expect([at(-1), at(0), at(59), at(60), at(119), at(599), at(7200), at(3 * 86400)]).toEqual([
      "already", "already", "in less than a minute", "in 1 minute", "in 1 minute", "in 9 minutes", "in 2 hours", "in 3 days",
    ]);
  });
});
