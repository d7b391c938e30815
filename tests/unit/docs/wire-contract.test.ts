/**
 * docs/wire-contract.md holds the one list of the gateway's endpoints and the one table of its errors, read here
 * against the code so neither can drift: every route of the route table (src/gateway/routes.ts) has its row — method,
 * path, who may call it, the rate budget it counts against — and no row names a route that is not there; every code
 * of src/protocol/errors.ts has its row with the status that table gives it; every OAuth error code the OAuth server
 * (src/gateway/oauth-server/) and the MCP door (src/gateway/mcp/) answer with, and every JSON-RPC error code of the
 * MCP door, has its row; and no other page keeps a copy of either. Each failure names the row to add (or remove) and
 * where.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { routeTable } from "../../../src/gateway/routes.ts";
import type { Route } from "../../../src/gateway/context.ts";
import { ERRORS, ERROR_CODES, type ErrorCode } from "../../../src/protocol/errors.ts";

const REPO = resolve(import.meta.dir, "../../..");
const DOC = "docs/wire-contract.md";
const doc = readFileSync(join(REPO, DOC), "utf8");
/** Every optional feature on, so its rows are in the table too. */
const ROUTES = routeTable({ demo: true, native: true });

describe("the endpoint list of docs/wire-contract.md", () => {
  const rows = endpointRows();

  test("every route of the route table has a row with its method and path", () => {
    const missing = ROUTES.filter((r) => !rows.some((row) => servesRoute(row, r))).map(
      (r) =>
        `${r.method} ${r.path} (route "${r.name}"): add the row | ${r.method === "*" ? "ANY" : r.method} | \`${r.path}\` | <success status> | <what it does> | <who may call it${r.limit ? `; \`${r.limit}\` budget` : ""}> | to "## Endpoints" in ${DOC}`,
    );
    expect(missing).toEqual([]);
  });

  test("every method and path a row names is served by a route of the route table", () => {
    const stale: string[] = [];
    for (const row of rows) {
      for (const path of row.paths) {
        for (const method of row.methods) {
          const served = ROUTES.some((r) => covers(path, r.path) && (method === "ANY" ? r.method === "*" : r.method === method || r.method === "*"));
          if (!served) stale.push(`${DOC} names ${method} ${path}, which no route of src/gateway/routes.ts serves: fix or remove that row`);
        }
      }
    }
    expect(stale).toEqual([]);
  });

  test("a row's 'who may call it' names the credential the route's guard checks and the rate budget it counts against", () => {
    const CREDENTIAL = { admin: "admin token", introspection: "introspection token", metrics: "metrics token" } as const;
    const wrong: string[] = [];
    for (const row of rows) {
      const served = ROUTES.filter((r) => servesRoute(row, r));
      for (const r of served) {
        if (r.auth !== "none" && !row.who.includes(CREDENTIAL[r.auth])) {
          wrong.push(`${row.methods.join(", ")} ${row.paths.join(", ")}: route "${r.name}" is guarded by auth "${r.auth}": say "${CREDENTIAL[r.auth]}" in its 'who may call it' cell`);
        }
      }
      const budgets = new Set(served.flatMap((r) => (r.limit ? [r.limit] : [])));
      const named = new Set([...row.who.matchAll(/`(\w+)` budget/g)].map((m) => m[1]!));
      for (const b of budgets) if (!named.has(b)) wrong.push(`${row.methods.join(", ")} ${row.paths.join(", ")}: counts against the \`${b}\` rate budget: say "\`${b}\` budget" in its 'who may call it' cell`);
      for (const b of named) if (!budgets.has(b as never)) wrong.push(`${row.methods.join(", ")} ${row.paths.join(", ")}: names the \`${b}\` budget, which none of its routes counts against`);
    }
    expect(wrong).toEqual([]);
  });
});

describe("the error tables of docs/wire-contract.md", () => {
  test("every code of src/protocol/errors.ts has exactly one row, with the status that table gives it", () => {
    const rows = tablesOf(section("## Errors", "### ATH errors")).flatMap((t) => t.rows);
    const problems: string[] = [];
    const seen = new Map<string, number>();
    for (const cells of rows) {
      const code = one(cells[0]!);
      const status = Number.parseInt(cells[1] ?? "", 10);
      seen.set(code, (seen.get(code) ?? 0) + 1);
      if (!(code in ERRORS)) {
        problems.push(`\`${code}\` is not a code of src/protocol/errors.ts: remove its row from "### ATH errors" in ${DOC}`);
        continue;
      }
      const expected = ERRORS[code as ErrorCode].status;
      if (status !== expected) problems.push(`\`${code}\` is ${expected} in src/protocol/errors.ts, its row in ${DOC} says ${cells[1]}`);
    }
    for (const [code, n] of seen) if (n > 1) problems.push(`\`${code}\` has ${n} rows in "### ATH errors" of ${DOC}: keep one`);
    for (const code of ERROR_CODES) {
      if (!seen.has(code)) problems.push(`add the row | \`${code}\` | ${ERRORS[code].status} | <when it happens> | to "### ATH errors" in ${DOC}`);
    }
    expect(problems).toEqual([]);
  });

  test("every OAuth error code the OAuth server answers with has a row, and every row's code is one it answers with", () => {
    // the OAuth server's handlers, and the boundary that answers their routes' limits and failures in OAuth's words
    const used = new Set([...oauthCodesIn("src/gateway/oauth-server"), ...oauthCodesIn("src/gateway/http/pipeline.ts")]);
    const table = tablesOf(section("## Errors", "### OAuth errors")).find((t) => t.header[0] === "error");
    expect(table).toBeDefined();
    const documented = new Set(table!.rows.map((cells) => one(cells[0]!)));
    expect([
      ...[...used].filter((c) => !documented.has(c)).map((c) => `add the row | \`${c}\` | <status> | <where> | <when> | to "### OAuth errors at \`/oauth/*\`" in ${DOC}`),
      ...[...documented].filter((c) => !used.has(c)).map((c) => `\`${c}\` is not answered by src/gateway/oauth-server/ nor the boundary: remove its row from "### OAuth errors" in ${DOC}`),
    ]).toEqual([]);
  });

  test("every challenge error and every JSON-RPC error code of the MCP door has a row, and every row's is one it answers with", () => {
    const tables = tablesOf(section("## Errors", "### The MCP door's errors"));
    const challenges = tables.find((t) => t.header[0] === "status" && t.header[1] === "error");
    const rpc = tables.find((t) => t.header[0] === "code");
    expect(challenges).toBeDefined();
    expect(rpc).toBeDefined();
    const usedChallenges = oauthCodesIn("src/gateway/mcp");
    const documentedChallenges = new Set(challenges!.rows.map((cells) => one(cells[1]!)));
    const sources = ["src/gateway/mcp", "src/gateway/http/errors.ts", "src/protocol/mcp-front-door.ts"];
    const usedRpc = new Set(sources.flatMap((s) => files(s)).flatMap((f) => [...code(f).matchAll(/-32\d{3}\b/g)].map((m) => m[0])));
    const documentedRpc = new Set(rpc!.rows.map((cells) => one(cells[0]!)));
    const where = `"### The MCP door's errors" in ${DOC}`;
    expect([
      ...[...usedChallenges].filter((c) => !documentedChallenges.has(c)).map((c) => `add the row | <401 or 403> | \`${c}\` | <when> | to the challenge table of ${where}`),
      ...[...documentedChallenges].filter((c) => !usedChallenges.has(c)).map((c) => `\`${c}\` is not answered by src/gateway/mcp/: remove its row from ${where}`),
      ...[...usedRpc].filter((c) => !documentedRpc.has(c)).map((c) => `add the row | \`${c}\` | <HTTP status> | <when> | to the JSON-RPC table of ${where}`),
      ...[...documentedRpc].filter((c) => !usedRpc.has(c)).map((c) => `JSON-RPC error ${c} is not answered by the MCP door: remove its row from ${where}`),
    ]).toEqual([]);
  });
});

describe("one copy", () => {
  test("no other page keeps a copy of the endpoint list or of the errors table: they link to docs/wire-contract.md", () => {
    const pages = ["README.md", ...readdirSync(join(REPO, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)].filter((p) => p !== DOC);
    const copies: string[] = [];
    for (const page of pages) {
      for (const line of readFileSync(join(REPO, page), "utf8").split("\n")) {
        if (/^\|\s*methods?\s*\|\s*path\s*\|/i.test(line)) copies.push(`${page} has an endpoint table (${line.slice(0, 40)}…): link to ${DOC}#endpoints instead, and put its rows there`);
        if (/^\|\s*code\s*\|\s*status\s*\|/i.test(line)) copies.push(`${page} has an error table (${line.slice(0, 40)}…): link to ${DOC}#errors instead, and put its rows there`);
      }
    }
    expect(copies).toEqual([]);
  });
});

// internal

interface EndpointRow {
  methods: string[];
  paths: string[];
  who: string;
}

/** Error codes of the OAuth registries (RFC 6749 §4.1.2.1 and §5.2, RFC 6750 §3.1, RFC 7591 §3.2.2, RFC 8707, RFC 9449, RFC 8628, RFC 7009). */
const OAUTH_CODES = [
  "invalid_request", "unauthorized_client", "access_denied", "unsupported_response_type", "invalid_scope", "server_error",
  "temporarily_unavailable", "invalid_client", "invalid_grant", "unsupported_grant_type", "invalid_token", "insufficient_scope",
  "invalid_redirect_uri", "invalid_client_metadata", "invalid_software_statement", "unapproved_software_statement", "invalid_target",
  "invalid_dpop_proof", "use_dpop_nonce", "authorization_pending", "slow_down", "expired_token", "unsupported_token_type",
  // OpenID Connect Core §3.1.2.6, answered at /oauth/token for an ID-JAG whose person must connect first (DESIGN §23)
  "interaction_required",
];

/** The rows of every table under "## Endpoints". */
function endpointRows(): EndpointRow[] {
  const rows = tablesOf(section("## Endpoints")).filter((t) => t.header[0] === "method").flatMap((t) => t.rows);
  expect(rows.length).toBeGreaterThan(0);
  return rows.map((cells) => ({
    methods: cells[0]!.split(",").map((m) => m.trim()),
    paths: [...cells[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).filter((p) => p.startsWith("/")),
    who: cells[4] ?? "",
  }));
}

function servesRoute(row: EndpointRow, r: Route): boolean {
  const method = r.method === "*" ? null : r.method;
  return row.paths.some((p) => covers(p, r.path)) && (method === null || row.methods.includes(method));
}

/** A documented path names a route's template exactly; `/x/…` names `/x` and everything under it (the console's pages). */
function covers(documented: string, template: string): boolean {
  if (!documented.endsWith("/…")) return documented === template;
  const base = documented.slice(0, -"/…".length);
  return template === base || template.startsWith(`${base}/`);
}

/** The text under a `##` heading (to the next `##`), or under a `###` heading within it (to the next heading). */
function section(h2: string, h3?: string): string {
  const start = doc.split("\n").findIndex((l) => l === h2);
  if (start < 0) throw new Error(`${DOC} has no heading "${h2}"`);
  const lines = doc.split("\n").slice(start + 1);
  const end = lines.findIndex((l) => /^## /.test(l));
  const body = end < 0 ? lines : lines.slice(0, end);
  if (h3 === undefined) return body.join("\n");
  const sub = body.findIndex((l) => l.startsWith(h3));
  if (sub < 0) throw new Error(`${DOC} has no heading starting "${h3}" under "${h2}"`);
  const rest = body.slice(sub + 1);
  const next = rest.findIndex((l) => /^#{1,3} /.test(l));
  return (next < 0 ? rest : rest.slice(0, next)).join("\n");
}

/** Markdown tables: header cells and body rows, cells split on unescaped `|`. */
function tablesOf(text: string): { header: string[]; rows: string[][] }[] {
  const out: { header: string[]; rows: string[][] }[] = [];
  let current: { header: string[]; rows: string[][] } | null = null;
  for (const line of text.split("\n")) {
    if (!line.startsWith("|")) {
      current = null;
      continue;
    }
    const cells = line.replace(/^\||\|$/g, "").split(/(?<!\\)\|/).map((c) => c.trim());
    if (current === null) out.push((current = { header: cells, rows: [] }));
    else if (!cells.every((c) => /^:?-+:?$/.test(c))) current.rows.push(cells);
  }
  return out;
}

/** The one backticked value of a cell (a code), else the cell as it is. */
function one(cell: string): string {
  return /^`([^`]+)`/.exec(cell)?.[1] ?? cell;
}

/** OAuth error codes written as string literals in the source under `dir`. */
function oauthCodesIn(dir: string): Set<string> {
  const text = files(dir).map(code).join("\n");
  return new Set(OAUTH_CODES.filter((c) => text.includes(`"${c}"`)));
}

function files(path: string): string[] {
  const abs = join(REPO, path);
  if (!statSync(abs).isDirectory()) return [abs];
  return readdirSync(abs).flatMap((name) => files(join(path, name))).filter((f) => f.endsWith(".ts"));
}

/** The source without comments (a comment may name a code it explains). */
function code(path: string): string {
  return readFileSync(path, "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
}
