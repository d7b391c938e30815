/**
 * Request/response building blocks of the JSON API: bounded body reading, JSON and form parsing into zod schemas,
 * and the one exposure rule for errors (an AthError goes out as is, anything else as INTERNAL_ERROR).
 */
import type { z } from "zod";
import { AthError, formatIssues, HEADERS, LIMITS } from "../protocol/index.ts";

const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" };

export function json(body: unknown, status = 200, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...NO_STORE, ...headers },
  });
}

/**
 * The error boundary's exposure rule (node-oidc-provider's err_out): never a stack, never a cause. Every error the
 * gateway itself answers carries `X-ATH-Error: <code>`, which the proxy never lets an upstream set, so a client can
 * tell a gateway refusal from an upstream answer whose body merely looks like one.
 */
export function errorResponse(err: unknown, log: (msg: string, err: unknown) => void): Response {
  const e = err instanceof AthError ? err : new AthError("INTERNAL_ERROR");
  if (!(err instanceof AthError)) log("internal error", err);
  return json(e.toJSON(), e.status, { ...e.headers, [HEADERS.error]: e.code });
}

/** Reads the body as text, refusing more than `limit` bytes (413) without buffering past it. */
export async function readText(req: Request, limit: number = LIMITS.maxBodyBytes): Promise<string> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > limit) throw new AthError("PAYLOAD_TOO_LARGE", `The request body exceeds ${limit} bytes`);
  if (!req.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = req.body.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    const chunk = r.value;
    size += chunk.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new AthError("PAYLOAD_TOO_LARGE", `The request body exceeds ${limit} bytes`);
    }
    chunks.push(chunk);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/** Parses a body that is either JSON or `application/x-www-form-urlencoded` (RFC 6749 §4.1.3) into an object. */
export async function readObject(req: Request, opts: { form: boolean }): Promise<Record<string, unknown>> {
  const type = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  const text = await readText(req);
  if (opts.form && type === "application/x-www-form-urlencoded") {
    return Object.fromEntries(new URLSearchParams(text));
  }
  if (type !== "application/json" && type !== "" && !type.endsWith("+json")) {
    const accepted = opts.form ? "application/json or application/x-www-form-urlencoded" : "application/json";
    throw new AthError("INVALID_REQUEST", `Content-Type must be ${accepted}`, { field: "content-type" });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AthError("INVALID_REQUEST", "The request body is not valid JSON", { field: "body" });
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new AthError("INVALID_REQUEST", "The request body must be a JSON object", { field: "body" });
  }
  return value as Record<string, unknown>;
}

/** Validates with a zod schema; failures are 400 INVALID_REQUEST naming the first field and listing every issue. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const first = r.error.issues[0];
  const field = first ? first.path.map(String).join(".") || "body" : "body";
  const issues = formatIssues(r.error);
  throw new AthError("INVALID_REQUEST", `Invalid request: ${issues[0] ?? "schema violation"}`, { field, issues });
}

export async function readJson<S extends z.ZodType>(req: Request, schema: S, opts = { form: false }): Promise<z.infer<S>> {
  return parseWith(schema, await readObject(req, opts));
}

/** Cookies of a request as a map (RFC 6265 §5.4, no decoding beyond trimming). */
export function readCookies(req: Request): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (req.headers.get("cookie") ?? "").split(";")) {
    const i = part.indexOf("=");
    if (i > 0) out.set(part.slice(0, i).trim(), part.slice(i + 1).trim());
  }
  return out;
}

export function redirect(location: string, status: 302 | 303 = 303, headers?: HeadersInit): Response {
  const h = new Headers(headers);
  h.set("location", location);
  h.set("cache-control", "no-store");
  h.set("referrer-policy", "no-referrer");
  return new Response(null, { status, headers: h });
}
