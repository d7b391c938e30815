/**
 * `ath proxy <provider> <method> <path>`: call the provider API through the gateway with the saved token (in
 * native mode: the service's api_base directly). Like `gh api`: the body goes to stdout even for status ≥ 400
 * (text: its bytes unchanged, streamed as they arrive; json: `{status, headers, body}`), then `ath: HTTP 404` on
 * stderr and exit 1 (exit 4 when the gateway itself refused: X-ATH-Error). `-H` names are case-insensitive and
 * cannot replace the two headers ath sets (Authorization, X-ATH-Agent-ID); no Accept is sent unless `-H` gives one.
 */
import { defineCommand } from "citty";
import { callProxy, discoverService, proxyUrl } from "../agent/client.ts";
import { readBody } from "../agent/http.ts";
import { ClientError, oneLine, usageError } from "../agent/errors.ts";
import { requireRegistration, requireToken } from "../agent/tokens.ts";
import { HEADERS } from "../protocol/constants.ts";
import { ATHError } from "../protocol/schemas.ts";
import { collect, commonArgs, commonOptions, context, type CommonOptions } from "./common.ts";
import { getDeps, type Deps } from "./deps.ts";

export interface ProxyOptions extends CommonOptions {
  /** Positional words: provider method path, or method path in native mode. */
  words: string[];
  body?: string;
  headers: string[];
}

export async function run(opts: ProxyOptions, deps: Deps): Promise<void> {
  const ctx = await context(opts, deps);
  const base = ctx.base();
  const native = opts.mode === "native" ? await discoverService(base, ctx.http) : undefined;
  const words = native !== undefined && opts.words.length === 2 ? [native.app_id, ...opts.words] : opts.words;
  const [provider, rawMethod, path] = words;
  if (provider === undefined || rawMethod === undefined || path === undefined) throw usageError("usage: ath proxy <provider> <method> <path>");
  const method = rawMethod.toUpperCase();
  if (!/^[A-Z]+$/.test(method)) throw usageError(`invalid HTTP method "${rawMethod}"`);
  const headers = parseHeaders(opts.headers);
  if (opts.body !== undefined) {
    // RFC 9110 §9.3.1-2: a body on GET/HEAD has no defined meaning, and fetch refuses to send one.
    if (method === "GET" || method === "HEAD") throw usageError(`--body cannot be sent with ${method}: use POST, PUT or PATCH, or put the parameters in the path's query`);
    try {
      JSON.parse(opts.body);
    } catch {
      throw usageError("--body must be valid JSON");
    }
    headers["content-type"] ??= "application/json";
  }
  const identity = await ctx.identity();
  const token = requireToken(await requireRegistration(ctx.home, base, identity.agentId), base, provider, deps.now());
  const url = proxyUrl({ base, ...(native === undefined ? {} : { apiBase: native.api_base }) }, provider, path);
  const res = await callProxy(
    url,
    { method, token: token.access_token, agentId: identity.agentId, headers, ...(opts.body === undefined ? {} : { body: opts.body }) },
    ctx.http,
  );
  let text: string | undefined;
  if (ctx.out.json) {
    const { bytes } = await readBody({ method, url }, res, ctx.http, { keep: Number.POSITIVE_INFINITY });
    text = utf8(bytes);
    const body = text === undefined ? { body: bytes.toBase64(), body_encoding: "base64" } : { body: parseMaybeJson(text) };
    ctx.out.doc({ status: res.status, headers: Object.fromEntries(res.headers), ...body });
  } else {
    // As received, chunk by chunk: binary-safe, no newline added, never all in memory (`ath proxy … > file`).
    text = utf8((await readBody({ method, url }, res, ctx.http, { keep: KEEP_BYTES, onChunk: (chunk) => deps.stdout(chunk) })).bytes);
  }
  if (res.status < 400) return;
  const refused = refusal(res, text ?? "", native !== undefined);
  if (refused !== undefined) {
    const again = refused.code.startsWith("TOKEN_") ? `: run \`ath authorize -g ${base} --provider ${provider}\`` : "";
    throw new ClientError("refused", refused.code, `${method} ${url}: ${res.status} ${oneLine(refused.code)} — ${oneLine(refused.message)}${again}`, {
      status: res.status,
      reported: true,
    });
  }
  throw new ClientError("failure", "UPSTREAM_ERROR", `HTTP ${res.status}`, { status: res.status, reported: true });
}

// internal

/** What a native service answers when it refuses the ATH token itself (not an error of the API call). */
const NATIVE_REFUSALS = new Set([
  "TOKEN_INVALID",
  "TOKEN_EXPIRED",
  "TOKEN_REVOKED",
  "SCOPE_NOT_APPROVED",
  "PROVIDER_MISMATCH",
  "AGENT_IDENTITY_MISMATCH",
  "AGENT_NOT_REGISTERED",
  "AGENT_UNAPPROVED",
  "PROVIDER_NOT_APPROVED",
]);

/**
 * The ATH error of an answer ≥ 400 when ATH itself refused the call (exit 4), else undefined: the upstream
 * answered (exit 1). Gateway mode: the gateway marks every error it produces with X-ATH-Error and strips X-ATH-*
 * from upstream answers, so the header alone decides — an upstream body that merely looks like `{code, message}`
 * is the upstream's. Native mode: no gateway stands between agent and API; the service checks the ATH token
 * itself, so besides the header (if it sends one) an ATH error body with a token/agent refusal code is its
 * refusal. Other codes stay the API's own errors.
 */
function refusal(res: Response, text: string, native: boolean): { code: string; message: string } | undefined {
  const header = res.headers.get(HEADERS.error);
  const body = ATHError.safeParse(parseMaybeJson(text));
  if (header !== null && header !== "") return { code: header, message: body.success ? body.data.message : `HTTP ${res.status}` };
  if (native && body.success && NATIVE_REFUSALS.has(body.data.code)) return body.data;
  return undefined;
}

/** The headers ath sets itself from the saved token and the identity: a `-H` must not replace or merge into them. */
const OWN_HEADERS = new Set(["authorization", HEADERS.agentId]);

/** How much of a relayed body is kept to read an ATH refusal from it (error bodies are small). */
const KEEP_BYTES = 64 * 1024;

/** `-H "Name: value"` list → lower-cased names (HTTP names are case-insensitive); a repeated name joins with ", ". */
function parseHeaders(list: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const h of list) {
    const i = h.indexOf(":");
    if (i <= 0) throw usageError(`--header must be "Name: value", got "${oneLine(h)}"`);
    const name = h.slice(0, i).trim().toLowerCase();
    const value = h.slice(i + 1).trim();
    // RFC 9110 §5.1 (token) and §5.5 (field value: no CR, LF, NUL or other controls).
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) throw usageError(`--header "${oneLine(h.slice(0, i))}" is not a valid header name`);
    if (/[^\t\x20-\x7e\x80-\xff]/.test(value)) throw usageError(`--header ${name}: the value may not contain line breaks, control or non-Latin-1 characters`);
    if (OWN_HEADERS.has(name)) throw usageError(`--header ${name} cannot be given: ath sends it (the saved ATH token / the agent id)`);
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  return headers;
}

/** The body as text when it is valid UTF-8, else undefined (json mode then carries it in base64). */
function utf8(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

function parseMaybeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export default defineCommand({
  meta: { name: "proxy", description: "Call the provider API with the saved token" },
  args: {
    ...commonArgs,
    provider: { type: "positional", description: "Provider id (native mode: may be omitted)", required: true },
    method: { type: "positional", description: "HTTP method", required: true },
    path: { type: "positional", description: "API path, query included (e.g. /v1/items?limit=5)", required: false },
    body: { type: "string", description: "JSON body for POST/PUT/PATCH", valueHint: "json" },
    header: { type: "string", alias: "H", description: "Extra request header \"Name: value\"; repeatable", valueHint: "K:V" },
  },
  run: ({ args, rawArgs }) => {
    const words = [args.provider, args.method, args.path].filter((w): w is string => typeof w === "string");
    const o: ProxyOptions = { ...commonOptions(args), words, headers: collect(rawArgs, ["header", "H"]) };
    if (typeof args.body === "string") o.body = args.body;
    return run(o, getDeps());
  },
});
