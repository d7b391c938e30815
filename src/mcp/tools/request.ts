/**
 * `ath_request`: call a provider API with the saved token, through the request-with-approval flow the CLI's
 * `ath proxy` runs too; this file keeps only the host's URL elicitation and the tool's result.
 */
import { forTerminal } from "../../text/sanitize.ts";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { ClientError, usageError } from "../../agent/errors.ts";
import { requestWithApproval, type ApprovalWait } from "../../agent/flows/approval.ts";
import { OWN_HEADERS, parseMaybeJson, utf8, type RequestInput } from "../../agent/flows/request.ts";
import { MAX_TOOL_BODY_BYTES, type RequestOutput, type RequestToolInput } from "../../protocol/mcp-tools.ts";
import { ok } from "../results.ts";
import { forCall, type ToolContext } from "./context.ts";
import { opensElsewhere } from "../../agent/links.ts";

export async function callApi(ctx: ToolContext, args: RequestToolInput, signal: AbortSignal): Promise<CallToolResult> {
  const agent = forCall(ctx.agent, signal);
  const method = args.method.toUpperCase();
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(args.headers ?? {})) {
    const lower = name.toLowerCase();
    if (OWN_HEADERS.has(lower)) throw usageError(`headers.${name} cannot be given: ath sends it (the saved ATH token / the agent id)`);
    headers[lower] = headers[lower] === undefined ? value : `${headers[lower]}, ${value}`;
  }
  let body: string | undefined;
  if (args.body !== undefined) {
    // RFC 9110 §9.3.1-2: a body on GET/HEAD has no defined meaning, and fetch refuses to send one.
    if (method === "GET" || method === "HEAD") throw usageError(`a body cannot be sent with ${method}: use POST, PUT or PATCH, or the query`);
    if (typeof args.body === "string") body = args.body;
    else {
      body = JSON.stringify(args.body);
      headers["content-type"] ??= "application/json";
    }
  }
  const path = withQuery(args.path, args.query);
  const input = { target: agent.target(ctx.target), provider: args.provider, method, path, headers, ...(body === undefined ? {} : { body }), keep: MAX_TOOL_BODY_BYTES };
  // A person must approve this exact request (DESIGN §15): a host with URL elicitation sends them to the page.
  const { result: r, pending } = await requestWithApproval(input, agent, {
    ...(args.approval_id === undefined ? {} : { approval: args.approval_id }),
    wait: elicitApproval(ctx, input, args, signal),
  });
  if (pending !== undefined) {
    throw new ClientError("refused", "APPROVAL_REQUIRED", `${method} ${r.url} needs a person's approval: open ${pending.approval_url}, then call ath_request again with the same arguments and approval_id`, {
      status: r.status,
      details: { ...pending },
    });
  }
  if (r.refusal !== undefined) {
    const { code, message, details } = r.refusal;
    throw new ClientError("refused", code, `${method} ${r.url}: ${r.status} ${code} — ${message}`, { status: r.status, ...(details === undefined ? {} : { details }) });
  }
  const text = textOf(r.body, r.truncated);
  const out: RequestOutput = {
    status: r.status,
    headers: Object.fromEntries(r.headers),
    ...(text === undefined ? { body: r.body.toBase64(), body_encoding: "base64" as const } : { body: r.truncated ? text : parseMaybeJson(text) }),
    ...(r.truncated ? { truncated: true } : {}),
  };
  const size = `${r.body.byteLength} bytes${r.truncated ? `, truncated at ${MAX_TOOL_BODY_BYTES}` : ""}`;
  const head = `${method} ${path} → HTTP ${r.status} (${r.headers.get("content-type") ?? "no content type"}, ${size})`;
  // Hosts that show the model only the text content still get the answer (binary stays in structuredContent).
  return ok(out, text === undefined ? `${head}\n(binary body: base64 in structuredContent.body)` : `${head}\n\n${text}`);
}

/**
 * Asks the host to send the person to the approval page (URL-mode elicitation) and waits for their decision (up to
 * `wait_seconds`, default 45, never past the approval's expiry); a host without elicitation, or a wait that runs
 * out, leaves the refusal as it was — its details name the approval to resend with.
 */
function elicitApproval(ctx: ToolContext, input: RequestInput, args: RequestToolInput, signal: AbortSignal): ApprovalWait {
  let elicited: string | undefined;
  return {
    waitSeconds: args.wait_seconds ?? 45,
    intervalMs: 1000,
    signal,
    async ask(pending) {
      if (ctx.server.server.getClientCapabilities()?.elicitation?.url === undefined) return false;
      let action: string;
      try {
        const answer = await ctx.server.server.elicitInput(
          {
            mode: "url",
            elicitationId: pending.approval_id,
            url: pending.approval_url,
            message: forTerminal(`${elsewhereFirst(pending.approval_url, input.target.base)}Approve this exact request before the agent sends it: ${input.method} ${input.path} to ${input.provider} (ATH gateway ${input.target.base}).`, { multiline: false }),
          },
          { signal },
        );
        action = answer.action;
      } catch {
        return false;
      }
      if (action !== "accept") {
        throw new ClientError("failure", "CANCELLED", `the person ${action === "decline" ? "declined" : "dismissed"} the request to open the approval page: nothing was sent`);
      }
      elicited = pending.approval_id;
      return true;
    },
    async settled(decision) {
      if (elicited !== undefined && decision !== "timeout") await ctx.server.server.createElicitationCompletionNotifier(elicited)().catch(() => undefined);
    },
  };
}

/** DESIGN §14: a link that leaves the gateway is named before it. */
function elsewhereFirst(url: string, gateway: string): string {
  const elsewhere = opensElsewhere(url, gateway);
  return elsewhere ? `This link ${elsewhere}, not the gateway. ` : "";
}

/** `path` with `query` added to its own query string. */
function withQuery(path: string, query: RequestToolInput["query"]): string {
  if (query === undefined || Object.keys(query).length === 0) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) for (const one of Array.isArray(v) ? v : [v]) q.append(k, one);
  return `${path}${path.includes("?") ? "&" : "?"}${q}`;
}

/** The body as text when it is UTF-8; a cut body may end inside a character, which is dropped. */
function textOf(bytes: Uint8Array, truncated: boolean): string | undefined {
  const whole = utf8(bytes);
  if (whole !== undefined || !truncated) return whole;
  for (let cut = 1; cut <= 3 && cut < bytes.byteLength; cut++) {
    const text = utf8(bytes.subarray(0, bytes.byteLength - cut));
    if (text !== undefined) return text;
  }
  return undefined;
}
