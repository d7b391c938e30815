/**
 * ANY /ath/proxy/{provider_id}/{path} — the agent's calls to the provider API, with the ATH token swapped for the
 * upstream token. Bodies stream both ways; the upstream token never reaches the agent.
 */
import { AthError, HEADERS, PATHS } from "../../protocol/index.ts";
import { audit } from "../domain/audit.ts";
import type { Gateway } from "../context.ts";
import { currentAccess, refreshAfterRejection, type LiveAccess } from "../domain/grants.ts";
import { relativePath, upstreamUrl } from "./url.ts";
import { allowedByScopeRules } from "../rules/scopes.ts";
import { authenticateBearer } from "../domain/tokens.ts";

/** RFC 9110 §7.6.1: hop-by-hop fields are meaningful for one connection only and never forwarded. */
const HOP_BY_HOP = ["connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "proxy-authenticate", "proxy-authorization"];
/** Credentials and routing of the agent↔gateway hop; the upstream must never see them. */
const STRIP_REQUEST = ["host", "authorization", "cookie", "content-length", "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto"];
/**
 * Headers some frameworks read as "the real method / URL" (Google APIs, Symfony, IIS): scope_rules judged the
 * request's own method and path, so these would let an agent do what no rule allowed.
 */
const OVERRIDES = ["x-http-method-override", "x-http-method", "x-method-override", "x-original-url", "x-rewrite-url", "x-original-method"];
/** The upstream may not set cookies on the gateway's origin, nor speak for the gateway (X-ATH-*). */
const STRIP_RESPONSE = ["set-cookie", "set-cookie2"];
/** Bodies up to this size are buffered so the request can be replayed once after a token refresh. */
const REPLAYABLE_BODY_BYTES = 1024 * 1024;

export async function proxy(gw: Gateway, req: Request, providerId: string, rawPath: string, search: string): Promise<Response> {
  const token = await authenticateBearer(gw, req);
  if (token.provider_id !== providerId) {
    throw new AthError("PROVIDER_MISMATCH", `This token is for '${token.provider_id}', not '${providerId}'`, { token_provider_id: token.provider_id });
  }
  const claimedAgent = req.headers.get(HEADERS.agentId);
  if (claimedAgent !== null && claimedAgent !== token.agent_id) throw new AthError("AGENT_IDENTITY_MISMATCH");

  const record = await gw.store.getProvider(providerId);
  if (!record) throw new AthError("UPSTREAM_UNAVAILABLE", `Provider '${providerId}' is no longer configured`, { provider_id: providerId });
  if (!record.config.api_base_url) {
    throw new AthError("UPSTREAM_UNAVAILABLE", `Provider '${providerId}' has no api_base_url configured`, { provider_id: providerId });
  }
  const target = upstreamUrl(record.config.api_base_url, rawPath, search);
  const rules = record.config.scope_rules;
  if (rules ? !allowedByScopeRules(rules, token.scopes, req.method, relativePath(rawPath)) : gw.opts.strictScopes) {
    throw new AthError("SCOPE_NOT_APPROVED", `No scope of this token allows ${req.method} ${relativePath(rawPath)}`, { scopes: token.scopes });
  }
  if (!token.grant_id) throw new AthError("TOKEN_EXPIRED", "This token has no upstream grant; run authorize again", { reason: "upstream_grant_revoked" });

  const headers = forwardHeaders(req.headers);
  const body = await prepareBody(req);
  let access = await currentAccess(gw, token.grant_id);
  let res = await send(gw, req.method, target, headers, body, access);
  if (res.status === 401 && access.canRefresh && body.replayable) {
    await res.body?.cancel();
    access = await refreshAfterRejection(gw, token.grant_id, access.version);
    res = await send(gw, req.method, target, headers, body, access);
  }
  if (res.status >= 400) {
    await audit(gw, "proxy.upstream_error", { client_id: token.client_id, provider_id: providerId, data: { status: res.status, method: req.method } });
  }
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: responseHeaders(res.headers) });
}

// internal

interface PreparedBody {
  data: ArrayBuffer | ReadableStream<Uint8Array> | null;
  replayable: boolean;
}

async function prepareBody(req: Request): Promise<PreparedBody> {
  if (!req.body || req.method === "GET" || req.method === "HEAD") return { data: null, replayable: true };
  const length = req.headers.get("content-length");
  if (length !== null && Number(length) <= REPLAYABLE_BODY_BYTES) return { data: await req.arrayBuffer(), replayable: true };
  return { data: req.body, replayable: false };
}

function forwardHeaders(incoming: Headers): Headers {
  const out = new Headers();
  const connectionListed = (incoming.get("connection") ?? "").toLowerCase().split(",").map((s) => s.trim());
  for (const [name, value] of incoming) {
    const n = name.toLowerCase();
    if (HOP_BY_HOP.includes(n) || STRIP_REQUEST.includes(n) || OVERRIDES.includes(n) || connectionListed.includes(n) || n.startsWith("x-ath-")) continue;
    out.append(name, value);
  }
  return out;
}

function responseHeaders(incoming: Headers): Headers {
  const out = new Headers();
  const connectionListed = (incoming.get("connection") ?? "").toLowerCase().split(",").map((s) => s.trim());
  for (const [name, value] of incoming) {
    const n = name.toLowerCase();
    if (HOP_BY_HOP.includes(n) || STRIP_RESPONSE.includes(n) || connectionListed.includes(n) || n.startsWith("x-ath-")) continue;
    out.append(name, value);
  }
  return out;
}

async function send(gw: Gateway, method: string, target: URL, headers: Headers, body: PreparedBody, access: LiveAccess): Promise<Response> {
  const h = new Headers(headers);
  h.set("authorization", `Bearer ${access.accessToken}`);
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, gw.opts.upstreamTimeoutMs);
  try {
    // decompress: false — Bun's fetch would otherwise inflate the body yet keep Content-Encoding (DESIGN §3).
    const init: RequestInit & { decompress: boolean; duplex?: "half" } = {
      method,
      headers: h,
      body: body.data,
      redirect: "manual",
      signal: controller.signal,
      decompress: false,
    };
    if (body.data instanceof ReadableStream) init.duplex = "half";
    return await fetch(target, init);
  } catch (cause) {
    if (timedOut) {
      throw new AthError("UPSTREAM_TIMEOUT", `The provider API did not answer within ${gw.opts.upstreamTimeoutMs} ms`, { url_origin: target.origin });
    }
    throw new AthError("UPSTREAM_UNAVAILABLE", `The provider API at ${target.origin} could not be reached`, { url_origin: target.origin }, { cause });
  } finally {
    clearTimeout(timer);
  }
}

export const PROXY_PREFIX = PATHS.proxy + "/";
