/**
 * What a tool answers: a result with `structuredContent` and a short text summary, or a tool error (`isError:
 * true`) carrying the code — an ATH error code when the gateway refused, else the agent side's own (NO_TOKEN,
 * NETWORK_ERROR…). A failure is always a result, never a thrown error: nothing a tool does may end the server.
 */
import { forTerminal } from "../text/sanitize.ts";
import type { CallToolResult } from "@modelcontextprotocol/server";

/** The `_meta` key of a tool error's machine-readable form: `{code, message, status?, details?}`. */
export const ERROR_META = "ath/error";

/** A successful result: `structured` for programs, `summary` for the model and the person. */
export function ok(structured: object, summary: string): CallToolResult {
  // text content is sanitized (DESIGN §14); structuredContent keeps the values (escaped on the wire by the server)
  return { structuredContent: structured as Record<string, unknown>, content: [{ type: "text", text: forTerminal(summary) }] };
}

/**
 * A tool error from anything a flow throws: ClientErrors keep their code, status and details; anything else (a
 * bug) is `ERROR` with its message. The message is the flow's reason without its next step for a shell (`run \`ath
 * authorize …\``): the text names the next tool to call instead, when there is one (issue 40).
 */
export function failed(e: unknown, tool?: { provider?: string }): CallToolResult {
  const err = e as { name?: string; code?: unknown; message?: string; reason?: unknown; status?: number; details?: unknown };
  const known = err?.name === "ClientError" || err?.name === "AthError";
  const code = known && typeof err.code === "string" ? err.code : "ERROR";
  const message = typeof err?.reason === "string" ? err.reason : String(err?.message ?? e);
  const next = NEXT[code]?.(tool?.provider ?? "<id>", (known && typeof err.details === "object" && err.details !== null ? err.details : {}) as Details);
  const error = {
    code,
    message,
    ...(known && err.status !== undefined ? { status: err.status } : {}),
    ...(known && err.details !== undefined ? { details: err.details } : {}),
  };
  return {
    isError: true,
    // the message is one line (a gateway's words cannot forge a line of their own), sanitized
    content: [{ type: "text", text: `${forTerminal(code, { multiline: false })}: ${forTerminal(message, { multiline: false })}${next === undefined ? "" : `\nNext: ${next}`}` }],
    _meta: { [ERROR_META]: error },
  };
}

// internal

const reauthorize = (p: string) => `call ath_authorize {"provider":"${p}"} for a new token`;

type Details = { needed_scopes?: unknown; unapproved_scopes?: unknown; scopes?: unknown };
const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

/** SCOPE_NOT_APPROVED: at the proxy, the scope the request needs; at authorize, the scopes the agent may not ask for. */
function scopeNext(p: string, d: Details): string {
  const needed = list(d.needed_scopes);
  if (needed.length > 0) {
    const scopes = [...new Set([...list(d.scopes), needed[0]!])];
    return `this request needs the scope ${needed.join(" or ")}, which the token lacks: call ath_authorize ${JSON.stringify({ provider: p, scopes })} for a token with it (the person consents again)`;
  }
  const unapproved = list(d.unapproved_scopes);
  if (unapproved.length > 0) return `this agent is not approved for ${unapproved.join(", ")} at ${p}: call ath_authorize without them, or ask the gateway's admin to approve them`;
  return "call ath_providers to see the scopes this agent is approved for";
}

/** The next step after a failure, in the tools' terms (the flows' own messages name the CLI commands). */
const NEXT: Record<string, (provider: string, details: Details) => string> = {
  NO_GATEWAY: () => "this server runs without a gateway: the person who set it up names one in its command in the host's MCP settings (`ath mcp -g <gateway url>`)",
  NOT_REGISTERED: reauthorize,
  NO_TOKEN: reauthorize,
  UNKNOWN_PROVIDER: () => "this gateway does not offer that provider: call ath_providers for the ones it does (details.providers)",
  SCOPE_NOT_APPROVED: scopeNext,
  TOKEN_EXPIRED: reauthorize,
  TOKEN_REVOKED: reauthorize,
  TOKEN_INVALID: reauthorize,
  NO_PENDING_SESSION: reauthorize,
  AUTHORIZATION_TIMEOUT: reauthorize,
  SESSION_EXPIRED: reauthorize,
  SESSION_NOT_FOUND: reauthorize,
  AGENT_UNAPPROVED: () => "the gateway's admin must approve this agent (ath_status shows its agent_id and client_id); then call ath_authorize again",
  NO_REFRESH_TOKEN: reauthorize,
  CODE_ALREADY_EXCHANGED: reauthorize,
  PROVIDER_NOT_APPROVED: (p) => `this agent's registration does not cover ${p}; the gateway's admin can approve it`,
  APPROVAL_REQUIRED: () => "a person must approve this exact request at details.approval_url (show it to them); once they approved, call ath_request again with the same arguments and approval_id",
  APPROVAL_DENIED: () => "the person denied this request: do not send it again",
  POLICY_DENIED: () => "a policy of the gateway refuses this request (details.reason says why): do not send it again unchanged",
  BUDGET_EXHAUSTED: () => "this kind of request is over its budget until details.resets_at: wait until then, or ask the gateway's admin",
  RATE_LIMITED: () => "the gateway is limiting requests: wait, then try again",
  NETWORK_ERROR: () => "the gateway is unreachable: try again once it is back",
  TIMEOUT: () => "the gateway did not answer in time: try again",
};
