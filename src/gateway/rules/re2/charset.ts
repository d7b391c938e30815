/**
 * Sets of code points as RE2's syntax names them (https://github.com/google/re2/wiki/Syntax): ranges, the Perl and
 * ASCII classes (ASCII only, as in RE2), Unicode general categories and scripts (`\pL`, `\p{Greek}`: JavaScript's own
 * `\p{…}` run over a block of 256 code points at a time — one pass, no backtracking — and kept as a bitmap), negation, and case
 * folding for `(?i)` (a code point matches if it, its lower or its upper case form is in the set — simple case
 * folding, as RE2's; RE2's longer orbits such as k/K/U+212A are met only through those two forms).
 */

export interface CharSet {
  /** Sorted, non-overlapping inclusive ranges, flat: [lo0, hi0, lo1, hi1, …]. */
  ranges: number[];
  /** Unicode classes, each with its own negation (`\PL` inside a class). */
  props: { cls: UnicodeClass; neg: boolean }[];
  neg: boolean;
  fold: boolean;
}

export const MAX_CODE_POINT = 0x10ffff;

/** Whether `c` is in `s`. */
export function inSet(s: CharSet, c: number): boolean {
  let r = rawIn(s, c);
  if (!r && s.fold) {
    const lower = caseOf(c, "lower");
    const upper = caseOf(c, "upper");
    r = (lower !== c && rawIn(s, lower)) || (upper !== c && rawIn(s, upper));
  }
  return r !== s.neg;
}

export function rangeSet(ranges: number[], fold = false): CharSet {
  return { ranges: normalize(ranges), props: [], neg: false, fold };
}

/** `.`: any code point but `\n` unless `(?s)`. */
export function anySet(dotNl: boolean): CharSet {
  return rangeSet(dotNl ? [0, MAX_CODE_POINT] : [0, 9, 11, MAX_CODE_POINT]);
}

/** The ranges not in `ranges` (normalized), over every code point. */
export function complement(ranges: number[]): number[] {
  const r = normalize(ranges);
  const out: number[] = [];
  let next = 0;
  for (let i = 0; i < r.length; i += 2) {
    if (r[i]! > next) out.push(next, r[i]! - 1);
    next = r[i + 1]! + 1;
  }
  if (next <= MAX_CODE_POINT) out.push(next, MAX_CODE_POINT);
  return out;
}

/** `\d \s \w` (and upper-case: negated), as RE2: ASCII only. */
export const PERL: Record<string, number[]> = {
  d: [0x30, 0x39],
  s: [0x09, 0x0a, 0x0c, 0x0d, 0x20, 0x20],
  w: [0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a],
};

/** `[[:name:]]`, as RE2. */
export const ASCII_CLASSES: Record<string, number[]> = {
  alnum: [0x30, 0x39, 0x41, 0x5a, 0x61, 0x7a],
  alpha: [0x41, 0x5a, 0x61, 0x7a],
  ascii: [0x00, 0x7f],
  blank: [0x09, 0x09, 0x20, 0x20],
  cntrl: [0x00, 0x1f, 0x7f, 0x7f],
  digit: [0x30, 0x39],
  graph: [0x21, 0x7e],
  lower: [0x61, 0x7a],
  print: [0x20, 0x7e],
  punct: [0x21, 0x2f, 0x3a, 0x40, 0x5b, 0x60, 0x7b, 0x7e],
  space: [0x09, 0x0d, 0x20, 0x20],
  upper: [0x41, 0x5a],
  word: [0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a],
  xdigit: [0x30, 0x39, 0x41, 0x46, 0x61, 0x66],
};

/** A Unicode general category or script: membership of a code point. */
export interface UnicodeClass {
  readonly name: string;
  has(c: number): boolean;
}

/** `\p{name}`, or null for a name neither a general category nor a script. `Any` is every code point. */
export function unicodeClass(name: string): UnicodeClass | null {
  if (!/^[A-Za-z_]{1,40}$/.test(name)) return null;
  let cls = classes.get(name);
  if (cls === undefined) {
    const re = name === "Any" ? /[\s\S]/gu : propertyRegExp(name);
    cls = re ? blockClass(name, re) : null;
    classes.set(name, cls);
  }
  return cls;
}

/** Whether `c` is an ASCII word character (`\b`, as RE2). */
export function isWordChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || c === 0x5f || (c >= 0x61 && c <= 0x7a);
}

// internal

function rawIn(s: CharSet, c: number): boolean {
  const r = s.ranges;
  let lo = 0;
  let hi = r.length / 2 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (c < r[2 * mid]!) hi = mid - 1;
    else if (c > r[2 * mid + 1]!) lo = mid + 1;
    else return true;
  }
  for (const p of s.props) if (p.cls.has(c) !== p.neg) return true;
  return false;
}

const classes = new Map<string, UnicodeClass | null>();

function propertyRegExp(name: string): RegExp | null {
  for (const source of [`\\p{gc=${name}}`, `\\p{sc=${name}}`]) {
    try {
      return new RegExp(source, "gu");
    } catch {
      // not this kind of name
    }
  }
  return null;
}

/** Membership by blocks of 256 code points, each found with one pass of `re` (global) over the block's text. */
function blockClass(name: string, re: RegExp): UnicodeClass {
  const blocks = new Map<number, Uint8Array>();
  return {
    name,
    has(c) {
      const b = c >> 8;
      let bits = blocks.get(b);
      if (bits === undefined) {
        bits = new Uint8Array(256);
        let text = "";
        for (let i = 0; i < 256; i++) text += String.fromCodePoint((b << 8) + i);
        re.lastIndex = 0;
        for (let m = re.exec(text); m !== null; m = re.exec(text)) bits[m[0].codePointAt(0)! - (b << 8)] = 1;
        blocks.set(b, bits);
      }
      return bits[c & 0xff] === 1;
    },
  };
}

function caseOf(c: number, which: "lower" | "upper"): number {
  if (c < 0x80) {
    if (which === "lower" && c >= 0x41 && c <= 0x5a) return c + 32;
    if (which === "upper" && c >= 0x61 && c <= 0x7a) return c - 32;
    return c;
  }
  const s = String.fromCodePoint(c);
  const t = which === "lower" ? s.toLowerCase() : s.toUpperCase();
  const cp = t.codePointAt(0)!;
  // only a single code point maps (ß → SS does not)
  return t.length === String.fromCodePoint(cp).length ? cp : c;
}

function normalize(ranges: number[]): number[] {
  const pairs: [number, number][] = [];
  for (let i = 0; i < ranges.length; i += 2) pairs.push([ranges[i]!, ranges[i + 1]!]);
  pairs.sort((a, b) => a[0] - b[0]);
  const out: number[] = [];
  for (const [lo, hi] of pairs) {
    if (out.length > 0 && lo <= out[out.length - 1]! + 1) out[out.length - 1] = Math.max(out[out.length - 1]!, hi);
    else out.push(lo, hi);
  }
  return out;
}
