/**
 * ANY /ath/proxy/{provider_id}/{path} (and, in native mode, ANY /api/{path}) — the agent's calls to the provider API,
 * with the ATH token swapped for the upstream token. This door parses HTTP into the one canonical request (DESIGN
 * §16), asks domain/call.ts for the decision, and hands the call to relay.ts's `sendOnce` (its steps, `startSend`); bodies stream both ways
 * unless a rule needs them whole, and the upstream token never reaches the agent.
 */
import { AthError, HEADERS, PROXY_METHODS } from "../../protocol/index.ts";
import { LONGEST_IDLE_TIMEOUT_S, type Call, type Gateway } from "../context.ts";
import { audit, auditProxyCall } from "../domain/audit.ts";
import { decideCall, passCall, type HttpSubject } from "../domain/call.ts";
import type { RequestBody } from "../domain/policy.ts";
import { readRequestBounded } from "../http/body.ts";
import { callerCredentials } from "../http/request.ts";
import { apiHeaders } from "../oauth/quirks.ts";
import { AGENT_ANSWER, fieldsOf, filtered, filterResponseHeaders, forwardInPlace, type HeaderFields } from "./headers.ts";
import { bufferedBody, notSent, prepareBody, startSend, type PreparedBody } from "./relay.ts";
import { callerPlan } from "./plan.ts";
import { requestLine, type RequestLine } from "./request-line.ts";

/** Methods the proxy forwards (the rule and its reason: PROXY_METHODS). */
const FORWARDED_METHODS = PROXY_METHODS;

/** An upstream's answer declared at most this long is written under the listener's own idle rule. */
const SHORT_ANSWER_BYTES = 64 * 1024;

export async function proxy(call: Call): Promise<Response> {
  const { gw, req } = call;
  if (!FORWARDED_METHODS.includes(req.method)) {
    throw new AthError("METHOD_NOT_ALLOWED", `The proxy does not forward ${req.method} requests`, undefined, {
      headers: { allow: FORWARDED_METHODS.join(", ") },
    });
  }
  // /api/{path} in native mode is /ath/proxy/{app_id}/{path}.
  const providerId = call.params.provider_id ?? gw.opts.appId!;
  const caller = callerCredentials(req, gw.opts.baseUrl);
  // The caller's checks (token, agent, door, provider): kept per token while nothing they read changed (plan.ts).
  const plan = callerPlan(gw, caller, providerId);
  const { token, agent, record, access } = plan instanceof Promise ? await waitLong(gw, req, plan) : plan;
  const identified = call.identify({ client_id: token.client_id, provider_id: providerId });
  if (identified !== undefined) await waitLong(gw, req, identified);
  const claimedAgent = req.headers.get(HEADERS.agentId);
  if (claimedAgent !== null && claimedAgent !== token.agent_id) throw new AthError("AGENT_IDENTITY_MISMATCH");

  const config = record.config;
  // The one canonical request every rule reads: an ambiguous path is refused here, nothing forwarded.
  const line = requestLine(config, req.method, call.params["*"]!, call.search);
  // What the call still needs of the fields the upstream must not see, read before they go: the agent's own headers
  // become the upstream's, in place (headers.ts forwardInPlace), not a copy per call.
  const approvalId = req.headers.get(HEADERS.approval);
  const contentLength = req.headers.get("content-length");
  const headers = forwardInPlace(req.headers, apiHeaders(config));
  const subject = new ProxiedSubject(line, headers, req, contentLength);
  // (decideCall and passCall answer without a promise when no policy, approval or budget is involved: most calls)
  const who = { config, agent, token };
  const decided = decideCall(gw, who, subject);
  const decision = decided instanceof Promise ? await waitLong(gw, req, decided) : decided;
  if (decision.kind === "scope") {
    throw new AthError("SCOPE_NOT_APPROVED", decision.message, { scopes: token.scopes, needed_scopes: decision.needed });
  }
  if (!token.grant_id) throw new AthError("TOKEN_EXPIRED", "This token has no upstream grant; run authorize again", { reason: "upstream_grant_revoked" });
  const passing = passCall(gw, who, subject, decision, { id: approvalId });
  const passed = passing instanceof Promise ? await waitLong(gw, req, passing) : passing;
  // A call counted but never sent — its body refused while read, a store or upstream fault before it left — gives its
  // budget counts back (DESIGN §24).
  let body: PreparedBody;
  try {
    const read = subject.body.whole();
    const prepared = read !== null ? bufferedBody(read) : prepareBody(req, gw.opts.maxProxyBody, contentLength);
    // a call with a body may wait on it: its upload may pause, and a long one streams upstream while the call waits
    if (prepared instanceof Promise) body = await waitLong(gw, req, prepared);
    else {
      body = prepared;
      if (body.data !== null) extendIdle(gw, req);
    }
  } catch (err) {
    passed.unsent();
    throw err;
  }
  let res: Response;
  try {
    // the grant's access not kept fresh: read (and maybe refreshed upstream) before the call leaves
    if (access === null) extendIdle(gw, req);
    // sendOnce's steps awaited here (relay.ts startSend): one promise hop fewer per call
    const sending = startSend(gw, {
      providerId,
      grantId: token.grant_id,
      access,
      method: req.method,
      target: line.target,
      headers,
      body,
      once: passed.approval !== null,
      remaining: passed.remaining,
      presented: caller.token!,
      listener: req,
      answer: AGENT_ANSWER,
    });
    let answer: Response;
    try {
      answer = await sending.first;
    } catch (cause) {
      throw sending.failed(cause);
    }
    const settled = sending.settle(answer);
    res = settled instanceof Promise ? await waitLong(gw, req, settled) : settled;
  } catch (err) {
    if (notSent(err)) passed.unsent();
    throw err;
  }
  if (res.status >= 400) {
    await audit(gw, "proxy.upstream_error", { client_id: token.client_id, provider_id: providerId, data: { status: res.status, method: req.method, path: line.canonical.literal } });
  }
  // Evidence (DESIGN §20): the call is audited once its status is known — never its bodies; queued, off the hot path.
  // An approved call carries the digest the person approved (the 403's): the record joins to the approval.
  auditProxyCall(
    gw,
    token,
    passed.digest === null
      ? { method: line.canonical.method, path: line.canonical.literal, status: res.status }
      : { method: line.canonical.method, path: line.canonical.literal, status: res.status, request_digest: passed.digest },
  );
  // a bodiless call's answer that may stream for long (no declared length, or a long one) is written past the
  // listener's idle rule (res.body is not read: in Bun that makes a JavaScript stream of the native body, which then
  // goes out through it)
  if (body.data === null && !shortAnswer(res.headers.get("content-length"))) extendIdle(gw, req);
  return answerOf(res);
}

// internal

/**
 * The listener's idle timeout (10 s, DESIGN §14) is for everyone else: an authenticated call outlives it whenever it may
 * wait — on the store, on a person's approval, on its own body, on an upstream slow to answer (the relay extends it
 * after a few seconds: `Outbound.listener`), on a long answer. A bodiless call answered at once never asks: the
 * extension is a native call (`server.timeout`) worth a few per cent of a warm GET's throughput (issue 41,
 * docs/performance.md).
 */
function extendIdle(gw: Gateway, req: Request): void {
  gw.extendTimeout?.(req, LONGEST_IDLE_TIMEOUT_S);
}

/** `waiting`, once the listener's idle timeout no longer cuts it (the same promise: no hop added). */
function waitLong<T>(gw: Gateway, req: Request, waiting: Promise<T>): Promise<T> {
  extendIdle(gw, req);
  return waiting;
}

/** Whether an answer of this Content-Length is short enough to go out under the listener's idle rule (none declared: no). */
function shortAnswer(length: string | null): boolean {
  return length !== null && Number(length) <= SHORT_ANSWER_BYTES;
}

/**
 * The call as the decision reads it (a class: its getters are shared, not made per request). The headers' plain view
 * is made only when a rule with conditions or an approval reads them: no copy per call otherwise.
 */
class ProxiedSubject implements HttpSubject {
  readonly kind = "http";
  readonly canonical: HttpSubject["canonical"];
  readonly allows: HttpSubject["allows"];
  readonly body: RequestBody;
  private fields: HeaderFields | undefined;
  constructor(
    line: RequestLine,
    private readonly forwarded: Headers,
    req: Request,
    contentLength: string | null,
  ) {
    this.canonical = line.canonical;
    this.allows = line.allows;
    this.body = new ProxiedBody(req, contentLength);
  }

  get headers(): HeaderFields {
    return (this.fields ??= fieldsOf(this.forwarded));
  }
}

/** The request's body as the decision reads it: whole, once, and only when a rule needs it; else it streams. */
class ProxiedBody implements RequestBody {
  private read_: Uint8Array | null = null;
  constructor(
    private readonly req: Request,
    readonly contentLength: string | null,
  ) {}

  // read when a rule reads them: a call no rule reads the body of asks no header for it

  get contentType(): string | null {
    return this.req.headers.get("content-type");
  }
  get contentEncoding(): string | null {
    return this.req.headers.get("content-encoding");
  }

  async read(limit: number, tooLarge: () => AthError): Promise<Uint8Array> {
    if (this.read_ === null) this.read_ = await readRequestBounded(this.req, this.contentLength, limit, tooLarge);
    else if (this.read_.byteLength > limit) throw tooLarge();
    return this.read_;
  }

  whole(): Uint8Array | null {
    return this.read_;
  }
}

/**
 * The upstream's answer as the agent's: its headers filtered in place and its body passed through as it streams, not
 * copied into a second Response per request (docs/performance.md). A response whose headers cannot be changed
 * (immutable) is copied instead.
 */
function answerOf(res: Response): Response {
  if (filtered(res)) return res; // made by the upstream client under the same rules (headers.ts AGENT_ANSWER)
  try {
    filterResponseHeaders(res.headers);
    return res;
  } catch {
    const headers = new Headers(res.headers);
    filterResponseHeaders(headers);
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  }
}
