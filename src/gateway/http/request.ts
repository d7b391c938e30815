/**
 * Reading protocol requests: bounded bodies (the route's `maxBody`), JSON and form parsing into zod schemas, the
 * bearer token of the Authorization header.
 */
import type { z } from "zod";
import { AthError, FIELD_ERROR_CODES, formatIssues } from "../../protocol/index.ts";
import type { Call } from "../context.ts";
import { readBounded } from "./body.ts";

/** Reads the body as text, refusing more than the route's `maxBody` (413) without buffering past it. */
export async function readText(call: Call): Promise<string> {
  const { req, route } = call;
  const tooLarge = () => new AthError("PAYLOAD_TOO_LARGE", `The request body exceeds ${route.maxBody} bytes`);
  return new TextDecoder().decode(await readBounded(req.body, req.headers.get("content-length"), route.maxBody, tooLarge));
}

/** Parses a body that is either JSON or `application/x-www-form-urlencoded` (RFC 6749 §4.1.3) into an object. */
export async function readObject(call: Call, opts: { form: boolean }): Promise<Record<string, unknown>> {
  const type = (call.req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  const text = await readText(call);
  if (opts.form && type === "application/x-www-form-urlencoded") {
    return refuseNul(Object.fromEntries(new URLSearchParams(text)));
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
  return refuseNul(value as Record<string, unknown>);
}

/**
 * Validates with a zod schema; failures are 400 INVALID_REQUEST naming the first field and listing every issue —
 * unless a field with a code of its own (FIELD_ERROR_CODES: `state`, `agent_attestation`) is at fault: its code wins.
 */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues = formatIssues(r.error);
  const coded = r.error.issues.findIndex((i) => typeof i.path[0] === "string" && Object.hasOwn(FIELD_ERROR_CODES, i.path[0]));
  const at = coded >= 0 ? coded : 0;
  const first = r.error.issues[at];
  const field = first ? first.path.map(String).join(".") || "body" : "body";
  const code = coded >= 0 ? FIELD_ERROR_CODES[field.split(".")[0]!]! : "INVALID_REQUEST";
  const message = first ? formatIssues({ issues: [first] }).join("; ") : "schema violation";
  throw new AthError(code, `Invalid request: ${message}`, { field, issues });
}

export async function readJson<S extends z.ZodType>(call: Call, schema: S, opts = { form: false }): Promise<z.infer<S>> {
  return parseWith(schema, await readObject(call, opts));
}

/** The token of `Authorization: Bearer <token>` (RFC 6750 §2.1: the scheme is case-insensitive), or null. */
export function bearerToken(req: Request): string | null {
  const header = req.headers.get("authorization");
  if (header === null || header.slice(0, 6).toLowerCase() !== "bearer" || !/^\s$/.test(header.charAt(6))) return null;
  const token = header.slice(7).trim();
  return token === "" || /\s/.test(token) ? null : token;
}

// internal

/**
 * No string of a protocol body may contain U+0000: nothing legitimate needs it, and PostgreSQL text cannot store it
 * (the statement would fail: a 500 instead of the agent's 400).
 */
function refuseNul(body: Record<string, unknown>): Record<string, unknown> {
  const at = nulPath(body, []);
  if (at) throw new AthError("INVALID_REQUEST", "The request body must not contain U+0000 (NUL)", { field: at.join(".") || "body" });
  return body;
}

function nulPath(value: unknown, path: string[]): string[] | null {
  if (typeof value === "string") return value.includes("\0") ? path : null;
  if (value === null || typeof value !== "object") return null;
  for (const [key, v] of Object.entries(value)) {
    if (key.includes("\0")) return [...path, key.replaceAll("\0", "")];
    const found = nulPath(v, [...path, key]);
    if (found) return found;
  }
  return null;
}
