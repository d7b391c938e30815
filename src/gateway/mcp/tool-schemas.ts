/**
 * Which arguments of a tool its `Mcp-Param-*` headers mirror (DESIGN §21; MCP 2026-07-28 "x-mcp-header"): read from the
 * tool's `inputSchema` in the upstream's `tools/list`. ath keeps, per provider and per instance, the declarations of
 * the lists it read (any person's: a tool's schema does not depend on who lists it) for 60 s — whatever `ttlMs` the
 * upstream gives its clients: an upstream saying 0 would otherwise cost a list per call, and a stale declaration can
 * only refuse or pass a header, never a call policy refuses. A call whose provider has no fresh list has one asked for
 * first — a `tools/list` with the caller's own upstream token, a read; the call itself is not sent before its headers
 * are checked (docs/mcp-front-door.md).
 * Declarations follow the spec: only properties reached through `properties` keys count, only primitive types; a
 * schema that breaks a rule has no enforceable declarations (the upstream refuses such a tool itself).
 */
import type { Gateway } from "../context.ts";
import type { HeaderDeclaration } from "./headers.ts";
import { LIST_TTL_MS } from "./tools-list.ts";

/** Pages of `tools/list` ath reads for the declarations at most (a list longer than this is read in part). */
export const MAX_LIST_PAGES = 20;

/** Records the declarations of every tool of a list ath read for `providerId`. */
export function learnTools(gw: Gateway, providerId: string, tools: readonly unknown[], entry: Entry = entryFor(gw, providerId, true)!): void {
  // A list read page by page (nextCursor) adds to the entry it started; a new first page starts a new one.
  for (const t of tools) {
    if (t === null || typeof t !== "object") continue;
    const { name, inputSchema } = t as { name?: unknown; inputSchema?: unknown };
    if (typeof name === "string") entry.tools.set(name, declarationsOf(inputSchema));
  }
}

/**
 * The declarations of `tool` at `providerId`; `list` is asked for every page of the upstream's tools/list when no fresh
 * one is known (each call gets the page after `cursor`).
 */
export async function toolHeaders(
  gw: Gateway,
  providerId: string,
  tool: string,
  list: (cursor: string | null) => Promise<{ tools: readonly unknown[]; nextCursor: string | null }>,
): Promise<readonly HeaderDeclaration[]> {
  let entry = entryFor(gw, providerId, false);
  if (entry === null) {
    entry = fresh(gw, providerId);
    let cursor: string | null = null;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const got = await list(cursor);
      learnTools(gw, providerId, got.tools, entry);
      cursor = got.nextCursor;
      if (cursor === null) break;
    }
  }
  return entry.tools.get(tool) ?? [];
}

/** A tool's `x-mcp-header` declarations; none when its schema breaks the spec's rules for them. */
export function declarationsOf(schema: unknown): HeaderDeclaration[] {
  const out: HeaderDeclaration[] = [];
  const seen = new Set<string>();
  const walk = (node: unknown, path: string[], reachable: boolean): boolean => {
    if (node === null || typeof node !== "object" || Array.isArray(node)) return true;
    const s = node as Record<string, unknown>;
    if ("x-mcp-header" in s) {
      const name = s["x-mcp-header"];
      if (!reachable || path.length === 0 || typeof name !== "string" || !TOKEN.test(name) || typeof s.type !== "string" || !PRIMITIVE.has(s.type)) return false;
      if (seen.has(name.toLowerCase())) return false;
      seen.add(name.toLowerCase());
      out.push({ path, header: name, type: s.type });
    }
    const props = s.properties;
    if (props !== null && typeof props === "object" && !Array.isArray(props)) {
      for (const [k, child] of Object.entries(props)) if (!walk(child, [...path, k], reachable)) return false;
    }
    // an annotation under any other keyword is not statically reachable: the declarations are invalid
    for (const k of UNREACHABLE) {
      const sub = s[k];
      if (sub === undefined) continue;
      const branches = Array.isArray(sub) ? sub : sub !== null && typeof sub === "object" && OBJECT_VALUED.has(k) ? Object.values(sub) : [sub];
      for (const b of branches) if (!walk(b, [...path, `<${k}>`], false)) return false;
    }
    return true;
  };
  return walk(schema, [], true) ? out : [];
}

// internal

/** RFC 9110 §5.1 token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** The spec names string, integer and boolean; number is taken too, as the official SDKs and the conformance suite do. */
const PRIMITIVE = new Set(["string", "integer", "boolean", "number"]);
const UNREACHABLE = ["items", "prefixItems", "contains", "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "propertyNames", "patternProperties", "dependentSchemas", "oneOf", "anyOf", "allOf", "not", "if", "then", "else", "$defs", "definitions"];
const OBJECT_VALUED = new Set(["patternProperties", "dependentSchemas", "$defs", "definitions"]);

interface Entry {
  tools: Map<string, HeaderDeclaration[]>;
  until: number;
}

const known = new WeakMap<Gateway, Map<string, Entry>>();

/** The provider's fresh entry; `create`: start one when there is none fresh. */
function entryFor(gw: Gateway, providerId: string, create: boolean): Entry | null {
  let perProvider = known.get(gw);
  if (!perProvider) known.set(gw, (perProvider = new Map()));
  const e = perProvider.get(providerId);
  if (e && e.until > gw.now()) return e;
  if (!create) return null;
  return fresh(gw, providerId);
}

function fresh(gw: Gateway, providerId: string): Entry {
  const e: Entry = { tools: new Map(), until: gw.now() + LIST_TTL_MS };
  known.get(gw)!.set(providerId, e);
  return e;
}
