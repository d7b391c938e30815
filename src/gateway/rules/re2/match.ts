/**
 * CEL's `matches` (RE2 semantics: true when the pattern matches anywhere in the text) in time linear in the text,
 * whatever the pattern — JavaScript's RegExp backtracks: `^(a+)+$` against 26 `a`s and a `!` held every request for
 * 2.1 s (issue 35, finding 5). The program (re2/program.ts) runs as a set of threads advanced together one code point
 * at a time (Thompson's simulation), and each set reached is remembered as a DFA state with its transitions, built
 * lazily, so text a pattern has seen before costs one table lookup per code point (RE2's own DFA, in miniature).
 *
 * Bounds: at most MAX_STATES cached states per pattern (then the cache starts over, as RE2's does), and a budget of
 * steps per evaluation (re2/budget.ts) — a text × pattern pair that would need more fails the evaluation (fail closed)
 * instead of holding the event loop: with a cached DFA a MiB of text costs ≈ a million steps.
 */
import { inBudget, spend, STATE_COST, VISIT_COST, withMatchBudget } from "./budget.ts";
import { inSet, isWordChar } from "./charset.ts";
import { compileProgram, type Program } from "./program.ts";
import { parseRe2 } from "./syntax.ts";

export { MAX_WORK, Re2WorkError, withMatchBudget } from "./budget.ts";
export { Re2SyntaxError } from "./syntax.ts";

export interface Re2 {
  readonly source: string;
  /** Whether the pattern matches somewhere in `text`; throws Re2WorkError once the budget (re2/budget.ts) is spent. */
  test(text: string): boolean;
}

/** Cached DFA states per pattern: past it the cache starts over, as RE2's does. */
export const MAX_STATES = 4_096;

/** Compiles an RE2 pattern; throws Re2SyntaxError naming what RE2 would refuse. */
export function compileRe2(source: string): Re2 {
  const dfa = new Dfa(compileProgram(parseRe2(source)));
  return { source, test: (text) => (inBudget() ? dfa.test(text) : withMatchBudget(() => dfa.test(text))) };
}

// internal

/** What an empty-width test needs to know of a code point beside it. */
const NONE = 0;
const NEWLINE = 1;
const WORD = 2;
const OTHER = 3;

interface State {
  /** The threads waiting to read the next code point (program counters of `char` targets), sorted. */
  raw: number[];
  /** The kind of the code point read last (NONE at the start of the text). */
  prev: number;
  /** Transitions by input class: the next state, or MATCHED. */
  next: (State | typeof MATCHED | undefined)[];
  /** Whether the text may end here with a match (computed once). */
  end?: boolean;
}

const MATCHED = Symbol("matched");

class Dfa {
  /** Cached states by a hash of their threads (buckets: a collision compares the threads). */
  private states = new Map<number, State[]>();
  private count = 0;
  /** Input classes: code points that every set treats alike (and of one kind) — by key; each one's kind and sets. */
  private readonly classIds = new Map<string, number>();
  private readonly classKind: number[] = [];
  private readonly classSets: Uint8Array[] = [];
  private readonly ascii = new Int32Array(128);
  private readonly wide = new Map<number, number>();
  /** The index (in prog.sets) of each `char` instruction's set. */
  private readonly setOf: Int32Array;
  private readonly seen: Uint32Array;
  private stamp = 0;

  constructor(private readonly prog: Program) {
    this.seen = new Uint32Array(prog.insts.length);
    this.setOf = new Int32Array(prog.insts.length);
    const index = new Map(prog.sets.map((set, i) => [set, i]));
    prog.insts.forEach((inst, pc) => {
      if (inst.op === "char") this.setOf[pc] = index.get(inst.set)!;
    });
    for (let c = 0; c < 128; c++) this.ascii[c] = this.classOf(c);
  }

  test(text: string): boolean {
    let s = this.state([], NONE);
    for (let i = 0; i < text.length; ) {
      let c = text.charCodeAt(i++);
      if (c >= 0xd800 && c <= 0xdbff && i < text.length) {
        const d = text.charCodeAt(i);
        if (d >= 0xdc00 && d <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
        }
      }
      const k = c < 128 ? this.ascii[c]! : this.wideClass(c);
      spend(1);
      let n = s.next[k];
      if (n === undefined) n = s.next[k] = this.step(s, k);
      if (n === MATCHED) return true;
      s = n;
    }
    s.end ??= this.closure(s, NONE).matched;
    return s.end;
  }

  /** The state after `s` reads a code point of class `k`: its threads closed over what `k` lets them pass, then fed. */
  private step(s: State, k: number): State | typeof MATCHED {
    const { pcs, matched } = this.closure(s, this.classKind[k]!);
    if (matched) return MATCHED;
    const member = this.classSets[k]!;
    const stamp = ++this.stamp;
    const out: number[] = [];
    for (const pc of pcs) {
      if (member[this.setOf[pc]!] === 0) continue;
      const next = (this.prog.insts[pc] as { out: number }).out;
      if (this.seen[next] === stamp) continue;
      this.seen[next] = stamp;
      out.push(next);
    }
    out.sort((a, b) => a - b);
    spend(STATE_COST + out.length);
    return this.state(out, this.prog.asserts ? this.classKind[k]! : NONE);
  }

  /** The `char` threads reachable from `s`'s threads and a new one at the start (unanchored search); and `match`. */
  private closure(s: State, nextKind: number): { pcs: number[]; matched: boolean } {
    const stamp = ++this.stamp;
    const pcs: number[] = [];
    const stack = s.raw.slice();
    stack.push(this.prog.start);
    let matched = false;
    let visits = 0;
    while (stack.length > 0) {
      const pc = stack.pop()!;
      if (this.seen[pc] === stamp) continue;
      this.seen[pc] = stamp;
      visits++;
      const inst = this.prog.insts[pc]!;
      switch (inst.op) {
        case "char":
          pcs.push(pc);
          break;
        case "match":
          matched = true;
          break;
        case "jmp":
          stack.push(inst.out);
          break;
        case "split":
          stack.push(inst.out1, inst.out);
          break;
        case "assert":
          if (holds(inst.a, s.prev, nextKind)) stack.push(inst.out);
          break;
      }
    }
    spend(visits * VISIT_COST);
    return { pcs, matched };
  }

  private state(raw: number[], prev: number): State {
    let h = prev * 31 + raw.length;
    for (const pc of raw) h = (Math.imul(h, 0x01000193) ^ pc) | 0;
    let bucket = this.states.get(h);
    const found = bucket?.find((s) => s.prev === prev && s.raw.length === raw.length && s.raw.every((pc, i) => pc === raw[i]));
    if (found) return found;
    if (this.count >= MAX_STATES) {
      // start over: the states dropped stay reachable only from the current one
      this.states = new Map();
      this.count = 0;
      bucket = undefined;
    }
    const s: State = { raw, prev, next: [] };
    if (bucket) bucket.push(s);
    else this.states.set(h, [s]);
    this.count++;
    return s;
  }

  private wideClass(c: number): number {
    let k = this.wide.get(c);
    if (k === undefined) {
      k = this.classOf(c);
      spend(16 + 8 * this.prog.sets.length); // case folding a code point outside ASCII goes through strings
      if (this.wide.size < MAX_STATES * 4) this.wide.set(c, k);
    }
    return k;
  }

  private classOf(c: number): number {
    const kind = c === 10 ? NEWLINE : isWordChar(c) ? WORD : OTHER;
    const member = new Uint8Array(this.prog.sets.length);
    let key = this.prog.asserts ? String(kind) : "";
    this.prog.sets.forEach((set, i) => {
      member[i] = inSet(set, c) ? 1 : 0;
      key += member[i];
    });
    let k = this.classIds.get(key);
    if (k === undefined) {
      k = this.classKind.length;
      this.classIds.set(key, k);
      this.classKind.push(kind);
      this.classSets.push(member);
    }
    return k;
  }
}

/** RE2's empty-width assertions, given the kinds of the code points before and after. */
function holds(a: string, prev: number, next: number): boolean {
  switch (a) {
    case "begin_text":
      return prev === NONE;
    case "end_text":
      return next === NONE;
    case "begin_line":
      return prev === NONE || prev === NEWLINE;
    case "end_line":
      return next === NONE || next === NEWLINE;
    case "word":
      return (prev === WORD) !== (next === WORD);
    default:
      return (prev === WORD) === (next === WORD);
  }
}
