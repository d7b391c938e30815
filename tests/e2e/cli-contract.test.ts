/**
 * The CLI's machine contract, held still while the client side is reshaped (issue 25): for every command, what
 * `ath <cmd> --help --format json` says about it — its flags (name, type, aliases, options, default, global), its
 * positionals, its subcommands, its exit codes, the JSON Schema of what it prints and of its error document — is
 * compared with tests/e2e/fixtures/cli-contract.json, recorded from the build before the reshape. Additions are
 * allowed (a new command, flag, subcommand, output field); a removal or a change is a broken contract.
 * `ATH_RECORD_CONTRACT=1 bun test tests/e2e/cli-contract.test.ts` records the file afresh (then review the diff).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ath, ensureBinary } from "../helpers/cli-binary.ts";
import { tempDir } from "../helpers/net.ts";

const FIXTURE = join(import.meta.dir, "fixtures", "cli-contract.json");

let home: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  ensureBinary();
  home = await tempDir("cli-contract");
});
afterAll(async () => {
  await home?.remove();
});

type Contract = Record<string, unknown>;

/** The contract of one command: its help document without the prose (help text and descriptions may change). */
function contractOf(doc: any): Contract {
  return {
    positionals: doc.positionals.map((p: any) => ({ name: p.name, required: p.required })),
    flags: Object.fromEntries(doc.flags.map((f: any) => {
      const { description: _d, name, ...rest } = f;
      return [name, rest];
    })),
    subcommands: doc.subcommands,
    exit_codes: doc.exit_codes,
    ...(doc.output_schema === undefined ? {} : { output_schema: doc.output_schema }),
    error_schema: doc.error_schema,
  };
}

/** Every command of the tree, from `ath --help --format json` down. */
async function walk(): Promise<Record<string, Contract>> {
  const out: Record<string, Contract> = {};
  const queue: string[][] = [[]];
  while (queue.length > 0) {
    const words = queue.shift()!;
    const r = await ath(home.path, [...words, "--help", "--format", "json"]);
    expect(r.code).toBe(0);
    const doc = r.json();
    out[["ath", ...words].join(" ")] = contractOf(doc);
    for (const sub of doc.subcommands as string[]) queue.push([...words, sub]);
  }
  return out;
}

/** Where `now` takes away or changes something `before` had (an empty list: only additions). */
function breaks(before: unknown, now: unknown, at: string): string[] {
  if (Array.isArray(before)) {
    if (!Array.isArray(now)) return [`${at}: was a list`];
    // lists of names (subcommands, required, enum): every old entry still there; other lists: element by element
    if (before.every((x) => typeof x !== "object")) return before.filter((x) => !now.includes(x)).map((x) => `${at}: lost ${JSON.stringify(x)}`);
    return before.flatMap((x, i) => breaks(x, now[i], `${at}[${i}]`));
  }
  if (before !== null && typeof before === "object") {
    if (now === null || typeof now !== "object" || Array.isArray(now)) return [`${at}: was an object`];
    return Object.entries(before).flatMap(([k, v]) => (Object.hasOwn(now, k) ? breaks(v, (now as Record<string, unknown>)[k], `${at}.${k}`) : [`${at}: lost ${k}`]));
  }
  return Object.is(before, now) ? [] : [`${at}: ${JSON.stringify(before)} became ${JSON.stringify(now)}`];
}

test("every command's flags, exit codes and output schemas are those recorded (additions only)", async () => {
  const now = await walk();
  if (process.env.ATH_RECORD_CONTRACT === "1") writeFileSync(FIXTURE, `${JSON.stringify(now, null, 1)}\n`);
  const before = JSON.parse(readFileSync(FIXTURE, "utf8")) as Record<string, Contract>;
  expect(Object.keys(before).length).toBeGreaterThan(30);
  expect(breaks(before, now, "")).toEqual([]);
}, 240_000);

test("the comparison catches a lost flag, a changed type and a lost output field", () => {
  const before = { a: { flags: { "--x": { type: "string" } }, output_schema: { required: ["id"], properties: { id: { type: "string" } } } } };
  expect(breaks(before, { a: { flags: {}, output_schema: before.a.output_schema } }, "")).toEqual([".a.flags: lost --x"]);
  expect(breaks(before, { a: { flags: { "--x": { type: "boolean" } }, output_schema: before.a.output_schema } }, "")).toEqual(['.a.flags.--x.type: "string" became "boolean"']);
  expect(breaks(before, { a: { ...before.a, output_schema: { required: [], properties: {} } } }, "")).toEqual([".a.output_schema.required: lost \"id\"", ".a.output_schema.properties: lost id"]);
  expect(breaks(before, { a: { ...before.a, flags: { "--x": { type: "string" }, "--y": { type: "string" } } }, b: {} }, "")).toEqual([]);
});
