/**
 * The work of `ath admin …` (cli/admin.ts is its command tree): resolve the gateway and the admin token, call the
 * admin API (agent/admin.ts), and print — `--format json` the API's answer object as it came, text a table for
 * people (a header on a terminal, tab-separated when piped). Exit codes as every command: 2 usage, 3 no gateway or
 * no admin token, 4 refused by the gateway, 5 unreachable.
 */
import { stringifyInert } from "../protocol/sanitize.ts";
import { readFile } from "node:fs/promises";
import { adminCall, adminToken, followAudit, login as saveLogin, logout as forget, query, sinceTime, type AdminTarget, type AuditEventView } from "../agent/admin.ts";
import { loadAgent, type Agent } from "../agent/flows/agent.ts";
import { PATHS } from "../protocol/constants.ts";
import { getDeps, type Deps } from "./deps.ts";
import { notConfigured, usageError } from "./errors.ts";
import { formatOf } from "./flags.ts";
import { output, type Output } from "./render.ts";

type Args = Record<string, unknown>;

export async function login(a: Args, raw: string[]): Promise<void> {
  const c = await setup(a, raw, { tokenFromLogin: true });
  await saveLogin(c.agent.home, c.target, c.deps.now);
  if (c.out.json) return c.out.doc({ gateway: c.target.base, logged_in: true });
  c.out.success(`admin token saved for ${c.target.base}`);
}

export async function logout(a: Args, raw: string[]): Promise<void> {
  const c = await setup(a, raw, { noToken: true });
  const had = await forget(c.agent.home, c.target.base, c.deps.now);
  if (c.out.json) return c.out.doc({ gateway: c.target.base, logged_out: had });
  c.out.success(had ? `admin token of ${c.target.base} forgotten` : `no admin token was saved for ${c.target.base}`);
}

// providers

export async function providersList(a: Args, raw: string[]): Promise<void> {
  const c = await setup(a, raw);
  const answer = await adminCall(c.target, "GET", PATHS.adminProviders);
  if (c.out.json) return c.out.doc(answer);
  const rows = (answer.providers as Record<string, unknown>[]).map((p) => [
    str(p.provider_id), str(p.display_name), str(p.source), (p.available_scopes as string[] | undefined ?? []).join(","),
  ]);
  table(c.out, ["PROVIDER", "NAME", "SOURCE", "SCOPES"], rows);
}

export async function providersGet(a: Args, raw: string[]): Promise<void> {
  const c = await setup(a, raw);
  show(c.out, await adminCall(c.target, "GET", `${PATHS.adminProviders}/${seg(a.id)}`));
}

export async function providersAdd(a: Args, raw: string[]): Promise<void> {
  const body = await readEntry(str(a.file));
  const c = await setup(a, raw);
  const answer = await adminCall(c.target, "POST", PATHS.adminProviders, body);
  if (c.out.json) return c.out.doc(answer);
  c.out.success(`provider ${str(answer.provider_id)} added`);
}

export async function providersSet(a: Args, raw: string[]): Promise<void> {
  const body = await readEntry(str(a.file));
  const c = await setup(a, raw);
  const answer = await adminCall(c.target, "PUT", `${PATHS.adminProviders}/${seg(a.id)}`, body);
  if (c.out.json) return c.out.doc(answer);
  c.out.success(`provider ${str(answer.provider_id)} saved`);
}

export async function providersRemove(a: Args, raw: string[]): Promise<void> {
  const c = await setup(a, raw);
  const answer = await adminCall(c.target, "DELETE", `${PATHS.adminProviders}/${seg(a.id)}`);
  if (c.out.json) return c.out.doc(answer);
  c.out.success(`provider ${str(a.id)} removed`);
}

// agents

export async function agentsList(a: Args, raw: string[]): Promise<void> {
  const c = await setup(a, raw);
  const answer = await adminCall(c.target, "GET", PATHS.adminAgents);
  const status = text(a.status);
  let agents = answer.agents as Record<string, unknown>[];
  if (status !== undefined) agents = agents.filter((x) => x.agent_status === status);
  if (c.out.json) return c.out.doc({ ...answer, agents });
  // pending first: they are what an operator acts on
  agents = [...agents].sort((x, y) => Number(y.agent_status === "pending") - Number(x.agent_status === "pending"));
  const rows = agents.map((x) => [
    str(x.client_id), str(x.agent_status), str(x.agent_id), str((x.developer as { name?: string } | undefined)?.name), str(x.purpose), str(x.created_at),
  ]);
  table(c.out, ["CLIENT_ID", "STATUS", "AGENT_ID", "DEVELOPER", "PURPOSE", "CREATED"], rows);
}

export async function agentsGet(a: Args, raw: string[]): Promise<void> {
  const c = await setup(a, raw);
  show(c.out, await adminCall(c.target, "GET", `${PATHS.adminAgents}/${seg(a.id)}`));
}

export async function agentStatus(a: Args, raw: string[], verb: "approve" | "deny" | "suspend"): Promise<void> {
  const status = ({ approve: "approved", deny: "denied", suspend: "suspended" } as const)[verb];
  const c = await setup(a, raw);
  const answer = await adminCall(c.target, "PATCH", `${PATHS.adminAgents}/${seg(a.id)}`, { status });
  if (c.out.json) return c.out.doc(answer);
  const revoked = Number(answer.tokens_revoked ?? 0);
  c.out.success(`agent ${str(a.id)} ${status}${revoked > 0 ? `; ${revoked} token(s) revoked` : ""}`);
}

export async function agentsRemove(a: Args, raw: string[]): Promise<void> {
  const c = await setup(a, raw);
  const answer = await adminCall(c.target, "DELETE", `${PATHS.adminAgents}/${seg(a.id)}`);
  if (c.out.json) return c.out.doc(answer);
  c.out.success(`agent ${str(a.id)} removed; ${Number(answer.tokens_revoked ?? 0)} token(s) revoked`);
}

// tokens

export async function tokensList(a: Args, raw: string[]): Promise<void> {
  const c = await setup(a, raw);
  const q = query({ ...filters(a), state: text(a.state), limit: limit(a), cursor: text(a.cursor) });
  const answer = await adminCall(c.target, "GET", `${PATHS.adminTokens}${q}`);
  if (c.out.json) return c.out.doc(answer);
  const now = c.deps.now();
  const rows = (answer.tokens as Record<string, unknown>[]).map((t) => [
    str(t.token_id),
    t.revoked_at !== null ? "revoked" : Date.parse(str(t.expires_at)) <= now ? "expired" : "active",
    str(t.client_id), str(t.user_id), str(t.provider_id), (t.scopes as string[]).join(","), str(t.created_at), str(t.expires_at),
  ]);
  table(c.out, ["TOKEN_ID", "STATE", "CLIENT_ID", "USER", "PROVIDER", "SCOPES", "CREATED", "EXPIRES"], rows);
  if (answer.next_cursor) c.out.info(`more: --cursor ${str(answer.next_cursor)}`);
}

export async function tokensRevoke(a: Args, raw: string[]): Promise<void> {
  const selector = { ...(text(a.token_id) ? { token_id: text(a.token_id) } : {}), ...filters(a) };
  const body = Object.fromEntries(Object.entries(selector).filter(([, v]) => v !== undefined));
  if (Object.keys(body).length === 0) throw usageError("say which tokens: a token_id, or --agent-id, --client-id, --user-id, --provider (ANDed)");
  const c = await setup(a, raw);
  const answer = await adminCall(c.target, "POST", PATHS.adminTokensRevoke, body);
  if (c.out.json) return c.out.doc(answer);
  c.out.line(`revoked ${Number(answer.revoked)} token(s)`);
}

// audit

export async function audit(a: Args, raw: string[]): Promise<void> {
  const now = getDeps().now();
  const since = time(a, "since", now);
  const until = time(a, "until", now);
  const c = await setup(a, raw);
  const f = { type: text(a.type), ...filters(a), since, until };
  const answer = await adminCall(c.target, "GET", `${PATHS.adminAudit}${query({ ...f, limit: limit(a), cursor: text(a.cursor) })}`);
  const events = answer.events as AuditEventView[];
  const follow = a.follow === true;
  if (!follow) {
    if (c.out.json) return c.out.doc(answer);
    table(c.out, AUDIT_HEADER, events.map(auditRow));
    if (answer.next_cursor) c.out.info(`more: --cursor ${str(answer.next_cursor)}`);
    return;
  }
  // --follow: the latest events oldest first, then each new one as it comes — json: one event object per line
  const print = (e: AuditEventView) => (c.out.json ? c.deps.stdout(`${stringifyInert(e)}\n`) : c.out.table([auditRow(e)]));
  if (!c.out.json && c.out.tty) table(c.out, AUDIT_HEADER, []);
  for (const e of [...events].reverse()) print(e);
  const stop = new AbortController();
  const remove = c.deps.onInterrupt(async () => stop.abort());
  try {
    await followAudit(c.target, { ...f, until: undefined }, events[0]?.id ?? 0, print, { intervalMs: FOLLOW_INTERVAL_MS, signal: stop.signal });
  } finally {
    remove();
  }
}

// internal

const FOLLOW_INTERVAL_MS = 1000;
const AUDIT_HEADER = ["AT", "TYPE", "CLIENT_ID", "PROVIDER", "USER", "DATA"];

interface Setup {
  deps: Deps;
  out: Output;
  agent: Agent;
  target: AdminTarget;
}

/** The gateway (`-g` as every command), the admin token in force, the output. */
async function setup(a: Args, raw: string[], o: { tokenFromLogin?: boolean; noToken?: boolean } = {}): Promise<Setup> {
  const deps = getDeps();
  const out = await output(formatOf(raw), deps);
  const agent = await loadAgent({ env: deps.env, fetch: deps.fetch, now: deps.now });
  const gateway = text(a.gateway);
  const base = agent.target({ mode: "gateway", ...(gateway === undefined ? {} : { gateway }) }).base;
  let token = "";
  if (o.tokenFromLogin) {
    token = text(a.token) ?? text(a["admin-token"]) ?? (await tokenFromStdin(deps));
  } else if (!o.noToken) {
    token = await adminToken(agent.home, base, text(a["admin-token"]), deps.env);
  }
  return { deps, out, agent, target: { base, token, http: agent.http } };
}

async function tokenFromStdin(deps: Deps): Promise<string> {
  if (deps.stdinTTY) deps.stderr("admin token (then Enter, Ctrl-D): ");
  const token = (await deps.readStdin()).trim();
  if (token === "") throw notConfigured("NO_ADMIN_TOKEN", "no admin token given: pass --token, or pipe it on stdin");
  if (/\s/.test(token)) throw usageError("the admin token must be one word");
  return token;
}

/** A provider entry from a file or stdin (`-`), as a JSON object. */
async function readEntry(file: string): Promise<Record<string, unknown>> {
  let textIn: string;
  try {
    textIn = file === "-" ? await getDeps().readStdin() : await readFile(file, "utf8");
  } catch (e) {
    throw usageError(`cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(textIn);
  } catch {
    throw usageError(`${file === "-" ? "stdin" : file} is not valid JSON`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw usageError(`${file === "-" ? "stdin" : file} must hold a JSON object`);
  return value as Record<string, unknown>;
}

function filters(a: Args) {
  return { agent_id: text(a["agent-id"]), client_id: text(a["client-id"]), user_id: text(a["user-id"]), provider_id: text(a.provider) };
}

function limit(a: Args): number | undefined {
  const raw = text(a.limit);
  if (raw === undefined) return undefined;
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= 500)) throw usageError(`--limit must be a number from 1 to 500, got "${raw}"`);
  return n;
}

function time(a: Args, name: "since" | "until", now: number): string | undefined {
  const raw = text(a[name]);
  if (raw === undefined) return undefined;
  const iso = sinceTime(raw, now);
  if (iso === undefined) throw usageError(`--${name} must be a duration (30m, 1h, 2d) or an ISO 8601 time, got "${raw}"`);
  return iso;
}

function auditRow(e: AuditEventView): string[] {
  return [e.at, e.type, e.client_id ?? "", e.provider_id ?? "", e.user_id ?? "", e.data === null ? "" : JSON.stringify(e.data)];
}

function table(out: Output, header: string[], rows: string[][]): void {
  out.table(out.tty ? [header.map((h) => out.paint.bold(h)), ...rows] : rows);
}

/** One object as rows of `key value` (nested values as JSON). */
function show(out: Output, answer: Record<string, unknown>): void {
  if (out.json) return out.doc(answer);
  out.table(Object.entries(answer).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
}

/** A path segment: ids are percent-encoded, so `../x` stays one segment. */
function seg(v: unknown): string {
  return encodeURIComponent(str(v));
}

function text(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

function str(v: unknown): string {
  return v === undefined || v === null ? "" : String(v);
}
