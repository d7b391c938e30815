/** The sandbox's bounded in-memory maps. */
import { afterEach, describe, expect, setSystemTime, test } from "bun:test";
import { ExpiringMap } from "../../../../src/gateway/demo/expiring-map.ts";

afterEach(() => setSystemTime());

describe("in-memory state", () => {
  test("a full map sweeps expired entries first, then evicts the oldest: size never exceeds the bound", () => {
    const t0 = Date.now();
    const m = new ExpiringMap<number>(3);
    m.set("short", 1, 1_000);
    m.set("a", 2, 60_000);
    m.set("b", 3, 60_000);
    setSystemTime(new Date(t0 + 2_000));
    m.set("c", 4, 60_000); // sweeps "short"
    expect([m.size, m.get("a"), m.get("short")]).toEqual([3, 2, undefined]);
    m.set("d", 5, 60_000); // nothing expired: evicts the oldest ("a")
    expect([m.size, m.get("a"), m.get("d")]).toEqual([3, undefined, 5]);
    expect([m.take("d"), m.take("d")]).toEqual([5, undefined]);
  });
});
