/**
 * The shape of the gateway (DESIGN §2, STYLE.md "Gateway: thin handlers" and "Many doors, one decision"), held by
 * reading the source: only the rooms that own decisions call the store — domain/ (the decisions and their store calls),
 * the operator's admin/ and console/ (reads and edits of records), ops/ (the sweeper, queues, limits) — and the wiring
 * that builds it (app.ts, serve.ts). A handler of another room that reached for `gw.store` (or a transaction's `tx`)
 * would be a decision written outside the domain, where the next door would copy it.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const ROOT = join(import.meta.dir, "../..");
const GATEWAY = join(ROOT, "src/gateway");
const OWNERS = ["domain/", "admin/", "console/", "ops/", "app.ts", "serve.ts"];
/** A store call: `gw.store.x(`, `.store.x(`, a transaction's `tx.x(`, or a `store.` parameter's. */
const STORE_CALL = /\b(?:\w+\.)?store\.(?!kind\b)\w+\(|\btx\.\w+\(/g;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : [];
  });
}

/** The source without comments (a comment may name a store call it explains). */
function code(path: string): string {
  return readFileSync(path, "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
}

describe("the gateway's rooms", () => {
  test("only domain/, admin/, console/, ops/ and the wiring call the store", () => {
    const offenders: string[] = [];
    for (const path of files(GATEWAY)) {
      const rel = relative(GATEWAY, path);
      if (OWNERS.some((o) => rel === o || rel.startsWith(o))) continue;
      // the sandbox provider is an outside server with storage of its own (demo/), not ath's store
      if (rel.startsWith("demo/")) continue;
      for (const m of code(path).matchAll(STORE_CALL)) offenders.push(`${rel}: ${m[0]}`);
    }
    expect(offenders).toEqual([]);
  });

  test("the check sees a store call where one is written (it can fail)", () => {
    const sample = "const s = await gw.store.getSession(id);\nawait tx.lockAgent(x);\n// gw.store.ignored(\n";
    expect([...sample.replace(/(^|[^:"'`])\/\/.*$/gm, "$1").matchAll(STORE_CALL)].map((m) => m[0])).toEqual(["gw.store.getSession(", "tx.lockAgent("]);
  });
});
