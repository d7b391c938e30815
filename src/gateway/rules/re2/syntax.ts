/**
 * RE2's regular expression syntax (https://github.com/google/re2/wiki/Syntax), which CEL's `matches` specifies, parsed
 * into a tree the linear matcher compiles (re2/program.ts). What RE2 refuses is refused here with its reason:
 * backreferences, lookaround, `\C`, `\Z`, possessive or doubled repetition, counts over 1,000. Groups only group (a
 * boolean match needs no captures); flags `i`, `m`, `s`, `U` apply as in RE2 (`U` changes nothing a boolean sees).
 */
import { ASCII_CLASSES, anySet, complement, PERL, rangeSet, unicodeClass, type CharSet } from "./charset.ts";

export type Assertion = "begin_text" | "end_text" | "begin_line" | "end_line" | "word" | "not_word";

export type Node =
  | { k: "empty" }
  | { k: "char"; set: CharSet }
  | { k: "cat"; items: Node[] }
  | { k: "alt"; items: Node[] }
  | { k: "repeat"; node: Node; min: number; max: number }
  | { k: "assert"; a: Assertion };

/** A pattern RE2 would not accept; the message says why, naming the offending text. */
export class Re2SyntaxError extends Error {
  override readonly name = "Re2SyntaxError";
}

/** RE2's largest repetition count, and its deepest nesting of groups. */
export const MAX_REPEAT = 1000;
const MAX_DEPTH = 1000;

export function parseRe2(pattern: string): Node {
  const p = new Parser(pattern);
  const node = p.alternation({ i: false, m: false, s: false });
  if (p.pos < p.cps.length) throw new Re2SyntaxError(`unexpected ) at offset ${p.pos}`);
  return node;
}

// internal

interface Flags {
  i: boolean;
  m: boolean;
  s: boolean;
}

const ESCAPES: Record<string, number> = { a: 7, f: 12, t: 9, n: 10, r: 13, v: 11 };

class Parser {
  readonly cps: number[];
  /** offs[i]: the UTF-16 offset of code point i (offs[cps.length]: the source's length). */
  readonly offs: number[];
  pos = 0;
  private depth = 0;
  constructor(readonly source: string) {
    this.cps = Array.from(source, (ch) => ch.codePointAt(0)!);
    this.offs = [0];
    for (const cp of this.cps) this.offs.push(this.offs[this.offs.length - 1]! + (cp > 0xffff ? 2 : 1));
  }

  alternation(flags: Flags): Node {
    if (++this.depth > MAX_DEPTH) throw this.error(`groups nested more than ${MAX_DEPTH} deep`);
    const items = [this.concat(flags)];
    while (this.peek("|")) {
      this.pos++;
      items.push(this.concat(flags));
    }
    this.depth--;
    return items.length === 1 ? items[0]! : { k: "alt", items };
  }

  concat(flags: Flags): Node {
    const items: Node[] = [];
    while (this.pos < this.cps.length && !this.peek("|") && !this.peek(")")) {
      if (this.peek("(") && this.at(1) === "?" && /[imsU-]/.test(this.at(2))) {
        const local = this.flagGroup(flags);
        if (local) items.push(local);
        continue;
      }
      const atom = this.atom(flags);
      const q = this.quantifier();
      if (!q) {
        items.push(atom);
        continue;
      }
      // RE2: one repetition operator per atom (`a**`, `a*+`, `a{2}{3}` are errors; group to repeat a repetition)
      const at = this.pos;
      if (this.quantifier()) throw this.error(`bad repetition operator: ${q.text}${this.source.slice(this.offs[at], this.offs[this.pos])}`, at);
      items.push({ k: "repeat", node: atom, min: q.min, max: q.max });
    }
    return items.length === 0 ? { k: "empty" } : items.length === 1 ? items[0]! : { k: "cat", items };
  }

  /** `(?flags)` — changes `flags` for the rest of the group, returns null — or `(?flags:re)`, returns its node. */
  flagGroup(flags: Flags): Node | null {
    const start = this.pos;
    this.pos += 2;
    const local = { ...flags };
    let on = true;
    let named = false; // RE2: a flag must follow `(?` and `-`
    for (;;) {
      const c = this.at(0);
      if ((c === ")" || c === ":") && !named) throw new Re2SyntaxError(`invalid or unsupported group flags: ${this.source.slice(this.offs[start], this.offs[this.pos + 1])}`);
      if (c === "-" && on) [on, named] = [false, false];
      else if (c === "i" || c === "m" || c === "s") [local[c], named] = [on, true];
      else if (c === "U") {
        named = true; // ungreedy: a boolean match is the same either way
      } else if (c === ")") {
        this.pos++;
        Object.assign(flags, local);
        return null;
      } else if (c === ":") {
        this.pos++;
        const node = this.alternation(local);
        this.expect(")", start);
        return node;
      } else throw new Re2SyntaxError(`invalid or unsupported group flags: ${this.source.slice(this.offs[start], this.offs[this.pos + 1])}`);
      this.pos++;
    }
  }

  atom(flags: Flags): Node {
    const c = this.at(0);
    const start = this.pos;
    this.pos++;
    switch (c) {
      case "(": {
        if (this.at(0) === "?") {
          const rest = this.source.slice(this.offset(this.pos), this.offset(this.pos) + 3);
          if (/^\?(=|!|<=|<!)/.test(rest)) throw this.error(`lookaround is not supported: (${rest.replace(/^(\?<?[=!]).*/, "$1")}`, start);
          const named = /^\?P?<([A-Za-z_][A-Za-z0-9_]*)>/.exec(this.source.slice(this.offset(this.pos)));
          if (named) this.pos += Array.from(named[0]).length;
          else if (this.at(1) === ":") this.pos += 2;
          else throw this.error(`invalid or unsupported group: (${rest}`, start);
        }
        const node = this.alternation({ ...flags });
        this.expect(")", start);
        return node;
      }
      case "[":
        return { k: "char", set: this.charClass(flags, start) };
      case ".":
        return { k: "char", set: anySet(flags.s) };
      case "^":
        return { k: "assert", a: flags.m ? "begin_line" : "begin_text" };
      case "$":
        return { k: "assert", a: flags.m ? "end_line" : "end_text" };
      case "*":
      case "+":
      case "?":
        throw this.error(`missing argument to repetition operator: ${c}`, start);
      case "\\":
        return this.escape(flags, start);
      default:
        return this.literal(this.cps[start]!, flags);
    }
  }

  escape(flags: Flags, start: number): Node {
    const c = this.at(0);
    this.pos++;
    if (c === "A") return { k: "assert", a: "begin_text" };
    if (c === "z") return { k: "assert", a: "end_text" };
    if (c === "b") return { k: "assert", a: "word" };
    if (c === "B") return { k: "assert", a: "not_word" };
    if (c === "Q") {
      const end = this.source.indexOf("\\E", this.offset(this.pos));
      const text = Array.from(this.source.slice(this.offset(this.pos), end < 0 ? undefined : end), (ch) => ch.codePointAt(0)!);
      this.pos += text.length + (end < 0 ? 0 : 2);
      return { k: "cat", items: text.map((cp) => this.literal(cp, flags)) };
    }
    this.pos = start;
    return { k: "char", set: this.classEscape(flags) };
  }

  /** An escape standing for a set (or one code point), also inside `[…]`; `pos` at the backslash. */
  classEscape(flags: Flags): CharSet {
    const start = this.pos;
    this.pos++;
    const c = this.at(0);
    this.pos++;
    if (c === "") throw this.error("trailing \\", start);
    const lower = c.toLowerCase();
    if (lower in PERL && (c === lower || c === c.toUpperCase())) {
      const r = PERL[lower]!;
      return rangeSet(c === lower ? r : complement(r), false);
    }
    if (c === "p" || c === "P") {
      let name = this.at(0);
      if (name === "{") {
        const close = this.source.indexOf("}", this.offset(this.pos));
        if (close < 0) throw this.error("invalid Unicode class: missing }", start);
        name = this.source.slice(this.offset(this.pos) + 1, close);
        this.pos += Array.from(name).length + 2;
      } else this.pos++;
      const neg = (c === "P") !== name.startsWith("^");
      const cls = unicodeClass(name.replace(/^\^/, ""));
      if (!cls) throw this.error(`invalid or unknown Unicode class: \\${c}{${name}}`, start);
      return { ranges: [], props: [{ cls, neg: false }], neg, fold: flags.i };
    }
    const cp = this.escapedCodePoint(c, start);
    return rangeSet([cp, cp], flags.i);
  }

  escapedCodePoint(c: string, start: number): number {
    if (c in ESCAPES) return ESCAPES[c]!;
    if (c === "x") {
      const m = /^\{([0-9A-Fa-f]{1,6})\}|^([0-9A-Fa-f]{2})/.exec(this.source.slice(this.offset(this.pos)));
      const cp = m ? parseInt(m[1] ?? m[2]!, 16) : NaN;
      if (!m || cp > 0x10ffff) throw this.error("invalid escape sequence: \\x", start);
      this.pos += m[0].length;
      return cp;
    }
    if (c === "0") {
      const m = /^[0-7]{0,2}/.exec(this.source.slice(this.offset(this.pos)))!;
      this.pos += m[0].length;
      return parseInt(`0${m[0]}`, 8);
    }
    if (/[1-9]/.test(c)) throw this.error(`backreferences are not supported: \\${c}`, start);
    if (c === "C") throw this.error("\\C (any byte) is not supported", start);
    // RE2: any punctuation may be escaped; a letter or digit escape it does not know is an error
    if (/[A-Za-z0-9]/.test(c)) throw this.error(`invalid escape sequence: \\${c}`, start);
    return c.codePointAt(0)!;
  }

  charClass(flags: Flags, start: number): CharSet {
    const neg = this.peek("^");
    if (neg) this.pos++;
    const ranges: number[] = [];
    const props: CharSet["props"] = [];
    let first = true;
    for (;;) {
      if (this.pos >= this.cps.length) throw this.error("missing closing ]", start);
      if (this.peek("]") && !first) break;
      first = false;
      const ascii = /^\[:(\^?)([a-z]+):\]/.exec(this.source.slice(this.offset(this.pos)));
      if (ascii) {
        const r = ASCII_CLASSES[ascii[2]!];
        if (!r) throw this.error(`invalid character class range: ${ascii[0]}`, this.pos);
        ranges.push(...(ascii[1] ? complement(r) : r));
        this.pos += ascii[0].length;
        continue;
      }
      let lo: number;
      if (this.peek("\\")) {
        const set = this.classEscape({ ...flags, i: false });
        if (set.props.length > 0) {
          props.push({ cls: set.props[0]!.cls, neg: set.neg });
          continue;
        }
        if (set.ranges.length !== 2 || set.ranges[0] !== set.ranges[1]) {
          ranges.push(...set.ranges);
          continue;
        }
        lo = set.ranges[0]!;
      } else lo = this.cps[this.pos++]!;
      let hi = lo;
      if (this.peek("-") && this.at(1) !== "]" && this.pos + 1 < this.cps.length) {
        this.pos++;
        if (this.peek("\\")) {
          const set = this.classEscape({ ...flags, i: false });
          if (set.props.length > 0 || set.ranges.length !== 2 || set.ranges[0] !== set.ranges[1]) throw this.error("invalid character class range", start);
          hi = set.ranges[0]!;
        } else hi = this.cps[this.pos++]!;
        if (hi < lo) throw this.error(`invalid character class range: ${String.fromCodePoint(lo)}-${String.fromCodePoint(hi)}`, start);
      }
      ranges.push(lo, hi);
    }
    this.pos++;
    return { ...rangeSet(ranges, flags.i), props, neg };
  }

  /** `{n}`, `{n,}`, `{n,m}`, `*`, `+`, `?` (each maybe followed by `?`, non-greedy); null when none is next. */
  quantifier(): { min: number; max: number; text: string } | null {
    const c = this.at(0);
    let q: { min: number; max: number; text: string } | null = null;
    if (c === "*") q = { min: 0, max: -1, text: "*" };
    else if (c === "+") q = { min: 1, max: -1, text: "+" };
    else if (c === "?") q = { min: 0, max: 1, text: "?" };
    if (q) this.pos++;
    else if (c === "{") {
      // RE2: a `{` that does not open a valid count is a literal
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.offset(this.pos)));
      if (!m) return null;
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : m[3] === "" ? -1 : Number(m[3]);
      if (min > MAX_REPEAT || max > MAX_REPEAT || (max !== -1 && max < min)) throw this.error(`bad repetition operator: ${m[0]}`, this.pos);
      this.pos += m[0].length;
      q = { min, max, text: m[0] };
    } else return null;
    if (this.peek("?")) this.pos++; // non-greedy: the same for a boolean match
    return q;
  }

  literal(cp: number, flags: Flags): Node {
    return { k: "char", set: rangeSet([cp, cp], flags.i) };
  }

  expect(ch: string, start: number): void {
    if (!this.peek(ch)) throw this.error(`missing closing ${ch}`, start);
    this.pos++;
  }

  peek(ch: string): boolean {
    return this.cps[this.pos] === ch.codePointAt(0);
  }

  at(i: number): string {
    const cp = this.cps[this.pos + i];
    return cp === undefined ? "" : String.fromCodePoint(cp);
  }

  /** The UTF-16 offset of code point index `i` in the source. */
  offset(i: number): number {
    return this.offs[i]!;
  }

  error(message: string, at = this.pos): Re2SyntaxError {
    return new Re2SyntaxError(`${message} (at offset ${at})`);
  }
}
