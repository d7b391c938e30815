/**
 * The operator's side of the admin API (DESIGN §9), shared by every front end of `ath admin`: which admin token is
 * in force (`--admin-token`, `ATH_ADMIN_TOKEN`, or the one `admin login` saved for this gateway in credentials.json,
 * under its lock), and one call that sends it as `X-ATH-User-Token` and returns the API's JSON object — an ATH error
 * answer is a `refused` ClientError (exit 4), no answer a `network` one (exit 5).
 */
import type { z } from "zod";
import { AdminAuditKey, AdminAuditPage, AdminProviderList, type AdminAuditEvent } from "../protocol/admin.ts";
import { HEADERS, PATHS } from "../protocol/constants.ts";
import { formatIssues } from "../protocol/lean.ts";
import { ClientError, notConfigured } from "./errors.ts";
import { readCredentials, updateCredentials, type Home } from "./home.ts";
import { httpError, readBody, send, type HttpOptions } from "./http.ts";

export interface AdminTarget {
  base: string;
  token: string;
  http: HttpOptions;
}

/** The token in force: the flag, else `ATH_ADMIN_TOKEN`, else the saved one; none is exit 3 NO_ADMIN_TOKEN. */
export async function adminToken(home: Home, base: string, flag: string | undefined, env: Record<string, string | undefined>): Promise<string> {
  if (flag) return flag;
  if (env.ATH_ADMIN_TOKEN) return env.ATH_ADMIN_TOKEN;
  const saved = (await readCredentials(home)).gateways[base]?.admin_token;
  if (saved) return saved;
  throw notConfigured(
    "NO_ADMIN_TOKEN",
    `no admin token for ${base}: run \`ath admin login -g ${base}\` (token on stdin), or pass --admin-token / set ATH_ADMIN_TOKEN`,
  );
}

/** Checks the token with the gateway (a refused token is not saved), then saves it for `base` (0600, locked). */
export async function login(home: Home, target: AdminTarget, now: () => number): Promise<void> {
  await adminCall(target, "GET", PATHS.adminProviders, AdminProviderList);
  await updateCredentials(
    home,
    (c) => {
      c.gateways[target.base] ??= { agents: {} };
      c.gateways[target.base]!.admin_token = target.token;
    },
    now,
  );
}

/** Forgets the saved token of `base`; whether there was one. */
export async function logout(home: Home, base: string, now: () => number): Promise<boolean> {
  let had = false;
  await updateCredentials(
    home,
    (c) => {
      const gw = c.gateways[base];
      had = gw?.admin_token !== undefined;
      if (gw) delete gw.admin_token;
    },
    now,
  );
  return had;
}

/** One admin API call; the answer, read with its wire schema (protocol/admin.ts). */
export async function adminCall<S extends z.ZodType>(t: AdminTarget, method: string, path: string, schema: S, json?: unknown): Promise<z.output<S>> {
  const req = { method, url: `${t.base}${path}` };
  const res = await send(
    { ...req, headers: { accept: "application/json", [HEADERS.adminToken]: t.token }, ...(json === undefined ? {} : { json }) },
    t.http,
  );
  const { bytes, truncated } = await readBody(req, res, t.http, { keep: MAX_ANSWER_BYTES });
  const text = Buffer.from(bytes).toString("utf8");
  if (!res.ok) throw httpError(req, res.status, text, res.headers.get("location") ?? undefined);
  let value: unknown;
  try {
    value = truncated ? undefined : JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ClientError("failure", "INVALID_RESPONSE", `[${method}] "${req.url}": ${res.status} answer is not a JSON object`, { status: res.status });
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new ClientError("failure", "INVALID_RESPONSE", `[${method}] "${req.url}": ${res.status} answer is not the admin API's: ${formatIssues(parsed.error).join("; ")}`, { status: res.status });
  }
  return parsed.data;
}

/** An admin API answer streamed as it comes (the audit export's JSONL): each chunk to `onChunk`. */
export async function adminStream(t: AdminTarget, path: string, onChunk: (chunk: Uint8Array) => void): Promise<void> {
  const req = { method: "GET", url: `${t.base}${path}` };
  const res = await send({ ...req, headers: { accept: "application/x-ndjson", [HEADERS.adminToken]: t.token } }, t.http);
  if (!res.ok) {
    const { bytes } = await readBody(req, res, t.http, { keep: MAX_ANSWER_BYTES });
    throw httpError(req, res.status, Buffer.from(bytes).toString("utf8"), res.headers.get("location") ?? undefined);
  }
  await readBody(req, res, t.http, { keep: 0, onChunk });
}

/** The gateway's public audit key (GET /.well-known/ath-audit-key): no admin token needed. */
export async function fetchAuditKey(base: string, http: HttpOptions): Promise<z.output<typeof AdminAuditKey>> {
  return adminCall({ base, token: "", http }, "GET", PATHS.auditKey, AdminAuditKey);
}

/** A query string of the given, non-empty values. */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s === "" ? "" : `?${s}`;
}

/**
 * `--since 1h` / `30m` / `2d` / `45s` before `now`, or an ISO 8601 date-time as it is; undefined when it is neither.
 */
export function sinceTime(value: string, now: number): string | undefined {
  const rel = /^(\d{1,6})([smhd])$/.exec(value);
  if (rel) return new Date(now - Number(rel[1]) * UNIT_MS[rel[2] as keyof typeof UNIT_MS]).toISOString();
  const ms = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : NaN;
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

export type AuditEventView = AdminAuditEvent;

/**
 * `admin audit --follow`: polls the audit API every `intervalMs` and hands each event newer than the last one seen
 * to `onEvent`, oldest first, until `signal` aborts. It starts after the newest event at the time it starts; pages
 * back until it meets the last seen id, so a burst larger than one page is not skipped.
 */
export async function followAudit(
  t: AdminTarget,
  filters: Record<string, string | undefined>,
  from: number,
  onEvent: (e: AuditEventView) => void,
  o: { intervalMs: number; signal: AbortSignal },
): Promise<void> {
  let last = from;
  while (!o.signal.aborted) {
    await sleep(o.intervalMs, o.signal);
    if (o.signal.aborted) return;
    const fresh: AuditEventView[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await adminCall(t, "GET", `${PATHS.adminAudit}${query({ ...filters, limit: 500, cursor })}`, AdminAuditPage);
      const events = page.events;
      const newer = events.filter((e) => e.id > last);
      fresh.push(...newer);
      if (newer.length < events.length || page.next_cursor === null) break;
      cursor = String(page.next_cursor);
    }
    for (const e of fresh.reverse()) onEvent(e);
    if (fresh.length > 0) last = fresh.at(-1)!.id;
  }
}

// internal

const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });
}
