/**
 * RFC 8785 JSON Canonicalization Scheme: the one byte string a JSON value hashes and signs as. Objects' members
 * sorted by their names' UTF-16 code units, no whitespace, strings and numbers as ECMAScript's JSON.stringify writes
 * them (which is what RFC 8785 §3.2.2 prescribes). Values JSON cannot carry (NaN, Infinity, undefined in an array,
 * functions, bigints) are refused rather than silently changed.
 */
export function canonicalize(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "string":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`JCS: ${value} is not a JSON number`);
      // ECMAScript's Number serialization (RFC 8785 §3.2.2.3); -0 is written 0 by it.
      return JSON.stringify(value);
    case "object": {
      if (Array.isArray(value)) return `[${value.map((v) => canonicalize(v === undefined ? fail("undefined in an array") : v)).join(",")}]`;
      const o = value as Record<string, unknown>;
      if (typeof (o as { toJSON?: unknown }).toJSON === "function") return canonicalize((o as { toJSON(): unknown }).toJSON());
      // Default sort compares UTF-16 code units, as RFC 8785 §3.2.3 asks.
      const names = Object.keys(o).filter((k) => o[k] !== undefined).sort();
      return `{${names.map((k) => `${JSON.stringify(k)}:${canonicalize(o[k])}`).join(",")}}`;
    }
    default:
      return fail(`a ${typeof value} is not JSON`);
  }
}

function fail(why: string): never {
  throw new TypeError(`JCS: ${why}`);
}
