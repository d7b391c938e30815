/**
 * A call to a provider API with the saved token: through the gateway's proxy, or in native mode straight to the
 * service's api_base. Any status is a result; `refusal` tells an answer of ATH itself (the gateway, or a native
 * service refusing the token) from the API's own.
 */
import { HEADERS } from "../../protocol/constants.ts";
import { ATHError } from "../../protocol/lean.ts";
import { callProxy, discoverGateway, discoverService, proxyUrl } from "../client.ts";
import { usageError } from "../errors.ts";
import { unknownProvider } from "./discover.ts";
import { readBody } from "../http.ts";
import type { Agent, Target } from "./agent.ts";
import { usableToken } from "./refresh.ts";
import { requireRegistration, requireToken } from "../tokens.ts";

/** The headers a request sets itself from the saved token and the identity: callers cannot give or merge into them. */
export const OWN_HEADERS: ReadonlySet<string> = new Set(["authorization", HEADERS.agentId]);

export interface RequestInput {
  target: Target;
  /** Provider id; in native mode the service's app_id when omitted. */
  provider?: string;
  method: string;
  /** The API path, query included. */
  path: string;
  /** Lower-case names; none of OWN_HEADERS. */
  headers: Record<string, string>;
  body?: string;
  /**
   * Receives the answer's body as it arrives (never all in memory); `body` then holds only its first 64 KiB. ATH's
   * own refusal never reaches it (an error answer not marked as the upstream's is read whole first, then handed on
   * when it is not a refusal). Without it the whole body is read into `body`.
   */
  onChunk?: (chunk: Uint8Array) => void;
  /** Without `onChunk`: the most bytes of the body to read (the rest is not downloaded, `truncated` is set); default all. */
  keep?: number;
}

/** ATH's own refusal of a call: its error code, message and details (the body's, read once). */
export interface Refusal {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

export interface RequestResult {
  /** The provider called (in native mode, the service's app_id). */
  provider: string;
  method: string;
  url: string;
  status: number;
  headers: Headers;
  body: Uint8Array;
  /** The body was longer than `keep` and is cut there. */
  truncated: boolean;
  /** Set when ATH refused the call (the gateway's X-ATH-Error, or a native service's token refusal). */
  refusal?: Refusal;
}

/** Calls the provider API with the saved token; any status is a result, a missing or expired token a `config` error. */
export async function request(input: RequestInput, agent: Agent): Promise<RequestResult> {
  const { base } = input.target;
  const native = input.target.native ? await discoverService(base, agent.http) : undefined;
  const provider = input.provider ?? native?.app_id;
  if (provider === undefined) throw usageError("usage: ath proxy <provider> <method> <path>");
  for (const name of Object.keys(input.headers)) if (OWN_HEADERS.has(name.toLowerCase())) throw new TypeError(`header ${name} is set by the request itself`);
  const identity = await agent.identity();
  const registration = await requireRegistration(agent.home, base, identity.agentId);
  // No token saved: UNKNOWN_PROVIDER when the gateway does not offer it, else NO_TOKEN; a saved one is refreshed
  // first when it expires within a minute (DESIGN §17).
  const token =
    registration.tokens[provider] === undefined && native === undefined
      ? await offered(base, provider, agent, () => requireToken(registration, base, provider, agent.now()))
      : (await usableToken(agent, base, provider)).token;
  const url = proxyUrl({ base, ...(native === undefined ? {} : { apiBase: native.api_base }) }, provider, input.path);
  const { method } = input;
  const res = await callProxy(
    url,
    { method, token: token.access_token, tokenType: token.token_type, dpopKey: identity.key, agentId: identity.agentId, headers: input.headers, ...(input.body === undefined ? {} : { body: input.body }) },
    agent.http,
  );
  // An answer ≥ 400 not marked as the upstream's may be ATH's own refusal: its body is held until that is known, so a
  // refusal never reaches `onChunk` (a person's stdout); the upstream's error body is handed on whole after.
  const held = input.onChunk !== undefined && res.status >= 400 && res.headers.get(HEADERS.upstream) === null;
  const read =
    input.onChunk === undefined || held ? { keep: held ? Number.POSITIVE_INFINITY : (input.keep ?? Number.POSITIVE_INFINITY) } : { keep: KEEP_BYTES, onChunk: input.onChunk };
  const { bytes, truncated } = await readBody({ method, url }, res, agent.http, read);
  const result: RequestResult = { provider, method, url, status: res.status, headers: res.headers, body: bytes, truncated: truncated && input.onChunk === undefined };
  const refused = res.status < 400 ? undefined : refusal(res, bytes, native !== undefined);
  if (held && refused === undefined) input.onChunk!(bytes);
  return refused === undefined ? result : { ...result, refusal: refused };
}

/** The body as text when it is valid UTF-8, else undefined. */
export function utf8(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** JSON text parsed, anything else as it is. */
export function parseMaybeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

// internal

/**
 * No token saved for `provider`: when the gateway does not offer it at all, `ath authorize` would not help, so the
 * answer is UNKNOWN_PROVIDER naming the providers there are (exit 3); else the NO_TOKEN `noToken` throws.
 */
async function offered<T>(base: string, provider: string, agent: Agent, noToken: () => T): Promise<T> {
  let ids: string[];
  try {
    ids = (await discoverGateway(base, agent.http)).supported_providers.map((p) => p.provider_id);
  } catch {
    return noToken();
  }
  if (ids.includes(provider)) return noToken();
  throw unknownProvider(base, provider, ids);
}

/** How much of a relayed body is kept to read an ATH refusal from it (error bodies are small). */
const KEEP_BYTES = 64 * 1024;

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

/** A gateway's refusal of the token or the agent, by its code (DESIGN §8): TOKEN_*, AGENT_*, PROVIDER_MISMATCH. */
const GATEWAY_REFUSAL = /^(TOKEN_|AGENT_|PROVIDER_MISMATCH$)/;

/**
 * The ATH error of an answer ≥ 400 when ATH itself refused the call, else undefined: the upstream answered.
 * - X-ATH-Error decides when present: `ath serve` marks every error it produces with it.
 * - An answer `ath serve` relayed from the provider says so (X-ATH-Upstream): an upstream body that merely looks like
 *   `{code, message}` stays the upstream's.
 * - Otherwise (a gateway that marks neither, like the official SDK's; DESIGN §8) a 401/403 whose body is an ATH
 *   error with a TOKEN_*, AGENT_* or PROVIDER_MISMATCH code is the gateway's refusal.
 * - Native mode: no gateway stands between agent and API; the service checks the ATH token itself, so an ATH error
 *   body with a token/agent refusal code is its refusal. Other codes stay the API's own errors.
 */
function refusal(res: Response, bytes: Uint8Array, native: boolean): Refusal | undefined {
  const header = res.headers.get(HEADERS.error);
  const body = ATHError.safeParse(parseMaybeJson(utf8(bytes) ?? ""));
  const details = body.success && body.data.details !== undefined ? { details: body.data.details } : {};
  if (header !== null && header !== "") return { code: header, message: body.success ? body.data.message : `HTTP ${res.status}`, ...details };
  if (!body.success || res.headers.get(HEADERS.upstream) !== null) return undefined;
  if (native && NATIVE_REFUSALS.has(body.data.code)) return { code: body.data.code, message: body.data.message, ...details };
  if ((res.status === 401 || res.status === 403) && GATEWAY_REFUSAL.test(body.data.code)) return { code: body.data.code, message: body.data.message, ...details };
  return undefined;
}
