/**
 * Reading protocol requests: bounded bodies (the route's `maxBody`), JSON and form parsing into zod schemas, the
 * bearer token of the Authorization header.
 */
import type { z } from "zod";
import { AthError, FIELD_ERROR_CODES, formatIssues } from "../../protocol/index.ts";
import type { Call } from "../context.ts";
import { readRequestBounded } from "./body.ts";

/** Reads the body as text, refusing more than the route's `maxBody` (413) without buffering past it. */
export async function readText(call: Call): Promise<string> {
  const { req, route } = call;
  const tooLarge = () => new AthError("PAYLOAD_TOO_LARGE", `The request body exceeds ${route.maxBody} bytes`);
  return new TextDecoder().decode(await readRequestBounded(req, req.headers.get("content-length"), route.maxBody, tooLarge));
}

/**
 * Whether `err` is a size limit of DESIGN §10 (413, or nesting over 32): refused on every endpoint, even by those that
 * otherwise answer malformed requests quietly (/ath/revoke).
 */
export function isLimitError(err: unknown): boolean {
  return err instanceof AthError && (err.code === "PAYLOAD_TOO_LARGE" || (err.code === "INVALID_REQUEST" && err.details?.reason === "nesting"));
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
  if (nestedDeeperThan(text, MAX_JSON_DEPTH)) {
    throw new AthError("INVALID_REQUEST", `The request body is nested deeper than ${MAX_JSON_DEPTH} levels`, { field: "body", reason: "nesting" });
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
  return credentialOf(req.headers.get("authorization"), "bearer");
}

/** `Authorization: DPoP <token>` → the token; null for any other scheme (RFC 9449 §7.1: the scheme is case-insensitive). */
export function dpopToken(req: Request): string | null {
  return credentialOf(req.headers.get("authorization"), "dpop");
}

/** The DPoP proof of a request (RFC 9449 §4.1), or null. Two headers arrive joined and fail verification as one. */
export function dpopHeader(req: Request): string | null {
  return req.headers.get("dpop");
}

/**
 * What a caller of the proxy presents (DESIGN §17): its token (`Bearer` or `DPoP` scheme), the DPoP proof, and the
 * request the proof must be of — the public URL (`baseUrl` + path, no query; worked out only when read, which only a
 * DPoP proof's check does) and the method.
 */
export function callerCredentials(req: Request, baseUrl: string): PresentedCredentials {
  return new PresentedCredentials(req, baseUrl);
}

// internal

/** A class, not an object literal with a getter: nothing made per request beyond the object itself. */
class PresentedCredentials {
  readonly token: string | null;
  readonly scheme: "bearer" | "dpop";
  readonly method: string;
  constructor(
    private readonly req: Request,
    private readonly baseUrl: string,
  ) {
    const header = req.headers.get("authorization");
    // (a `DPoP` credential starts with d: a bearer token's header is not read twice)
    const dpop = header !== null && (header.charCodeAt(0) | 0x20) === 0x64 ? credentialOf(header, "dpop") : null;
    this.token = dpop ?? credentialOf(header, "bearer");
    this.scheme = dpop !== null ? "dpop" : "bearer";
    this.method = req.method;
  }

  get proof(): string | null {
    return dpopHeader(this.req);
  }

  get url(): string {
    return this.baseUrl + new URL(this.req.url).pathname;
  }
}

/** The credential of an Authorization header in `scheme` (lower case; compared case-insensitively), or null. */
function credentialOf(header: string | null, scheme: "bearer" | "dpop"): string | null {
  const n = scheme.length;
  if (header === null || header.length <= n + 1 || !startsWithFolded(header, scheme) || !WHITESPACE.test(header.charAt(n))) return null;
  const token = header.slice(n + 1).trim();
  return token === "" || HAS_WHITESPACE.test(token) ? null : token;
}
const WHITESPACE = /^\s$/;

/** Whether `s` starts with `lower` (ASCII letters, lower case) in any case — no slice or case-folded copy per request. */
function startsWithFolded(s: string, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) if ((s.charCodeAt(i) | 0x20) !== lower.charCodeAt(i)) return false;
  return true;
}
const HAS_WHITESPACE = /\s/;

/** DESIGN §10: objects and arrays nest at most 32 deep in a protocol body. */
const MAX_JSON_DEPTH = 32;

/** Whether JSON text opens more than `max` objects/arrays at once (strings skipped) — checked before parsing it. */
function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // skip the string, escapes included
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

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
