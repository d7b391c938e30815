/**
 * The one HTTP client of the agent side: a timeout on every request, network failures named by URL and
 * cause, and HTTP failures named by method, URL and status like ofetch (`[POST] "http://gw/ath/token": 401 …`).
 * ATH error bodies are parsed with the schema the gateway writes them with; ATH answers are read up to 1 MiB, and
 * every body (an ATH answer or a proxied one) through the one bounded reader, `readBody`.
 */
import type { z } from "zod";
import { ATHError, formatIssues } from "../protocol/lean.ts";
import { athErrorKind, ClientError, oneLine } from "./errors.ts";
import { timeoutFromEnv } from "./timeout.ts";

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface HttpOptions {
  fetch?: Fetch;
  /** Per-request timeout, the answer's body included; default `ATH_HTTP_TIMEOUT_MS` or 30 s. */
  timeoutMs?: number;
  /** Ends a request early (the caller gave up, e.g. a cancelled MCP call): a `failure` CANCELLED. */
  signal?: AbortSignal;
}

export interface HttpRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  /** A JSON value (sent as application/json) or URLSearchParams (sent form-encoded). */
  json?: unknown;
  form?: URLSearchParams;
  body?: BodyInit;
}

/**
 * Sends a request; any status is returned. Throws a `network` ClientError when no answer arrives (refused, DNS,
 * TLS, timeout), a `failure` when the request could not even be sent (e.g. a header fetch refuses).
 */
export async function send(req: HttpRequest, opts: HttpOptions = {}): Promise<Response> {
  const timeoutMs = timeoutOf(opts);
  const headers: Record<string, string> = { ...req.headers };
  let body: BodyInit | undefined = req.body;
  if (req.form !== undefined) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = req.form.toString();
  } else if (req.json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(req.json);
  }
  try {
    return await (opts.fetch ?? fetch)(req.url, {
      method: req.method,
      headers,
      ...(body === undefined ? {} : { body }),
      redirect: "manual",
      signal: opts.signal === undefined ? AbortSignal.timeout(timeoutMs) : AbortSignal.any([AbortSignal.timeout(timeoutMs), opts.signal]),
    });
  } catch (cause) {
    throw networkError(req, cause, opts);
  }
}

/** Sends a request and parses a 2xx JSON answer with `schema`; a non-2xx answer becomes a ClientError. */
export async function requestJson<S extends z.ZodType>(
  schema: S,
  req: HttpRequest,
  opts: HttpOptions = {},
): Promise<z.infer<S>> {
  const res = await send({ ...req, headers: { accept: "application/json", ...req.headers } }, opts);
  const text = await readAnswer(req, res, opts);
  if (!res.ok) throw httpError(req, res.status, text, res.headers.get("location") ?? undefined);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ClientError("failure", "INVALID_RESPONSE", `${label(req)}: ${res.status} answer is not JSON`, {
      status: res.status,
    });
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new ClientError("failure", "INVALID_RESPONSE", `${label(req)}: unexpected answer: ${formatIssues(parsed.error).join("; ")}`, {
      status: res.status,
    });
  }
  return parsed.data;
}

/**
 * The error for a non-2xx answer: an ATH error body → `refused`, anything else → `failure`. The server's text is
 * cut to one line of at most 200 characters (an HTML page to its text), so it cannot reach a terminal raw.
 */
export function httpError(req: Pick<HttpRequest, "method" | "url">, status: number, text: string, location?: string): ClientError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const ath = ATHError.safeParse(body);
  if (ath.success) {
    const { code, message, details } = ath.data;
    return new ClientError(athErrorKind(code), code, `${label(req)}: ${status} ${code} — ${oneLine(message)}`, {
      status,
      ...(details === undefined ? {} : { details }),
    });
  }
  if (status >= 300 && status < 400) {
    // Requests never follow redirects (a redirect could carry the attestation or the token elsewhere).
    const to = location === undefined ? "" : ` to ${oneLine(location).slice(0, 200)}`;
    return new ClientError("failure", "HTTP_ERROR", `${label(req)}: ${status} redirect${to}, not followed: check the URL (http or https, path) and pass the one it names`, {
      status,
      ...(location === undefined ? {} : { details: { location } }),
    });
  }
  const snippet = oneLine(/^\s*</.test(text) ? text.replace(/<(script|style)\b[\s\S]*?<\/\1>|<[^>]*>/gi, " ") : text).slice(0, 200);
  return new ClientError("failure", "HTTP_ERROR", `${label(req)}: ${status}${snippet ? ` — ${snippet}` : ""}`, { status });
}

/**
 * Reads a body chunk by chunk, handing each chunk to `onChunk` as it arrives, and returns its first `keep` bytes
 * (`truncated` when the body was longer). Without `onChunk` nobody wants the rest, so reading stops there and the
 * rest is never downloaded. A connection that breaks meanwhile is a `network` error naming the request and status.
 */
export async function readBody(
  req: Pick<HttpRequest, "method" | "url">,
  res: Response,
  opts: HttpOptions,
  o: { keep: number; onChunk?: (chunk: Uint8Array) => void },
): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  const kept: Uint8Array[] = [];
  let size = 0;
  const reader = res.body?.getReader();
  if (reader === undefined) return { bytes: new Uint8Array(), truncated: false };
  try {
    for (;;) {
      const { done, value: chunk } = await reader.read();
      if (done) break;
      o.onChunk?.(chunk);
      if (size < o.keep) kept.push(chunk.subarray(0, o.keep - size));
      size += chunk.byteLength;
      if (size > o.keep && o.onChunk === undefined) {
        await reader.cancel().catch(() => undefined);
        break;
      }
    }
  } catch (cause) {
    throw networkError(req, cause, opts, res.status);
  }
  return { bytes: new Uint8Array(Buffer.concat(kept)), truncated: size > o.keep };
}

// internal

/** `[METHOD] "url"`, as ofetch names a request. */
function label(req: Pick<HttpRequest, "method" | "url">): string {
  return `[${req.method.toUpperCase()}] "${req.url}"`;
}

/** The largest ATH answer read: discovery documents and error bodies are a few KiB; more is not an ATH server. */
const MAX_ANSWER_BYTES = 1024 * 1024;

function timeoutOf(opts: HttpOptions): number {
  return opts.timeoutMs ?? timeoutFromEnv();
}

/** An ATH answer as text, read up to MAX_ANSWER_BYTES (the rest is not downloaded). */
async function readAnswer(req: HttpRequest, res: Response, opts: HttpOptions): Promise<string> {
  const tooLarge = () =>
    new ClientError("failure", "INVALID_RESPONSE", `${label(req)}: ${res.status} answer is larger than ${MAX_ANSWER_BYTES} bytes: not an ATH answer`, {
      status: res.status,
    });
  if (Number(res.headers.get("content-length")) > MAX_ANSWER_BYTES) {
    await res.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  const { bytes, truncated } = await readBody(req, res, opts, { keep: MAX_ANSWER_BYTES });
  if (truncated) throw tooLarge();
  return Buffer.from(bytes).toString("utf8");
}

/** Certificate errors of a server whose certificate (or CA) this machine does not trust. */
const UNTRUSTED_CERT = /SELF_SIGNED|UNABLE_TO_GET_ISSUER|UNABLE_TO_VERIFY_LEAF|CERT_UNTRUSTED/;

/** Error codes of a connection that failed or broke: errno-style names (ECONNRESET…), Bun's own, TLS and certificates. */
function isNetworkCode(code: string): boolean {
  return /^E[A-Z]+$/.test(code) || /^(Connection|FailedToOpenSocket|ERR_TLS|ERR_SSL)|CERT|SSL|TLS/.test(code);
}

/**
 * The error for a request that got no (whole) answer: `status` is set when the answer started and its body broke
 * off. Before an answer, an error that is not the network's means fetch refused the request itself (a header
 * value, a body on GET…): a `failure` REQUEST_ERROR.
 */
function networkError(req: Pick<HttpRequest, "method" | "url">, cause: unknown, opts: HttpOptions, status?: number): ClientError {
  const e = cause as { name?: string; code?: string; message?: string };
  const options = { cause, details: { url: req.url } };
  if (opts.signal?.aborted) return new ClientError("failure", "CANCELLED", `${label(req)}: cancelled`, options);
  let reason: string;
  let code = "NETWORK_ERROR";
  if (e?.name === "TimeoutError" || e?.name === "AbortError") {
    reason = `no answer within ${timeoutOf(opts)} ms (timeout)`;
    code = "TIMEOUT";
  } else if (e?.code === "ECONNREFUSED" || e?.code === "ConnectionRefused") {
    reason = "connection refused";
  } else if (e?.code === "ENOTFOUND" || e?.code === "EAI_AGAIN") {
    reason = `DNS lookup failed (${e.code})`;
  } else if (typeof e?.code === "string" && isNetworkCode(e.code)) {
    const message = e.message ?? "";
    reason = message.startsWith(e.code) ? message : `${e.code}: ${message}`.trim();
    // a gateway with its own (self-signed or private CA) certificate: say how to trust it
    if (UNTRUSTED_CERT.test(e.code)) reason += "; if the gateway's certificate is your own, trust it with NODE_EXTRA_CA_CERTS=<ca.pem> (or SSL_CERT_FILE)";
  } else if (status === undefined) {
    const message = String(e?.message ?? cause);
    return new ClientError("failure", "REQUEST_ERROR", `${label(req)}: the request could not be sent: ${message}`, options);
  } else {
    reason = oneLine(String(e?.message ?? cause));
  }
  const what = status === undefined ? reason : `the answer (${status}) broke off: ${reason}`;
  // nothing listens there, or no such host: the person's next step (issue 40: "a gateway that is down gets no next step")
  const origin = URL.canParse(req.url) ? new URL(req.url).origin : req.url;
  const next =
    status === undefined && reason === "connection refused"
      ? `is a gateway running at ${origin}? Start one with \`ath serve\`, or pass the right -g`
      : status === undefined && reason.startsWith("DNS lookup failed")
        ? `check the gateway's URL (${origin}): pass the right -g`
        : undefined;
  return new ClientError("network", code, `${label(req)}: ${what}`, { ...options, ...(next === undefined ? {} : { next }) });
}
