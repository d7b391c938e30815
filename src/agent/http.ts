/**
 * The one HTTP client of the agent side: a timeout on every request, network failures named by URL and
 * cause, and HTTP failures named by method, URL and status like ofetch (`[POST] "http://gw/ath/token": 401 …`).
 * ATH error bodies are parsed with the schema the gateway writes them with.
 */
import type { z } from "zod";
import { ATHError, formatIssues } from "../protocol/schemas.ts";
import { ClientError } from "./errors.ts";

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface HttpOptions {
  fetch?: Fetch;
  /** Per-request timeout; default `ATH_HTTP_TIMEOUT_MS` or 30 s. */
  timeoutMs?: number;
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

export const DEFAULT_TIMEOUT_MS = 30_000;

/** The timeout in force: the explicit option, else `ATH_HTTP_TIMEOUT_MS`, else 30 s. */
export function timeoutFromEnv(env: Record<string, string | undefined> = process.env): number {
  const n = Number(env.ATH_HTTP_TIMEOUT_MS);
  return Number.isFinite(n) && n > 0 ? n : DEFAULT_TIMEOUT_MS;
}

/** Sends a request; throws a `network` ClientError when no answer arrives. Any status is returned. */
export async function send(req: HttpRequest, opts: HttpOptions = {}): Promise<Response> {
  const timeoutMs = opts.timeoutMs ?? timeoutFromEnv();
  const headers: Record<string, string> = { accept: "application/json", ...req.headers };
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
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (cause) {
    throw networkError(req, cause, timeoutMs);
  }
}

/** Sends a request and parses a 2xx JSON answer with `schema`; a non-2xx answer becomes a ClientError. */
export async function requestJson<S extends z.ZodType>(
  schema: S,
  req: HttpRequest,
  opts: HttpOptions = {},
): Promise<z.infer<S>> {
  const res = await send(req, opts);
  const text = await readText(req, res, opts);
  if (!res.ok) throw httpError(req, res.status, text);
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

/** The error for a non-2xx answer: an ATH error body → `refused`, anything else → `failure`. */
export function httpError(req: Pick<HttpRequest, "method" | "url">, status: number, text: string): ClientError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const ath = ATHError.safeParse(body);
  if (ath.success) {
    const { code, message, details } = ath.data;
    return new ClientError("refused", code, `${label(req)}: ${status} ${code} — ${message}`, {
      status,
      ...(details === undefined ? {} : { details }),
    });
  }
  const snippet = text.trim().slice(0, 200);
  return new ClientError("failure", "HTTP_ERROR", `${label(req)}: ${status}${snippet ? ` — ${snippet}` : ""}`, { status });
}

/** `[METHOD] "url"`, as ofetch names a request. */
export function label(req: Pick<HttpRequest, "method" | "url">): string {
  return `[${req.method.toUpperCase()}] "${req.url}"`;
}

// internal

async function readText(req: HttpRequest, res: Response, opts: HttpOptions): Promise<string> {
  try {
    return await res.text();
  } catch (cause) {
    throw networkError(req, cause, opts.timeoutMs ?? timeoutFromEnv());
  }
}

function networkError(req: HttpRequest, cause: unknown, timeoutMs: number): ClientError {
  const e = cause as { name?: string; code?: string; message?: string };
  let reason: string;
  let code = "NETWORK_ERROR";
  if (e?.name === "TimeoutError" || e?.name === "AbortError") {
    reason = `no answer within ${timeoutMs} ms (timeout)`;
    code = "TIMEOUT";
  } else if (e?.code === "ECONNREFUSED" || e?.code === "ConnectionRefused") {
    reason = "connection refused";
  } else if (e?.code === "ENOTFOUND" || e?.code === "EAI_AGAIN") {
    reason = `DNS lookup failed (${e.code})`;
  } else {
    reason = e?.code ? `${e.code}: ${e.message ?? ""}`.trim() : String(e?.message ?? cause);
  }
  return new ClientError("network", code, `${label(req)}: ${reason}`, { cause, details: { url: req.url } });
}
