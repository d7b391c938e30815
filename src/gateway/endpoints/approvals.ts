/**
 * GET/POST /ath/approvals/{approval_id} (DESIGN §15). The agent polls with its bearer token (or `Accept:
 * application/json`) and gets the JSON status — only for its own approvals (another client: 404). A browser gets the
 * approval page; the person may decide it only if they are its approver: for `approver: "user"`, the browser that
 * holds the signed `ath_user` cookie of the user whose grant the request would use; `admin` approvals are decided in
 * the admin console. Anyone else gets a 403 page — offering, when the provider names its users (an id_token, userinfo
 * or a token-response path), to sign in at the provider through the gateway's own OAuth client (PKCE, the gateway's
 * callback): the signed-in user id is compared with the approval's, and on a match the browser gets the cookie. The
 * forms carry CSRF tokens derived from HttpOnly cookies (`ath_user`; the browser-binding cookie for the sign-in).
 */
import { AthError, PATHS, type ProviderConfig } from "../../protocol/index.ts";
import type { ApprovalRecord } from "../../store/types.ts";
import type { Call, Gateway } from "../context.ts";
import { constantTimeEqual, hashSecret } from "../crypto/secrets.ts";
import { findAgent } from "../domain/agents.ts";
import { approvalStatus, decide, findApproval, requestView, statusDocument } from "../domain/approvals.ts";
import { approverCookieAfterConsent, readApprover, type ApproverIdentity } from "../domain/approver-cookie.ts";
import { audit } from "../domain/audit.ts";
import { bindingHash, ensureBinding, readBinding } from "../domain/browser-binding.ts";
import { findProvider, openProvider, outbound, requireProvider } from "../domain/providers.ts";
import { redirect } from "../http/response.ts";
import { authorizeUrl, exchangeCode, upstreamUserId } from "../oauth/client.ts";
import { createPkce } from "../oauth/pkce.ts";
import { userIdSource } from "../oauth/quirks.ts";
import { findTokenById, requireCallerToken } from "../domain/tokens.ts";
import { callerCredentials, readText } from "../http/request.ts";
import { errorResponse, json } from "../http/response.ts";
import { formActionSources, htmlResponse } from "../pages/index.ts";
import { renderApprovalAdminPage, renderApprovalDecidedPage, renderApprovalPage, renderApprovalSigninPage } from "../pages/approval.ts";
import type { McpClientView } from "../pages/consent.ts";
import { localhostOnly, redirectHost, resolveClient } from "../oauth-server/clients.ts";
import { MCP_PREFIX } from "../../protocol/mcp-front-door.ts";

const NOT_YOURS =
  "Only the person who gave this agent access can approve its requests, and only from the browser where they gave that consent.";

export async function showApproval(call: Call): Promise<Response> {
  const { gw, req } = call;
  if (wantsJson(req)) {
    try {
      return json(statusDocument(gw, await agentsOwn(call)));
    } catch (err) {
      return errorResponse(err, (m, e) => gw.log.error(m, e));
    }
  }
  const a = await find(gw, call.params.approval_id!);
  const approver = await readApprover(gw, req);
  const allowed = a.approver === "user" && mayDecide(a, approver);
  if (a.approver === "admin") return adminPage(gw, a);
  if (!allowed) return signinPage(gw, req, a);
  return htmlResponse(await page(gw, a, approver!), { status: 200 });
}

/** POST /ath/approvals/{id}/signin: off to the provider's sign-in, to prove who this browser's person is. */
export async function startSignin(call: Call): Promise<Response> {
  const { gw, req } = call;
  const a = await find(gw, call.params.approval_id!);
  if (a.approver !== "user") throw forbidden("An admin decides this request, in the gateway's admin console.");
  const binding = readBinding(gw, req);
  let form: URLSearchParams;
  try {
    form = new URLSearchParams(await readText(call));
  } catch {
    throw new AthError("INVALID_REQUEST", "The form could not be read.");
  }
  if (!binding || !constantTimeEqual(form.get("csrf") ?? "", signinCsrf(a.approval_id, binding))) {
    throw new AthError("STATE_MISMATCH", "The form expired or did not come from this page. Reload the approval link and try again.");
  }
  const record = await requireProvider(gw, a.provider_id);
  if (!namesItsUsers(record.config)) throw forbidden(NO_USER_IDS);
  const pkce = createPkce();
  const state: SigninState = { a: a.approval_id, v: pkce.verifier, b: bindingHash(binding), e: gw.now() + SIGNIN_TTL_MS };
  const sealed = SIGNIN_PREFIX + (await gw.sealer.seal(JSON.stringify(state), SIGNIN_AAD));
  const url = authorizeUrl(await openProvider(gw, record), {
    redirectUri: gw.opts.baseUrl + PATHS.callback,
    scopes: await signinScopes(gw, a, record.config),
    state: sealed,
    codeChallenge: pkce.challenge,
    resource: null,
  });
  return redirect(url);
}

/** Whether the provider's callback `state` is an approval sign-in's (the callback hands those here). */
export function isSigninState(state: string): boolean {
  return state.startsWith(SIGNIN_PREFIX);
}

/**
 * GET /ath/callback for an approval sign-in: the same browser (binding cookie), in time, signed in as the user the
 * approval belongs to → the `ath_user` cookie and back to the page; anyone else → the 403 page. The provider tokens
 * of this sign-in are not kept.
 */
export async function finishSignin(call: Call, state: string): Promise<Response> {
  const { gw, req } = call;
  let s: SigninState;
  try {
    s = JSON.parse(await gw.sealer.open(state.slice(SIGNIN_PREFIX.length), SIGNIN_AAD)) as SigninState;
  } catch {
    throw new AthError("STATE_MISMATCH", "The provider's response carries no valid state.");
  }
  const binding = readBinding(gw, req);
  if (!binding || !constantTimeEqual(bindingHash(binding), s.b)) throw new AthError("STATE_MISMATCH");
  if (s.e <= gw.now()) throw new AthError("SESSION_EXPIRED", "The sign-in took too long. Open the approval link again.");
  const a = await find(gw, s.a);
  const q = new URLSearchParams(call.search);
  const code = q.get("code");
  if (q.get("error") || !code) throw forbidden("The sign-in at the provider was cancelled; nothing was decided.");
  const record = await requireProvider(gw, a.provider_id);
  const provider = await openProvider(gw, record);
  let userId: string | null;
  try {
    const tokens = await exchangeCode(provider, { code, verifier: s.v, redirectUri: gw.opts.baseUrl + PATHS.callback, resource: null }, outbound(gw));
    userId = await upstreamUserId(provider, tokens, outbound(gw));
  } catch (err) {
    throw new AthError("OAUTH_ERROR", err instanceof AthError ? err.message : undefined);
  }
  if (userId === null || !constantTimeEqual(userId, a.user_id)) {
    await audit(gw, "approval.signin_refused", { client_id: a.client_id, provider_id: a.provider_id, data: { approval_id: a.approval_id } });
    throw forbidden("You signed in as someone other than the person who gave this agent access. Only they can decide its requests.");
  }
  await audit(gw, "approval.signin", { client_id: a.client_id, provider_id: a.provider_id, user_id: userId, data: { approval_id: a.approval_id } });
  return redirect(`${PATHS.approvals}/${a.approval_id}`, 303, { "set-cookie": await approverCookieAfterConsent(gw, req, a.provider_id, userId) });
}

export async function submitApproval(call: Call): Promise<Response> {
  const { gw, req } = call;
  const a = await find(gw, call.params.approval_id!);
  const approver = await readApprover(gw, req);
  if (a.approver !== "user") throw forbidden("An admin decides this request, in the gateway's admin console.");
  if (!mayDecide(a, approver)) throw forbidden(NOT_YOURS);
  let form: URLSearchParams;
  try {
    form = new URLSearchParams(await readText(call));
  } catch {
    throw new AthError("INVALID_REQUEST", "The form could not be read.");
  }
  if (!constantTimeEqual(form.get("csrf") ?? "", csrfToken(a.approval_id, approver!))) {
    throw new AthError("STATE_MISMATCH", "The form expired or did not come from this page. Reload the approval link and try again.");
  }
  const decision = form.get("decision");
  if (decision !== "approve" && decision !== "deny") throw new AthError("INVALID_REQUEST", "Choose Approve or Deny.");
  await decide(gw, a, decision, `user:${a.user_id}`);
  const provider = await findProvider(gw, a.provider_id);
  return htmlResponse(renderApprovalDecidedPage({ decision, providerName: provider?.config.display_name ?? a.provider_id, method: a.method, path: a.path }));
}

// internal

const SIGNIN_PREFIX = "apr.";
const SIGNIN_AAD = "state:approval-signin";
const SIGNIN_TTL_MS = 10 * 60 * 1000;
const NO_USER_IDS =
  "This provider does not tell the gateway who signs in, so only the browser where the person gave consent can decide this request. Open the link there.";

/** The sealed `state` of an approval sign-in: approval, PKCE verifier, the browser's binding hash, expiry. */
interface SigninState {
  a: string;
  v: string;
  b: string;
  e: number;
}

/** The provider says who signed in: an id_token (it offers `openid`), userinfo, or a token-response path. */
function namesItsUsers(c: ProviderConfig): boolean {
  const source = userIdSource(c);
  if (source === "token_response" || source === "userinfo") return true;
  return Boolean(c.userinfo_endpoint) || offersOpenid(c);
}

function offersOpenid(c: ProviderConfig): boolean {
  return c.available_scopes.includes("openid") || (c.extra_scopes ?? []).includes("openid");
}

/**
 * What the sign-in asks for (DESIGN §15): the scopes of the grant being approved — the person already consented to
 * them — plus `openid` for the id_token where offered (extra_scopes are added by the OAuth client). Never an empty
 * scope, which strict servers (oidc-provider, Google) refuse.
 */
async function signinScopes(gw: Gateway, a: ApprovalRecord, c: ProviderConfig): Promise<string[]> {
  const token = await findTokenById(gw, a.token_id);
  const scopes = [...(token?.scopes ?? []), ...(c.available_scopes.includes("openid") ? ["openid"] : [])];
  if (scopes.length === 0) throw forbidden("The token this request came with is gone; nothing can be approved for it.");
  return [...new Set(scopes)];
}

function signinCsrf(approvalId: string, binding: string): string {
  return hashSecret(`approval-signin:${approvalId}:${binding}`);
}

/**
 * An admin approval, seen from a browser: where it is decided — not the request itself: the link went to the agent,
 * and the /ath/ paths know no admin session (its cookie is the console's).
 */
async function adminPage(gw: Gateway, a: ApprovalRecord): Promise<Response> {
  const record = await findProvider(gw, a.provider_id);
  return htmlResponse(renderApprovalAdminPage({ providerName: record?.config.display_name ?? a.provider_id, status: approvalStatus(a, gw.now()), consoleUrl: `${PATHS.adminConsole}/approvals` }));
}

/** The 403 page for a browser that has not proven it is the approver, with the sign-in when the provider allows it. */
async function signinPage(gw: Gateway, req: Request, a: ApprovalRecord): Promise<Response> {
  const record = await findProvider(gw, a.provider_id);
  const binding = ensureBinding(gw, req);
  const canSignIn = record !== null && namesItsUsers(record.config);
  const html = renderApprovalSigninPage({
    providerName: record?.config.display_name ?? a.provider_id,
    ...(canSignIn ? { signin: { actionUrl: `${PATHS.approvals}/${a.approval_id}/signin`, csrfToken: signinCsrf(a.approval_id, binding.value) } } : {}),
  });
  return htmlResponse(html, {
    status: 403,
    headers: binding.setCookie ? { "set-cookie": binding.setCookie } : {},
    ...(canSignIn ? { formAction: formActionSources([record!.config.authorize_endpoint]) } : {}),
  });
}

/**
 * The agent's poll: its token — checked as the proxy checks it, so a DPoP-bound token needs its proof here too
 * (DESIGN §17) — and an approval it asked for (any other: 404, never a hint it exists).
 */
async function agentsOwn(call: Call): Promise<ApprovalRecord> {
  const { token } = await requireCallerToken(call.gw, callerCredentials(call.req, call.gw.opts.baseUrl));
  // polls count against the agent's proxy budget (the route's `limit`)
  await call.identify({ client_id: token.client_id, provider_id: token.provider_id });
  const a = await findApproval(call.gw, call.params.approval_id!);
  if (!a || a.client_id !== token.client_id) throw new AthError("NOT_FOUND", "No such approval for this agent");
  return a;
}

function wantsJson(req: Request): boolean {
  if (req.headers.get("authorization") !== null) return true;
  const accept = req.headers.get("accept") ?? "";
  return accept.includes("application/json") && !accept.includes("text/html");
}

async function find(gw: Gateway, id: string): Promise<ApprovalRecord> {
  const a = await findApproval(gw, id);
  if (!a) throw new AthError("NOT_FOUND", "This approval link is not known to the gateway. Ask the agent for a new one.");
  return a;
}

function mayDecide(a: ApprovalRecord, who: ApproverIdentity | null): boolean {
  return who !== null && who.users.some((u) => u.provider_id === a.provider_id && constantTimeEqual(u.user_id, a.user_id));
}

/** 403: this browser is not the request's approver (the page explains; pages/errors.ts). */
function forbidden(message: string): AthError {
  return new AthError("APPROVAL_REQUIRED", message);
}

/** Double-submit token of the approval form, derived from the secret (HttpOnly) `ath_user` cookie. */
function csrfToken(approvalId: string, who: ApproverIdentity): string {
  return hashSecret(`approval-csrf:${approvalId}:${who.raw}`);
}

async function page(gw: Gateway, a: ApprovalRecord, who: ApproverIdentity): Promise<string> {
  const [provider, agent, request, token] = await Promise.all([findProvider(gw, a.provider_id), findAgent(gw, a.client_id), requestView(gw, a), findTokenById(gw, a.token_id)]);
  const developer = { name: agent?.developer.name ?? "unknown", id: agent?.developer.id ?? "unknown" };
  return renderApprovalPage({
    gatewayHost: new URL(gw.opts.baseUrl).host,
    status: approvalStatus(a, gw.now()),
    actionUrl: `${PATHS.approvals}/${a.approval_id}`,
    csrfToken: csrfToken(a.approval_id, who),
    provider: { id: a.provider_id, displayName: provider?.config.display_name ?? a.provider_id },
    agent: { agentId: a.agent_id, developerName: developer.name, developerId: developer.id, purpose: agent?.purpose ?? null },
    ...(a.client_id.startsWith(MCP_PREFIX.client) ? { mcpClient: await mcpClientView(gw, a.agent_id, developer) } : {}),
    request,
    ...(token?.delegation ? { delegatedBy: token.delegation.chain.map((l) => ({ agentId: l.agent_id, clientId: l.client_id })) } : {}),
    expiresAt: new Date(a.expires_at),
    now: new Date(gw.now()),
  });
}

/**
 * An MCP client as the consent page names it (DESIGN §18): it signs nothing, so what the page may say is what it
 * registered or what its metadata document's host publishes. A client no longer known falls back to what its agent
 * record kept — marked as claimed all the same.
 */
async function mcpClientView(gw: Gateway, agentId: string, developer: { name: string; id: string }): Promise<McpClientView> {
  const clientId = agentId.replace(/^mcp:/, "");
  const client = await resolveClient(gw, clientId);
  if (!client) return { clientName: developer.name, clientId, redirectHost: developer.id, localhostOnly: false, document: false };
  return {
    clientName: client.metadata.client_name ?? null,
    clientId: client.clientId,
    redirectHost: redirectHost(client.metadata),
    localhostOnly: localhostOnly(client.metadata),
    document: client.document,
  };
}
