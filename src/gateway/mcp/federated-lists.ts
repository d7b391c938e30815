/**
 * What a federated MCP URL lists (DESIGN §22), per person: the union of the members' lists — each member the person
 * connected asked through its own door (filtered there as at `/mcp/{id}`), every page of it — in a stable order (the
 * members' order, then the upstream's), names as the client sees them. A member the person has not connected offers one
 * tool, `{prefix}connect`; a member that fails, or does not answer within MEMBER_TIMEOUT_MS, is left out, named in
 * `_meta["ath/unavailable"]`, and the others answer. On the 2026 wire the list carries `ttlMs` (the shortest of the
 * members', at most 60 s; 10 s while a member is missing, so the list grows soon after a connect) and
 * `cacheScope: "private"`.
 */
import { MCP_WIRE } from "../../protocol/mcp-front-door.ts";
import { federatedName, federatedUri, type Member } from "./federation.ts";
import { memberDoor, sendToMember, type Fed } from "./federated-members.ts";
import { readMessages, type Message } from "./jsonrpc.ts";
import { isObject, messagesOf } from "./sse.ts";
import { MAX_LIST_PAGES } from "./tool-schemas.ts";
import { LIST_TTL_MS } from "./tools-list.ts";

/** How long a member may take to answer before a list (or `initialize`) is given without it. */
export const MEMBER_TIMEOUT_MS = 5_000;

/** The key `_meta` names unavailable members under. */
export const UNAVAILABLE = "ath/unavailable";

/** A list ath's caching hint asks to be read again soon after while a member is missing from it. */
const MISSING_TTL_MS = 10_000;

/** The federated list methods: the result member each one lists, and how an item is named. */
export const LISTS: Record<string, { key: string; rename(member: Member, item: Record<string, unknown>): Record<string, unknown> | null }> = {
  "tools/list": { key: "tools", rename: byName },
  "prompts/list": { key: "prompts", rename: byName },
  "resources/list": { key: "resources", rename: (m, r) => (typeof r.uri === "string" ? { ...r, uri: federatedUri(m, r.uri) } : null) },
  "resources/templates/list": { key: "resourceTemplates", rename: (m, r) => (typeof r.uriTemplate === "string" ? { ...r, uriTemplate: federatedUri(m, r.uriTemplate) } : null) },
};

/** What one member gave a federated request: its answer, or why it is missing. */
type Gathered = { member: Member; connected: false } | { member: Member; connected: true; result: Record<string, unknown> } | { member: Member; connected: true; unavailable: string };

/** The federated list `method` for this person (the result, without id). */
export async function federatedList(fed: Fed, m: Message, method: string): Promise<Record<string, unknown>> {
  const list = LISTS[method]!;
  const gathered = await gather(fed, (member, door) => allPages(fed, door, m, method, list.key, member));
  const items: Record<string, unknown>[] = [];
  const seen = new Set<string>();
  const unavailable: { provider_id: string; reason: string }[] = [];
  let ttl = LIST_TTL_MS;
  for (const g of gathered) {
    if (!g.connected) {
      if (method === "tools/list") items.push(connectTool(g.member));
      ttl = Math.min(ttl, MISSING_TTL_MS);
      continue;
    }
    if ("unavailable" in g) {
      unavailable.push({ provider_id: g.member.record.provider_id, reason: g.unavailable });
      ttl = Math.min(ttl, MISSING_TTL_MS);
      continue;
    }
    if (typeof g.result.ttlMs === "number" && g.result.ttlMs >= 0) ttl = Math.min(ttl, g.result.ttlMs);
    for (const item of g.result.items as Record<string, unknown>[]) {
      const named = list.rename(g.member, item);
      const key = named ? String(named.name ?? named.uri ?? named.uriTemplate) : null;
      // prefixes are prefix-free (checked at configuration): a name seen twice comes from one upstream listing it twice
      if (named === null || key === null || seen.has(key)) continue;
      seen.add(key);
      items.push(named);
    }
  }
  return {
    [list.key]: items,
    ...(fed.held ? {} : { ttlMs: ttl, cacheScope: "private" }),
    ...(unavailable.length ? { _meta: { [UNAVAILABLE]: unavailable } } : {}),
  };
}

/**
 * Asks every member at once, each within MEMBER_TIMEOUT_MS: `ask` for those the person connected; a member's failure
 * or silence is its own (never the request's).
 */
export async function gather(fed: Fed, ask: (member: Member, door: NonNullable<Awaited<ReturnType<typeof memberDoor>>>) => Promise<Record<string, unknown>>): Promise<Gathered[]> {
  return Promise.all(
    fed.f.members.map(async (member): Promise<Gathered> => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), MEMBER_TIMEOUT_MS)));
      try {
        const door = await Promise.race([memberDoor(fed, member), timeout]);
        if (door === "timeout") return { member, connected: true, unavailable: "timeout" };
        if (door === null) return { member, connected: false };
        const asked = ask(member, door);
        asked.catch(() => undefined);
        const result = await Promise.race([asked, timeout]);
        if (result === "timeout") return { member, connected: true, unavailable: `no answer within ${MEMBER_TIMEOUT_MS / 1000} s` };
        return { member, connected: true, result };
      } catch (err) {
        return { member, connected: true, unavailable: err instanceof Error ? err.message.slice(0, 200) : "failed" };
      } finally {
        clearTimeout(timer);
      }
    }),
  );
}

/** One request of the federated URL's own to a member (a list page, `server/discover`): its result, or a thrown Error. */
export async function askMember(fed: Fed, door: NonNullable<Awaited<ReturnType<typeof memberDoor>>>, m: Message, method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const own = isObject(m.raw.params) && isObject(m.raw.params._meta) ? { _meta: m.raw.params._meta } : {};
  const text = JSON.stringify({ jsonrpc: "2.0", id: OWN_ID, method, params: { ...own, ...params } });
  const message = readMessages(new TextEncoder().encode(text)).messages[0]!;
  const res = await sendToMember({ ...fed, held: fed.held ?? null }, door, message, text, {}, (r) => r);
  for await (const msg of messagesOf(res)) {
    if (msg.id !== OWN_ID) continue;
    if (isObject(msg.result)) return msg.result;
    const e = isObject(msg.error) ? msg.error : {};
    throw new Error(typeof e.message === "string" ? e.message.slice(0, 200) : `answered ${res.status}`);
  }
  throw new Error(`answered ${res.status} without a result`);
}

/** The tool a member the person has not connected offers. */
export function connectTool(member: Member): Record<string, unknown> {
  const name = member.record.config.display_name;
  return {
    name: federatedName(member, "connect"),
    title: `Connect ${name}`,
    description: `Connect your ${name} account to use its tools here: opens ${name}'s sign-in, then the tool list grows.`,
    inputSchema: { type: "object", properties: {} },
  };
}

/** The protocol version a federated session speaks with a 2025 client. */
export const FEDERATED_STATEFUL = MCP_WIRE.stateful;

// internal

const OWN_ID = "ath-federated";

function byName(member: Member, item: Record<string, unknown>): Record<string, unknown> | null {
  return typeof item.name === "string" ? { ...item, name: federatedName(member, item.name) } : null;
}

/** Every page of a member's list (at most MAX_LIST_PAGES): its items and the shortest ttlMs it gave. */
async function allPages(fed: Fed, door: NonNullable<Awaited<ReturnType<typeof memberDoor>>>, m: Message, method: string, key: string, _member: Member): Promise<Record<string, unknown>> {
  const items: unknown[] = [];
  let ttl: number | undefined;
  let cursor: string | null = null;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const result = await askMember(fed, door, m, method, cursor === null ? {} : { cursor });
    if (Array.isArray(result[key])) items.push(...(result[key] as unknown[]).filter(isObject));
    if (typeof result.ttlMs === "number") ttl = Math.min(ttl ?? Infinity, result.ttlMs);
    cursor = typeof result.nextCursor === "string" ? result.nextCursor : null;
    if (cursor === null) break;
  }
  return { items, ...(ttl === undefined ? {} : { ttlMs: ttl }) };
}
