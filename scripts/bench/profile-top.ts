/**
 * The top frames of a Bun `--cpu-prof` profile by samples taken while busy: a sample that closes a gap longer than
 * `--gap` ms (default 3; the sampler ticks every 1 ms) is idle time of the event loop, which Bun charges to whatever
 * ran last — a gateway profiled under wrk is idle between runs, and that would otherwise top the list.
 * Usage: bun scripts/bench/profile-top.ts FILE.cpuprofile [--top 40] [--gap 3] [--under src/] [--us-per-request N]
 * --under: also total the busy samples whose stack passes through each file under that path (inclusive).
 * --us-per-request: also charge each busy sample to the nearest ath function on its stack (its own time and the native
 *   work it called), as µs of a request that costs N µs of CPU in all — the per-request breakdown.
 */
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const file = args[0];
if (!file) {
  console.error("usage: bun scripts/bench/profile-top.ts FILE.cpuprofile [--top 40] [--gap 3]");
  process.exit(2);
}
const top = Number(flag("--top", "40"));
const gapUs = Number(flag("--gap", "3")) * 1000;
const under = flag("--under", "");

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const prof = JSON.parse(readFileSync(file, "utf8")) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const short = (url: string) => url.replace(/^.*\/(src|node_modules|scripts|tests)\//, "$1/");
const label = (n: Node) => `${n.callFrame.functionName || "(anonymous)"}  ${short(n.callFrame.url) || "[native]"}${n.callFrame.url ? `:${n.callFrame.lineNumber + 1}` : ""}`;

const self = new Map<string, number>();
const inclusiveFile = new Map<string, number>();
let busy = 0;
let idle = 0;
prof.samples.forEach((id, i) => {
  if ((prof.timeDeltas[i] ?? 0) > gapUs) {
    idle++;
    return;
  }
  busy++;
  const n = byId.get(id)!;
  const name = label(n);
  self.set(name, (self.get(name) ?? 0) + 1);
  if (under) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const url = byId.get(cur)!.callFrame.url;
      if (url.includes(under)) seen.add(short(url));
    }
    for (const f of seen) inclusiveFile.set(f, (inclusiveFile.get(f) ?? 0) + 1);
  }
});
// Where the busy samples are: the upstream call itself, ath's JavaScript, native work ath's code called, libraries,
// and what runs with no ath frame on the stack (Bun's server and client, GC, the event loop).
const kinds = new Map<string, number>();
prof.samples.forEach((id, i) => {
  if ((prof.timeDeltas[i] ?? 0) > gapUs) return;
  const leaf = byId.get(id)!.callFrame;
  let ours = false;
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) if (byId.get(cur)!.callFrame.url.includes("/src/")) ours = true;
  const kind =
    leaf.url === "" && leaf.functionName === "fetch" ? "native fetch (the upstream call)"
    : leaf.url.includes("/src/") ? "ath JavaScript"
    : leaf.url.includes("node_modules") ? "libraries' JavaScript"
    : ours ? "native work called from ath code"
    : "no ath frame (server, client, GC, event loop)";
  kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
});
console.log(`${file}: ${busy} busy samples (${idle} closing idle gaps left out)`);
for (const [k, n] of [...kinds].sort((a, b) => b[1] - a[1])) console.log(`${((100 * n) / busy).toFixed(1).padStart(5)}%  ${k}`);
console.log("\nself%   frame");
for (const [name, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${((100 * n) / busy).toFixed(1).padStart(5)}   ${name}`);
const usPerRequest = Number(flag("--us-per-request", "0"));
if (usPerRequest > 0) {
  const charged = new Map<string, number>();
  prof.samples.forEach((id, i) => {
    if ((prof.timeDeltas[i] ?? 0) > gapUs) return;
    let name: string | undefined;
    for (let cur: number | undefined = id; cur !== undefined && name === undefined; cur = parent.get(cur)) {
      const n = byId.get(cur)!;
      if (n.callFrame.url.includes("/src/")) name = `${n.callFrame.functionName || "(anonymous)"}  ${short(n.callFrame.url)}`;
    }
    const leaf = byId.get(id)!.callFrame;
    name ??= leaf.url === "" && leaf.functionName === "fetch" ? "fetch [native]" : "(no ath frame: server, client, GC, event loop)";
    charged.set(name, (charged.get(name) ?? 0) + 1);
  });
  console.log(`\nper request, charged to the nearest ath function (own time + native work it called), of ${usPerRequest} µs`);
  for (const [name, n] of [...charged].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((usPerRequest * n) / busy).toFixed(2).padStart(6)} µs  ${((100 * n) / busy).toFixed(1).padStart(5)}%  ${name}`);
  }
}
if (under) {
  console.log(`\ninclusive% by file under ${under}`);
  for (const [f, n] of [...inclusiveFile].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${((100 * n) / busy).toFixed(1).padStart(5)}   ${f}`);
}
