/**
 * What every `ath admin` verb shares: the session (gateway, admin token) from its flags, the output, and the table
 * and key/value renderings — text a table for people (a header on a terminal, tab-separated when piped),
 * `--format json` the API's answer as it came. Exit codes as every command: 2 usage, 3 no gateway or no admin token,
 * 4 refused by the gateway, 5 unreachable.
 */
import { readFile } from "node:fs/promises";
import { adminSession, type AdminSession, type TokenFilters } from "../../../agent/flows/admin.ts";
import { sinceTime } from "../../../agent/admin.ts";
import { getDeps, type Deps } from "../../kit/deps.ts";
import { notConfigured, usageError } from "../../kit/errors.ts";
import { output, type Output } from "../../kit/render.ts";
import { fileProblem } from "../../../text/file-errors.ts";

export type Args = Record<string, unknown>;

export interface Setup extends AdminSession {
  deps: Deps;
  out: Output;
}

/** The gateway (`-g` as every command), the admin token in force, the output. */
export async function setup(a: Args, format: "text" | "json", o: { tokenFromLogin?: boolean; noToken?: boolean } = {}): Promise<Setup> {
  const deps = getDeps();
  const out = await output(format, deps);
  const gateway = text(a.gateway);
  const token = o.tokenFromLogin ? (text(a.token) ?? text(a["admin-token"]) ?? (await tokenFromStdin(deps))) : undefined;
  const adminToken = text(a["admin-token"]);
  const session = await adminSession({
    env: deps.env,
    fetch: deps.fetch,
    now: deps.now,
    ...(gateway === undefined ? {} : { gateway }),
    ...(adminToken === undefined ? {} : { adminToken }),
    ...(token === undefined ? {} : { token }),
    ...(o.noToken ? { noToken: true } : {}),
  });
  return { ...session, deps, out };
}

async function tokenFromStdin(deps: Deps): Promise<string> {
  if (deps.stdinTTY) deps.stderr("admin token (then Enter, Ctrl-D): ");
  const token = (await deps.readStdin()).trim();
  if (token === "") throw notConfigured("NO_ADMIN_TOKEN", "no admin token given: pass --token, or pipe it on stdin");
  if (/\s/.test(token)) throw usageError("the admin token must be one word");
  return token;
}

/** A file's text, or stdin's (`-`); an unreadable file is a usage error naming it. */
export async function readInput(file: string): Promise<string> {
  try {
    return file === "-" ? await getDeps().readStdin() : await readFile(file, "utf8");
  } catch (e) {
    throw usageError(`cannot read ${file}: ${fileProblem(e)}`);
  }
}

/** A JSON document from a file or stdin (`-`). */
export async function readDocument(file: string): Promise<unknown> {
  const textIn = await readInput(file);
  try {
    return JSON.parse(textIn);
  } catch {
    throw usageError(`${where(file)} is not valid JSON`);
  }
}

/** A provider entry from a file or stdin (`-`), as a JSON object. */
export async function readEntry(file: string): Promise<Record<string, unknown>> {
  const value = await readDocument(file);
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw usageError(`${where(file)} must hold a JSON object`);
  return value as Record<string, unknown>;
}

export const where = (file: string) => (file === "-" ? "stdin" : file);

export function filters(a: Args): TokenFilters {
  return defined({ agent_id: text(a["agent-id"]), client_id: text(a["client-id"]), user_id: text(a["user-id"]), provider_id: text(a.provider) });
}

export function page(a: Args): { limit?: number; cursor?: string } {
  return defined({ limit: limit(a), cursor: text(a.cursor) });
}

export function time(a: Args, name: "since" | "until", now: number): string | undefined {
  const raw = text(a[name]);
  if (raw === undefined) return undefined;
  const iso = sinceTime(raw, now);
  if (iso === undefined) throw usageError(`--${name} must be a duration (30m, 1h, 2d) or an ISO 8601 time, got "${raw}"`);
  return iso;
}

export function table(out: Output, header: string[], rows: string[][]): void {
  out.table(out.tty ? [header.map((h) => out.paint.bold(h)), ...rows] : rows);
}

/** One object as rows of `key value` (nested values as JSON). */
export function show(out: Output, answer: object): void {
  if (out.json) return out.doc(answer);
  out.table(Object.entries(answer).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
}

/** "more: --cursor …" when the answer has a next page. */
export function more(out: Output, next: string | null): void {
  if (next) out.info(`more: --cursor ${next}`);
}

export function text(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

export function str(v: unknown): string {
  return v === undefined || v === null ? "" : String(v);
}

/** The object without its undefined values. */
export function defined<T extends Record<string, unknown>>(o: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as never;
}

function limit(a: Args): number | undefined {
  const raw = text(a.limit);
  if (raw === undefined) return undefined;
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= 500)) throw usageError(`--limit must be a number from 1 to 500, got "${raw}"`);
  return n;
}
