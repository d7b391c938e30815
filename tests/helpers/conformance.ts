/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, under Bun) as the tests run it: `server
 * --url … --requirements <revision>` (exactly what a revision requires, at its own wire), the results read back from
 * its `-o` directory per scenario, and a table of them for the test's output.
 */
import { readdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { tempDir } from "./net.ts";

const PACKAGE = join(resolve(import.meta.dir, "../.."), "node_modules/@modelcontextprotocol/conformance");
const CONFORMANCE = join(PACKAGE, "dist/index.js");

export type Revision = "2025-11-25" | "2026-07-28";

export interface Check {
  id: string;
  name: string;
  status: string;
  errorMessage?: string;
}

/** scenario → its checks. */
export type Results = Record<string, Check[]>;

/** Runs the suite's server scenarios of `revision` against `url`. */
export async function runServerSuite(url: string, revision: Revision): Promise<Results> {
  const out = await tempDir("conformance-server");
  const suite = Bun.spawn([process.execPath, CONFORMANCE, "server", "--url", url, "--requirements", revision, "-o", out.path], { stdout: "pipe", stderr: "pipe" });
  await Promise.all([new Response(suite.stdout).text(), new Response(suite.stderr).text(), suite.exited]);
  const results = await scenarioResults(out.path);
  await out.remove();
  return results;
}

/** Runs `authorization --url` (the authorization-server scenarios), the person's part left to the caller. */
export function conformanceCli(args: string[]): ReturnType<typeof Bun.spawn> {
  return Bun.spawn([process.execPath, CONFORMANCE, ...args], { stdout: "pipe", stderr: "pipe" });
}

/** scenario → its checks, from the suite's `-o` directory (one `<mode>-<scenario>-<time>/checks.json` each). */
export async function scenarioResults(dir: string): Promise<Results> {
  const out: Results = {};
  for (const entry of await readdir(dir)) {
    const scenario = entry.replace(/^(authorization-server|server)-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, "");
    out[scenario] = JSON.parse(await readFile(join(dir, entry, "checks.json"), "utf8")) as Check[];
  }
  return out;
}

/** The server scenarios a revision requires (its `requirements/<revision>.yaml`'s `server:` list): what is scored. */
export async function scoredScenarios(revision: Revision): Promise<Set<string>> {
  const yaml = await readFile(join(PACKAGE, "requirements", `${revision}.yaml`), "utf8");
  const section = /^server:\n((?:  - .*\n)+)/m.exec(yaml);
  return new Set((section?.[1] ?? "").split("\n").map((l) => l.replace(/^  - /, "").trim()).filter(Boolean));
}

/** Only the scenarios in `keep`. */
export function only(results: Results, keep: ReadonlySet<string>): Results {
  return Object.fromEntries(Object.entries(results).filter(([s]) => keep.has(s)));
}

/** Whether a check counts as passed (the suite's INFO rows are notes, not verdicts). */
export function passed(c: Check): boolean {
  return c.status === "SUCCESS" || c.status === "INFO";
}

/** The checks passed in `straight` that fail or are missing in `through`, as `scenario / id: status message` lines. */
export function lostChecks(straight: Results, through: Results): string[] {
  const lost: string[] = [];
  for (const [scenario, checks] of Object.entries(straight)) {
    for (const c of checks.filter(passed)) {
      const there = through[scenario]?.find((t) => t.id === c.id && t.name === c.name);
      if (!there || !passed(there)) lost.push(`${scenario} / ${c.id} ${c.name}: ${there ? `${there.status} ${there.errorMessage ?? ""}` : "missing"}`);
    }
  }
  return lost;
}

/** One row per scenario: `passed/total` per column (results by column name). */
export function table(columns: Record<string, Results>): string {
  const names = Object.keys(columns);
  const scenarios = [...new Set(Object.values(columns).flatMap((r) => Object.keys(r)))].sort();
  const cell = (r: Results, s: string) => {
    const checks = r[s];
    if (!checks) return "—";
    return `${checks.filter(passed).length}/${checks.length}`;
  };
  const rows = scenarios.map((s) => `| ${s} | ${names.map((n) => cell(columns[n]!, s)).join(" | ")} |`);
  const totals = names.map((n) => {
    const all = Object.values(columns[n]!).flat();
    return `**${all.filter(passed).length}/${all.length}**`;
  });
  return [`| scenario | ${names.join(" | ")} |`, `|---|${names.map(() => "---").join("|")}|`, ...rows, `| total | ${totals.join(" | ")} |`].join("\n");
}
