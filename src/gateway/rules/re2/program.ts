/**
 * A parsed RE2 pattern (re2/syntax.ts) compiled to an NFA program (Thompson's construction): `char` consumes one code
 * point of a set, `split` forks, `jmp` jumps, `assert` tests the empty string between two code points, `match` ends.
 * Counted repetitions are written out (`x{2,4}` is `xx(x(x)?)?`), so the program's size is bounded at compile time:
 * over MAX_PROGRAM instructions is refused — the matcher's work per code point of the input is at most that.
 */
import type { CharSet } from "./charset.ts";
import { Re2SyntaxError, type Assertion, type Node } from "./syntax.ts";

export type Inst =
  | { op: "char"; set: CharSet; out: number }
  | { op: "split"; out: number; out1: number }
  | { op: "jmp"; out: number }
  | { op: "assert"; a: Assertion; out: number }
  | { op: "match" };

export interface Program {
  insts: Inst[];
  start: number;
  /** The distinct sets of the `char` instructions (a repeated atom shares its set). */
  sets: CharSet[];
  /** Whether any instruction tests the text around it (then the matcher tracks the previous code point's kind). */
  asserts: boolean;
}

/** The largest program compiled: RE2 bounds its programs too (by memory); 5,000 steps is generous for a policy. */
export const MAX_PROGRAM = 5_000;

export function compileProgram(root: Node): Program {
  const insts: Inst[] = [];
  const sets = new Set<CharSet>();
  let asserts = false;
  const emit = (i: Inst): number => {
    if (insts.length >= MAX_PROGRAM) throw new Re2SyntaxError(`the pattern is too large: over ${MAX_PROGRAM} steps once its repetitions are written out`);
    insts.push(i);
    return insts.length - 1;
  };

  /** Compiles `n` so that it continues at `next`; returns its entry. Built back to front: every target is known. */
  function build(n: Node, next: number): number {
    switch (n.k) {
      case "empty":
        return next;
      case "char":
        sets.add(n.set);
        return emit({ op: "char", set: n.set, out: next });
      case "assert":
        asserts = true;
        return emit({ op: "assert", a: n.a, out: next });
      case "cat": {
        let at = next;
        for (let i = n.items.length - 1; i >= 0; i--) at = build(n.items[i]!, at);
        return at;
      }
      case "alt": {
        const entries = n.items.map((item) => build(item, next));
        let at = entries[entries.length - 1]!;
        for (let i = entries.length - 2; i >= 0; i--) at = emit({ op: "split", out: entries[i]!, out1: at });
        return at;
      }
      case "repeat":
        return repeat(n.node, n.min, n.max, next);
    }
  }

  function repeat(node: Node, min: number, max: number, next: number): number {
    let at = next;
    if (max === -1) {
      // x*: a loop — split to the body (which jumps back) or on
      const loop = emit({ op: "split", out: -1, out1: next });
      const body = build(node, loop);
      (insts[loop] as { out: number }).out = body;
      at = loop;
    } else {
      for (let i = min; i < max; i++) at = emit({ op: "split", out: build(node, at), out1: next });
    }
    // the optional copies skip to `next` from each one: x{1,3} = x(x(x)?)?
    for (let i = 0; i < min; i++) at = build(node, at);
    return at;
  }

  const match = emit({ op: "match" });
  const start = build(root, match);
  return { insts, start, sets: [...sets], asserts };
}
