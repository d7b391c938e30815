/**
 * The 2026-07-28 wire's request headers (DESIGN §21; MCP transports "Standard request headers" and "Custom headers from
 * tool parameters", SEP-2243): `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` mirror the body, `Mcp-Param-{Name}`
 * mirrors each argument the tool's `inputSchema` marks with `x-mcp-header`. An intermediary may route on the headers
 * while ath's policy reads the body, so a request whose headers are missing or disagree with its body is refused — 400
 * with JSON-RPC -32020, `data.reason` `header_missing` or `header_mismatch` — before policy, budgets, audit counts or
 * any upstream I/O. Pure: the tool's declarations come in (tool-schemas.ts).
 */
import { MCP_ERROR, MCP_META } from "../../protocol/mcp-front-door.ts";
import { JsonRpcError } from "../http/errors.ts";
import type { Message } from "./jsonrpc.ts";

/** One `x-mcp-header` declaration of a tool: where its argument is, the header's `{Name}`, the property's JSON type. */
export interface HeaderDeclaration {
  path: readonly string[];
  header: string;
  type: string;
}

/** Throws a 400 JsonRpcError (-32020) unless MCP-Protocol-Version, Mcp-Method and Mcp-Name say what the body says. */
export function checkStandardHeaders(headers: Headers, m: Message): void {
  const method = m.raw.method as string;
  const params = objectOr(m.raw.params);
  const claimed = objectOr(params._meta)[MCP_META.protocolVersion];
  // The version header is required; it must equal the body's claim when there is one (a body without one is the
  // envelope's fault, answered by whoever reads the envelope: -32602, not a header mismatch).
  const version = headers.get("mcp-protocol-version");
  if (version === null) throw mismatch(m, "MCP-Protocol-Version", "header_missing");
  if (typeof claimed === "string") same(m, "MCP-Protocol-Version", version, claimed);
  same(m, "Mcp-Method", headers.get("mcp-method"), method);
  const named = NAMED[method];
  if (named !== undefined) {
    const body = stringOr(params[named]);
    const header = decoded(m, "Mcp-Name", headers.get("mcp-name"));
    if (header !== null || body !== undefined) same(m, "Mcp-Name", header, body);
  }
}

/** Throws a 400 JsonRpcError (-32020) unless every Mcp-Param-* header the tool's `declared` arguments need says what the body says. */
export function checkParamHeaders(headers: Headers, m: Message, declared: readonly HeaderDeclaration[]): void {
  if (m.raw.method !== "tools/call") return;
  const args = objectOr(objectOr(m.raw.params).arguments);
  for (const d of declared) {
    const value = valueAt(args, d.path);
    // MCP: a null or absent argument — the server "MUST NOT expect the header"
    if (value === undefined || value === null) continue;
    const name = `Mcp-Param-${d.header}`;
    const given = decoded(m, name, headers.get(name));
    if (given === null) throw mismatch(m, name, "header_missing");
    if (!equalValue(given, value, d.type)) throw mismatch(m, name, "header_mismatch");
  }
}

/**
 * A header value as the spec encodes it: `=?base64?<RFC 4648 base64 of UTF-8>?=` decoded (canonical padding only),
 * anything else literal; null when absent. A sentinel whose payload is not canonical base64 or UTF-8 is a mismatch.
 */
export function decodeHeaderValue(value: string): string | undefined {
  const v = value.trim();
  if (!(v.startsWith(SENTINEL_OPEN) && v.endsWith(SENTINEL_CLOSE) && v.length >= SENTINEL_OPEN.length + SENTINEL_CLOSE.length)) return v;
  const b64 = v.slice(SENTINEL_OPEN.length, v.length - SENTINEL_CLOSE.length);
  if (!CANONICAL_BASE64.test(b64)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.fromBase64(b64));
  } catch {
    return undefined;
  }
}

/**
 * The headers a 2026 request must carry for this message (ath as the client of a 2026 upstream): MCP-Protocol-Version,
 * Mcp-Method, Mcp-Name, and the Mcp-Param-* of `declared` arguments that have a value.
 */
export function standardHeaders(method: string, params: Record<string, unknown>, version: string, declared: readonly HeaderDeclaration[]): Record<string, string> {
  const out: Record<string, string> = { "mcp-protocol-version": version, "mcp-method": method };
  const named = NAMED[method];
  if (named !== undefined && typeof params[named] === "string") out["mcp-name"] = encodeHeaderValue(params[named]);
  if (method === "tools/call") {
    const args = objectOr(params.arguments);
    for (const d of declared) {
      const v = valueAt(args, d.path);
      if (typeof v === "string" || typeof v === "boolean" || (typeof v === "number" && Number.isFinite(v))) out[`mcp-param-${d.header.toLowerCase()}`] = encodeHeaderValue(String(v));
    }
  }
  return out;
}

/** A value as a header carries it: as is when it is plain visible ASCII, else `=?base64?…?=` (the spec's encoding). */
export function encodeHeaderValue(value: string): string {
  const plain = value.length > 0 && value === value.trim() && /^[\x20-\x7e\t]*$/.test(value) && !(value.startsWith(SENTINEL_OPEN) && value.endsWith(SENTINEL_CLOSE));
  return plain ? value : `${SENTINEL_OPEN}${new TextEncoder().encode(value).toBase64()}${SENTINEL_CLOSE}`;
}

// internal

/** Which `params` member `Mcp-Name` mirrors, per method. */
const NAMED: Record<string, string> = { "tools/call": "name", "prompts/get": "name", "resources/read": "uri" };
const SENTINEL_OPEN = "=?base64?";
const SENTINEL_CLOSE = "?=";
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const DECIMAL = /^-?\d+(?:\.\d+)?$/;

/** The header must be present and equal the body's value (values are case-sensitive). */
function same(m: Message, name: string, header: string | null, body: string | undefined): void {
  // RFC 9110 §5.5: optional whitespace around a field value is not part of it
  const h = header?.trim() ?? null;
  if (h === null) throw mismatch(m, name, "header_missing");
  if (body === undefined || h !== body) throw mismatch(m, name, "header_mismatch");
}

function decoded(m: Message, name: string, header: string | null): string | null {
  if (header === null) return null;
  const d = decodeHeaderValue(header);
  if (d === undefined) throw mismatch(m, name, "header_mismatch", "invalid_base64");
  return d;
}

/** Strings compare exactly, booleans as `true`/`false`, integers and numbers numerically (`42.0` = `42`). */
function equalValue(header: string, value: unknown, type: string): boolean {
  if (typeof value === "string") return header === value;
  if (typeof value === "boolean") return header === String(value);
  if (typeof value === "number") return (type === "integer" || type === "number") && DECIMAL.test(header) ? Number(header) === value : header === String(value);
  return false; // an object where the schema declares a primitive: the header cannot mirror it
}

function mismatch(m: Message, header: string, reason: "header_missing" | "header_mismatch", detail?: string): JsonRpcError {
  const message = reason === "header_missing" ? `Bad Request: the ${header} header is required and missing` : `Bad Request: the ${header} header does not match the request body`;
  return new JsonRpcError(400, m.id ?? null, MCP_ERROR.headerMismatch, message, { reason, header, ...(detail ? { detail } : {}) });
}

function valueAt(root: Record<string, unknown>, path: readonly string[]): unknown {
  let node: unknown = root;
  for (const key of path) {
    if (node === null || typeof node !== "object" || Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function objectOr(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function stringOr(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}
