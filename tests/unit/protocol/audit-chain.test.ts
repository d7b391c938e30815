/**
 * The store's append path hashes a record by writing its canonical text directly (hashChainedText over data's
 * canonical text, store/sql/audit.ts canonicalData); the verifier goes through the generic chainRecord → canonicalize.
 * The two must agree byte for byte on every record, or every export would fail to verify.
 */
import { describe, expect, test } from "bun:test";
import { canonicalRecordText, chainRecord, hashChainedText, hashRecord, ZERO_HASH } from "../../../src/protocol/audit-chain.ts";
import { canonicalize, canonicalizePlain } from "../../../src/protocol/jcs.ts";
import { canonicalData } from "../../../src/store/sql/audit.ts";

type Ev = {
  type: string;
  at: number;
  client_id?: string | null;
  agent_id?: string | null;
  user_id?: string | null;
  provider_id?: string | null;
  data?: Record<string, unknown> | null;
};

/** What the store hashed before the direct path: data through its JSON text, then the generic record. */
function generic(e: Ev, seq: number, prev: string): { text: string; hash: string } {
  const text = e.data === undefined || e.data === null ? undefined : JSON.stringify(e.data);
  const data = text === undefined ? null : (JSON.parse(text) as Record<string, unknown>);
  const record = chainRecord({ ...e, seq, prev_hash: prev, data });
  return { text: canonicalize(record), hash: hashRecord(record) };
}

function direct(e: Ev, seq: number, prev: string): { text: string; hash: string } {
  const data = canonicalData(e.data);
  return { text: canonicalRecordText(e, seq, prev, data), hash: hashChainedText(e, seq, prev, data) };
}

class Thing {
  constructor(public a = 1) {}
  hidden() {
    return 2;
  }
}

const varied: Ev[] = [
  { type: "proxy.call", at: 1_700_000_000_123, client_id: "ath_c1", agent_id: "https://agent.example/a", user_id: "u1", provider_id: "demo", data: { method: "GET", path: "/notes/1", status: 200 } },
  { type: "proxy.call", at: 0, data: { status: 403, request_digest: "sha-256=:abc=:", path: "/x", method: "POST" } },
  { type: "token.issued", at: 1, client_id: null, agent_id: undefined, user_id: null, provider_id: null },
  { type: "t", at: 2, data: null },
  { type: "t", at: 3, data: {} },
  { type: "quote\"back\\slash", at: 4, client_id: "tab\tnew\nline\u0001\u001f", data: { "\"k\"": "v\"", "\\": "\\\\" } },
  { type: "unicode", at: 5, agent_id: "héllo €𝄞 \ud83d\ude00", user_id: "lone \ud800 surrogate", data: { "€": 1, "\ud83d\ude00": 2, "\u0080": 3, "1": 4, "\r": 5, é: "ü" } },
  { type: "nested", at: 6, data: { z: [1, [2, [3, { b: null, a: true }]], false], a: { c: { d: { e: "deep" } } }, n: [-0, 1e21, 1e-7, 0.1, 333333333.33333329, Number.MAX_SAFE_INTEGER, -5] } },
  { type: "undefined members", at: 7, data: { a: undefined, b: 1, c: { d: undefined } } },
  { type: "dates and classes", at: 8, data: { when: new Date(1_700_000_000_000), thing: new Thing(), boxed: new String("s"), num: new Number(3) } },
  { type: "toJSON", at: 9, data: { x: { toJSON: () => ({ b: 2, a: 1 }) } } },
  { type: "dropped", at: 10, data: { f: () => 1, s: Symbol("s"), keep: "k", arr: [undefined, () => 1, 1] } as Record<string, unknown> },
  { type: "null proto", at: 11, data: Object.assign(Object.create(null), { b: 1, a: 2 }) },
  { type: "sparse", at: 12, data: { a: [1, , 3] } }, // eslint-disable-line no-sparse-arrays
  { type: "empty strings", at: 8.64e15, client_id: "", agent_id: "", user_id: "", provider_id: "", data: { "": "" } },
];

describe("the append path's direct record hash", () => {
  test("is byte-identical to hashRecord(chainRecord(…)) over varied records", () => {
    let prev = ZERO_HASH;
    varied.forEach((e, i) => {
      const want = generic(e, i + 1, prev);
      const got = direct(e, i + 1, prev);
      expect(got.text).toBe(want.text);
      expect(got.hash).toBe(want.hash);
      prev = got.hash;
    });
  });

  test("agrees on random records too", () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const chars = ["a", "Z", "\"", "\\", "\n", "\u0000", "é", "€", "\ud83d\ude00", "\ud800", "/", " ", "1"];
    const str = () => Array.from({ length: Math.floor(rnd() * 6) }, () => chars[Math.floor(rnd() * chars.length)]).join("");
    const value = (depth: number): unknown => {
      const k = Math.floor(rnd() * (depth > 2 ? 5 : 7));
      if (k === 0) return null;
      if (k === 1) return rnd() < 0.5;
      if (k === 2) return (rnd() - 0.5) * 10 ** Math.floor(rnd() * 40 - 20);
      if (k === 3 || k === 4) return str();
      if (k === 5) return Array.from({ length: Math.floor(rnd() * 4) }, () => value(depth + 1));
      return Object.fromEntries(Array.from({ length: Math.floor(rnd() * 4) }, () => [str(), value(depth + 1)]));
    };
    const maybe = () => (rnd() < 0.3 ? null : str());
    for (let i = 1; i <= 500; i++) {
      const e: Ev = {
        type: str() || "t", at: Math.floor(rnd() * 4e12), client_id: maybe(), agent_id: maybe(), user_id: maybe(), provider_id: maybe(),
        data: rnd() < 0.1 ? null : (Object.fromEntries(Array.from({ length: Math.floor(rnd() * 5) }, () => [str(), value(0)])) as Record<string, unknown>),
      };
      const prev = rnd() < 0.5 ? ZERO_HASH : hashRecord(chainRecord({ seq: i, prev_hash: ZERO_HASH, type: "x", at: i }));
      expect(direct(e, i, prev)).toEqual(generic(e, i, prev));
    }
  });

  test("canonicalizePlain refuses what JSON.stringify would change, so canonicalData falls back", () => {
    expect(canonicalizePlain({ b: [1, "x", null, true], a: { d: -0 } })).toBe('{"a":{"d":0},"b":[1,"x",null,true]}');
    for (const v of [{ d: new Date(0) }, { t: new Thing() }, { s: new String("s") }, { j: { toJSON: () => 1 } }, { f: () => 1 }, [undefined], { n: NaN }]) {
      expect(() => canonicalizePlain(v)).toThrow(TypeError);
    }
    expect(canonicalData({ d: new Date(0), f: () => 1 })).toBe('{"d":"1970-01-01T00:00:00.000Z"}');
    expect(canonicalData(undefined)).toBeNull();
    expect(canonicalData(null)).toBeNull();
  });
});
