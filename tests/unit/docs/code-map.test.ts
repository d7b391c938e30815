/**
 * docs/development.md holds the one code map, read here against the tree so it cannot go stale: its table names every
 * folder of src/ (recursively) and the gateway's top-level files that wire it (app, serve, routes, context, options);
 * every path the page names exists — a folder's row may name its files by their bare names (`pipeline.ts`), which
 * must be in that folder; and a function named beside its file (`src/x.ts` (`fn`)) is in that file. Each failure
 * names the row to add, or the path to fix, and where.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const REPO = resolve(import.meta.dir, "../../..");
const DOC = "docs/development.md";
const doc = readFileSync(join(REPO, DOC), "utf8").replace(/```[\s\S]*?```/g, "");
/** The gateway's files that wire it together: each has a row of its own. */
const WIRING = ["app.ts", "serve.ts", "routes.ts", "context.ts", "options.ts"].map((f) => `src/gateway/${f}`);

describe("the code map of docs/development.md", () => {
  const rows = mapRows();

  test("names every folder of src/, and the gateway's wiring files, in a row of their own", () => {
    const named = new Set(rows.flatMap((r) => r.where));
    const missing = [...folders("src").map((d) => `${d}/`), ...WIRING]
      .filter((p) => !named.has(p))
      .map((p) => `add the row | \`${p}\` | <what lives there, from its modules' opening comments> | to "## Code map" in ${DOC}`);
    expect(missing).toEqual([]);
  });

  test("every path the page names exists", () => {
    const broken: string[] = [];
    for (const path of new Set([...doc.matchAll(/`([^`\s]+)`/g)].map((m) => m[1]!).filter(isRepoPath))) {
      // a template (`src/cli/commands/admin/<noun>.ts`) names its folder
      const concrete = /[<*{]/.test(path) ? dirname(path.split(/[<*{]/)[0]! + "x") : path.replace(/\/$/, "");
      if (!existsSync(join(REPO, concrete))) broken.push(`${DOC} names \`${path}\`, which does not exist: fix or remove it`);
    }
    for (const row of rows) {
      const folder = row.where.find((w) => w.endsWith("/"));
      if (!folder) continue;
      for (const [, name] of row.what.matchAll(/`([\w.-]+\.(?:ts|json|c))`/g)) {
        if (!existsSync(join(REPO, folder, name!))) broken.push(`the row of \`${folder}\` in ${DOC} names \`${name}\`, which is not in ${folder}: fix or remove it`);
      }
    }
    expect(broken).toEqual([]);
  });

  test("every function named beside its file is in that file", () => {
    const wrong: string[] = [];
    for (const m of doc.matchAll(/`((?:src|tests|scripts)\/[\w./-]+\.ts)` \(((?:`[\w.]+`(?:, )?)+)\)/g)) {
      const text = readFileSync(join(REPO, m[1]!), "utf8");
      for (const [, name] of m[2]!.matchAll(/`([\w.]+)`/g)) {
        const id = name!.split(".")[0]!;
        if (!new RegExp(`\\b${id}\\b`).test(text)) wrong.push(`${DOC} says \`${m[1]}\` has \`${name}\`, which it does not: fix the name or the file`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

// internal

interface MapRow {
  /** The backticked paths of the first cell. */
  where: string[];
  /** The second cell. */
  what: string;
}

/** The rows of the table under "## Code map". */
function mapRows(): MapRow[] {
  const lines = doc.split("\n");
  const start = lines.indexOf("## Code map");
  if (start < 0) throw new Error(`${DOC} has no heading "## Code map"`);
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((l) => /^## /.test(l));
  const table = (end < 0 ? rest : rest.slice(0, end)).filter((l) => l.startsWith("|")).slice(2);
  expect(table.length).toBeGreaterThan(0);
  return table.map((line) => {
    const [where = "", ...what] = line.replace(/^\||\|$/g, "").split(/(?<!\\)\|/);
    return { where: [...where.matchAll(/`([^`]+)`/g)].map((m) => m[1]!), what: what.join("|") };
  });
}

/** A path of this repository as the page writes it (from its root). */
function isRepoPath(token: string): boolean {
  return /^(src|tests|scripts|docs|\.ci)\/|^install\.sh$/.test(token);
}

/** Every folder under `dir`, recursively, relative to the repository. */
function folders(dir: string): string[] {
  return readdirSync(join(REPO, dir)).flatMap((name) => {
    const path = join(REPO, dir, name);
    return statSync(path).isDirectory() ? [relative(REPO, path), ...folders(relative(REPO, path))] : [];
  });
}
