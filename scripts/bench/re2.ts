/**
 * CEL `matches` (issue 35, finding 5): JavaScript's backtracking RegExp against the linear matcher of
 * src/gateway/rules/re2/ — the decision's measurement. Rows: the pattern (`^(a+)+$`, 26 `a`s and a `!`) and
 * its kin as the text grows (JavaScript skipped past 2 s); the worst cases of the linear matcher (a DFA that never
 * settles, a large program, code points outside ASCII with case folding) with how long it takes to spend its budget;
 * and what typical policy patterns cost each side, warm.
 *
 * Usage: bun scripts/bench/re2.ts
 */
import { compileRe2, MAX_WORK, withMatchBudget } from "../../src/gateway/rules/re2/match.ts";

const time = (f: () => unknown, reps = 1): { ms: number; result: string } => {
  let result = "";
  const t = performance.now();
  for (let i = 0; i < reps; i++) {
    try {
      result = String(f());
    } catch (err) {
      result = err instanceof Error ? err.name : String(err);
    }
  }
  return { ms: (performance.now() - t) / reps, result };
};

console.log("backtracking: pattern\ttext\tJavaScript RegExp (ms)\tlinear (ms)");
for (const [pattern, make, sizes] of [
  ["^(a+)+$", (n: number) => `${"a".repeat(n)}!`, [16, 20, 24, 26, 1 << 20]],
  ["^(a|a)*$", (n: number) => `${"a".repeat(n)}!`, [16, 20, 24, 1 << 20]],
  [".*.*.*x", (n: number) => "a".repeat(n), [100, 200, 400, 1 << 20]],
] as const) {
  let skip = false;
  const re2 = compileRe2(pattern);
  for (const n of sizes) {
    const text = make(n);
    const js = skip ? null : time(() => new RegExp(pattern).test(text));
    if (js && js.ms > 2000) skip = true;
    const lin = time(() => re2.test(text));
    console.log(`${pattern}\t${n} chars\t${js ? js.ms.toFixed(1) : "skipped"}\t${lin.ms.toFixed(2)} (${lin.result})`);
  }
}

console.log(`\nworst cases of the linear matcher (budget ${MAX_WORK} steps per evaluation):`);
let random = "";
for (let i = 0; i < 1 << 20; i++) random += Math.random() < 0.5 ? "a" : "b";
let cjk = "";
for (let i = 0; i < 1 << 19; i++) cjk += String.fromCodePoint(0x4e00 + (i % 20000));
for (const [label, pattern, text] of [
  ["a DFA that never settles, 1 MiB", "(a|b)*a(a|b){20}c", random],
  ["a 3,000-step program, 1 MiB", `(?:${"a?".repeat(1000)})${"a".repeat(1000)}b`, "a".repeat(1 << 20)],
  ["(?i) Unicode classes, 512 Ki CJK", "(?i)[\\p{Lu}\\p{Greek}]x", cjk],
  ["200 alternatives, 1 MiB", `(${Array.from({ length: 200 }, (_, i) => `x${i}y`).join("|")})+z`, "x1yx2yx33y".repeat(100_000)],
] as const) {
  const re2 = compileRe2(pattern);
  const r = time(() => withMatchBudget(() => re2.test(text)));
  console.log(`${label}\t${r.ms.toFixed(1)} ms\t${r.result}`);
}

console.log("\ntypical, warm: pattern\ttext\tJavaScript (µs)\tlinear (µs)");
for (const [pattern, text] of [
  ["^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$", "alice.smith@example.com"],
  ["@evil\\.example$", "bob@evil.example"],
  ["(?i)^(drop|delete|truncate)\\b", "SELECT * FROM t"],
] as const) {
  const js = new RegExp(pattern.replace("(?i)", ""), pattern.startsWith("(?i)") ? "i" : "");
  const re2 = compileRe2(pattern);
  re2.test(text);
  const reps = 100_000;
  console.log(`${pattern}\t${text}\t${((time(() => js.test(text), reps).ms) * 1000).toFixed(2)}\t${(time(() => re2.test(text), reps).ms * 1000).toFixed(2)}`);
}
