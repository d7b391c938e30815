/**
 * The admin console's routes (DESIGN §9): GET pages read through the same functions as the admin API (so filters,
 * states and cursors mean the same), POST actions check the session and its CSRF token, act through the admin API's
 * functions (revocation exactly as `/ath/revoke`), and answer 303 back to their page with a fixed message
 * (Post/Redirect/Get). Not signed in: GETs go to the sign-in page, POSTs are refused.
 */
import { AthError, PATHS } from "../../protocol/index.ts";
import { AGENT_LISTS, agentByClientId, removeAgent, setAgentList, setAgentStatus, view as agentView, type AgentList } from "../admin/agents.ts";
import { adminDecide, listApprovals } from "../admin/approvals.ts";
import { listAudit } from "../admin/audit.ts";
import { removeProvider } from "../admin/providers.ts";
import { listTokens } from "../admin/tokens.ts";
import { webhookView } from "../domain/webhooks.ts";
import { federationView } from "../admin/mcp.ts";
import type { Call } from "../context.ts";
import { requestView } from "../domain/approvals.ts";
import { audit } from "../domain/audit.ts";
import { listProviders, maskedProvider } from "../domain/providers.ts";
import { revokeTokens } from "../domain/tokens.ts";
import { readText } from "../http/request.ts";
import { redirect } from "../http/response.ts";
import { htmlResponse } from "../pages/layout.ts";
import { agentPage as renderAgentPage } from "./agent-page.ts";
import * as pages from "./pages.ts";
import { checkCsrf, currentSession, signIn, signinCsrf, signOut, type ConsoleUser } from "./session.ts";

const ROOT = PATHS.adminConsole;

export async function showSignin(call: Call): Promise<Response> {
  if (await currentSession(call)) return redirect(ROOT);
  const { csrf, setCookie } = signinCsrf(call.gw, call.req);
  return htmlResponse(pages.signinPage({ csrf }), setCookie ? { headers: { "set-cookie": setCookie } } : {});
}

export async function submitSignin(call: Call): Promise<Response> {
  const { gw } = call;
  const form = await readForm(call);
  try {
    const cookie = await signIn(call, form);
    await audit(gw, "admin.signin", { data: { ip: call.peer } });
    return redirect(ROOT, 303, { "set-cookie": cookie });
  } catch (err) {
    if (!(err instanceof AthError) || (err.code !== "UNAUTHORIZED" && err.code !== "RATE_LIMITED")) throw err;
    await audit(gw, "admin.signin_failed", { data: { ip: call.peer, reason: err.code === "RATE_LIMITED" ? "rate_limited" : "wrong_token" } });
    const { csrf, setCookie } = signinCsrf(gw, call.req);
    const headers: Record<string, string> = { ...err.headers };
    if (setCookie) headers["set-cookie"] = setCookie;
    return htmlResponse(pages.signinPage({ csrf, error: err.message }), { status: err.status, headers });
  }
}

export async function submitSignout(call: Call): Promise<Response> {
  const { user } = await action(call);
  return redirect(`${ROOT}/signin`, 303, { "set-cookie": await signOut(call.gw, user) });
}

export async function overview(call: Call): Promise<Response> {
  return page(call, async (user) => {
    const { gw } = call;
    const agents: Record<string, number> = {};
    for (const a of await gw.store.listAgents()) agents[a.status] = (agents[a.status] ?? 0) + 1;
    const recent = (await listAudit(gw, "?limit=10")).events;
    return pages.overviewPage(shell(call, user, "overview"), {
      agents,
      tokens: await gw.store.countTokens(gw.now()),
      providers: (await listProviders(gw)).length,
      recent,
    });
  });
}

export async function agents(call: Call): Promise<Response> {
  return page(call, async (user) => {
    const all = (await call.gw.store.listAgents()).map(agentView);
    // pending (or asking to add scopes, DESIGN §17) first, then newest first
    const waiting = (a: (typeof all)[number]) => a.agent_status === "pending" || (a.pending_providers?.length ?? 0) > 0;
    all.sort((a, b) => Number(waiting(b)) - Number(waiting(a)) || b.created_at.localeCompare(a.created_at));
    return pages.agentsPage(shell(call, user, "agents"), all);
  });
}

export async function agentAction(call: Call): Promise<Response> {
  const { form } = await action(call);
  const clientId = call.params.client_id!;
  const what = form.get("action");
  if (what === "remove") {
    const r = await removeAgent(call.gw, clientId);
    return done("agents", `Agent removed; ${r.tokens_revoked} token(s) revoked.`);
  }
  const status = ({ approve: "approved", deny: "denied", suspend: "suspended" } as const)[what as "approve"];
  if (!status) throw new AthError("INVALID_REQUEST", "Choose Approve, Deny, Suspend or Remove.");
  const r = await setAgentStatus(call.gw, clientId, status);
  return done("agents", `Agent ${status}${r.tokens_revoked > 0 ? `; ${r.tokens_revoked} token(s) revoked` : ""}.`);
}

/** One agent's page: its approval rules, policy and budgets, each a JSON form (DESIGN §15, §16). */
export async function agentPage(call: Call): Promise<Response> {
  return page(call, async (user) => {
    const agent = await agentByClientId(call.gw, call.params.client_id!);
    return renderAgentPage(shell(call, user, "agents"), agent, await liveTokensOf(call, agent.client_id));
  });
}

/** The agent page's tokens: its live ones, read as the tokens page reads them. */
async function liveTokensOf(call: Call, clientId: string) {
  return (await listTokens(call.gw, `?${new URLSearchParams({ client_id: clientId, state: "active", limit: "50" })}`)).tokens;
}

/**
 * Saves one of the agent's lists from its form's JSON (empty clears it), checked as the admin API's PATCH checks it.
 * A mistake — not JSON, a field the schema refuses, a `when` that does not compile (named: `policy.1.when: …`) — is
 * shown on the page (400) with the text as it was sent, so the admin corrects it there.
 */
export async function agentListAction(call: Call): Promise<Response> {
  const { user, form } = await action(call);
  const clientId = call.params.client_id!;
  const key = call.params.list as AgentList;
  if (!AGENT_LISTS.includes(key)) throw new AthError("NOT_FOUND", `No list '${key}' on an agent.`);
  const source = form.get("json") ?? "";
  try {
    let value: unknown = [];
    if (source.trim() !== "") {
      try {
        value = JSON.parse(source);
      } catch {
        throw new AthError("INVALID_REQUEST", `That is not valid JSON: give a list (${LIST_LABELS[key]}), or [] to clear.`);
      }
    }
    await setAgentList(call.gw, clientId, key, value);
  } catch (err) {
    if (!(err instanceof AthError) || err.status !== 400) throw err;
    const agent = await agentByClientId(call.gw, clientId);
    const html = renderAgentPage(shell(call, user, "agents"), agent, await liveTokensOf(call, clientId), { list: key, message: err.message, source });
    return htmlResponse(html, { status: 400 });
  }
  return done(`agents/${encodeURIComponent(clientId)}`, `${LIST_LABELS[key][0]!.toUpperCase()}${LIST_LABELS[key].slice(1)} saved.`);
}

const LIST_LABELS: Record<AgentList, string> = { approval_rules: "approval rules", policy: "policy rules", budgets: "budgets" };

export async function approvals(call: Call): Promise<Response> {
  return page(call, async (user) => {
    const { gw } = call;
    // pending unless the filter says otherwise (its "any" sends an empty status)
    const q = new URLSearchParams(withoutFlash(call.search));
    if (!q.has("status")) q.set("status", "pending");
    const answer = await listApprovals(gw, `?${q}`);
    const rows = await Promise.all(
      answer.approvals.map(async (a) => {
        if (a.approver !== "admin" || a.status !== "pending") return a;
        const record = await gw.store.getApproval(a.approval_id);
        return record ? { ...a, request: await requestView(gw, record) } : a;
      }),
    );
    const filters = filtersOf(call.search);
    if (!new URLSearchParams(call.search).has("status")) filters.status = "pending";
    return pages.approvalsPage(shell(call, user, "approvals"), { filters, approvals: rows, next: answer.next_cursor });
  });
}

export async function approvalAction(call: Call): Promise<Response> {
  const { form } = await action(call);
  const what = form.get("action");
  if (what !== "approve" && what !== "deny") throw new AthError("INVALID_REQUEST", "Choose Approve or Deny.");
  await adminDecide(call.gw, call.params.approval_id!, what);
  return done("approvals", `Request ${what === "approve" ? "approved" : "denied"}.`);
}

export async function tokens(call: Call): Promise<Response> {
  return page(call, async (user) => {
    const answer = await listTokens(call.gw, withoutFlash(call.search));
    return pages.tokensPage(shell(call, user, "tokens"), { filters: filtersOf(call.search), tokens: answer.tokens, next: answer.next_cursor, now: call.gw.now() });
  });
}

export async function revokeAction(call: Call): Promise<Response> {
  const { form } = await action(call);
  const selector: Record<string, string> = {};
  for (const k of ["token_id", "client_id", "agent_id", "user_id", "provider_id"]) {
    const v = form.get(k);
    if (v) selector[k] = v;
  }
  if (Object.keys(selector).length === 0) throw new AthError("INVALID_REQUEST", "Say which tokens to revoke.");
  const revoked = await revokeTokens(call.gw, selector, "admin");
  return done("tokens", `${revoked.length} token(s) revoked.`);
}

export async function providers(call: Call): Promise<Response> {
  return page(call, async (user) => {
    const list = (await listProviders(call.gw)).map((p) => maskedProvider(p) as unknown as pages.ProviderRow);
    return pages.providersPage(shell(call, user, "providers"), list);
  });
}

export async function providerRemove(call: Call): Promise<Response> {
  await action(call);
  await removeProvider(call.gw, call.params.provider_id!);
  return done("providers", "Provider removed.");
}

/** The federated MCP URLs (DESIGN §22): members, and who connected which. */
export async function mcp(call: Call): Promise<Response> {
  return page(call, async (user) => pages.mcpPage(shell(call, user, "mcp"), (await federationView(call.gw)).urls));
}

export async function webhooks(call: Call): Promise<Response> {
  return page(call, async (user) => pages.webhooksPage(shell(call, user, "webhooks"), (await call.gw.store.listWebhooks()).map(webhookView)));
}

export async function webhookRemove(call: Call): Promise<Response> {
  await action(call);
  const id = call.params.webhook_id!;
  if (!(await call.gw.store.deleteWebhook(id))) throw new AthError("NOT_FOUND", `No webhook '${id}'`, { webhook_id: id });
  return done("webhooks", "Webhook removed.");
}

export async function auditLog(call: Call): Promise<Response> {
  return page(call, async (user) => {
    const answer = await listAudit(call.gw, withoutFlash(call.search));
    return pages.auditPage(shell(call, user, "audit"), { filters: filtersOf(call.search), events: answer.events, next: answer.next_cursor });
  });
}

// internal

/** A GET page: signed in, or off to the sign-in page. */
async function page(call: Call, render: (user: ConsoleUser) => Promise<string>): Promise<Response> {
  const user = await currentSession(call);
  if (!user) return redirect(`${ROOT}/signin`);
  return htmlResponse(await render(user));
}

/** A POST: signed in (else 401), its CSRF token checked; its form. */
async function action(call: Call): Promise<{ user: ConsoleUser; form: URLSearchParams }> {
  const user = await currentSession(call);
  if (!user) throw new AthError("UNAUTHORIZED", "Sign in to the admin console first.");
  const form = await readForm(call);
  checkCsrf(user, form);
  return { user, form };
}

async function readForm(call: Call): Promise<URLSearchParams> {
  const type = (call.req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") throw new AthError("INVALID_REQUEST", "Send the form as a browser does.");
  return new URLSearchParams(await readText(call));
}

/** The flash message travels in the query, and is shown only if it is one of the console's own. */
const FLASH_PREFIX = "done=";

function done(section: string, message: string): Response {
  return redirect(`${ROOT}/${section}?${FLASH_PREFIX}${encodeURIComponent(message)}`);
}

function shell(call: Call, user: ConsoleUser, section: pages.Shell["section"]): pages.Shell {
  const flash = new URLSearchParams(call.search).get("done");
  return { csrf: user.csrf, section, flash: flash && FLASHES.test(flash) ? flash : null };
}

/** The messages `done` writes: a count and fixed words — anything else in `done=` is not shown. */
const FLASHES = /^(Agent (approved|denied|suspended|removed)(; \d+ token\(s\) revoked)?\.|\d+ token\(s\) revoked\.|(Approval rules|Policy rules|Budgets) saved\.|Provider removed\.|Webhook removed\.|Request (approved|denied)\.)$/;

/** A body for reading: UTF-8 text (JSON pretty-printed), or a note for binary data. */
function withoutFlash(search: string): string {
  const q = new URLSearchParams(search);
  q.delete("done");
  const s = q.toString();
  return s === "" ? "" : `?${s}`;
}

/** The filters of a list page's query, without its cursor and flash (the pager adds the cursor). */
function filtersOf(search: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(search)) if (k !== "cursor" && k !== "done" && v !== "") out[k] = v;
  return out;
}
