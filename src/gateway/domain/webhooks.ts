/**
 * Webhooks (DESIGN §20): which audit events become which webhook events, subscribing (the target SSRF-checked, the
 * secret sealed), and one delivery: POST `{id, type, time, data}` with `ATH-Signature: t=<unix>,v1=<hex
 * HMAC-SHA256(secret, "<t>.<body>")>`, `t` per attempt, the target checked again before every attempt.
 * The outbox and its leases are the store's (store/sql/webhooks.ts); the loop that drains it is ops/webhooks.ts.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { createHmac } from "node:crypto";
import { isIP } from "node:net";
import { z } from "zod";
import { AthError } from "../../protocol/index.ts";
import type { AuditEvent, Store, WebhookDelivery, WebhookRecord } from "../../store/types.ts";
import type { Fetch, Gateway } from "../context.ts";
import { randomSecret } from "../crypto/secrets.ts";
import { classifyAddress } from "../identity/ip-address.ts";

export const WEBHOOK_EVENTS = [
  "agent.registered", "agent.approved", "agent.denied", "agent.suspended", "token.issued", "token.revoked", "approval.requested",
  "approval.decided", "grant.revoked", "refresh.reuse_detected", "budget.exhausted",
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Audit event type → webhook event type (and what it adds to `data`). */
const FROM_AUDIT: Record<string, { type: WebhookEvent; data?: Record<string, unknown> }> = {
  "agent.registered": { type: "agent.registered" },
  "agent.approved": { type: "agent.approved" },
  "agent.denied": { type: "agent.denied" },
  "agent.suspended": { type: "agent.suspended" },
  "token.issued": { type: "token.issued" },
  "token.revoked": { type: "token.revoked" },
  "approval.requested": { type: "approval.requested" },
  "approval.approved": { type: "approval.decided", data: { decision: "approved" } },
  "approval.denied": { type: "approval.decided", data: { decision: "denied" } },
  "upstream.revoked": { type: "grant.revoked" },
  "grant.revoked": { type: "grant.revoked" },
  "refresh.reuse_detected": { type: "refresh.reuse_detected" },
  "budget.exhausted": { type: "budget.exhausted" },
};

export const WebhookRequest = z
  .object({
    url: z.string().min(1).max(2048),
    events: z.array(z.enum(WEBHOOK_EVENTS)).min(1).max(WEBHOOK_EVENTS.length),
    secret: z.string().min(16, "secret must be at least 16 characters").max(512),
  })
  .strict();

/** The subscription as the admin API shows it: never the secret. */
export function webhookView(w: WebhookRecord) {
  return { webhook_id: w.webhook_id, url: w.url, events: w.events, created_at: new Date(w.created_at).toISOString() };
}

export async function subscribe(gw: Gateway, input: z.infer<typeof WebhookRequest>, lookup = defaultLookup): Promise<WebhookRecord> {
  const refusal = await checkWebhookTarget(input.url, gw.opts.dev, lookup);
  if (refusal) throw new AthError("INVALID_REQUEST", `url: ${refusal}`, { field: "url" });
  const webhook_id = `ath_wh_${randomSecret(12)}`;
  const record: WebhookRecord = {
    webhook_id,
    url: input.url,
    events: [...new Set(input.events)],
    secret_sealed: await gw.sealer.seal(input.secret, secretAad(webhook_id)),
    created_at: gw.now(),
  };
  await gw.store.createWebhook(record);
  return record;
}

/** Puts the webhook events among `batch` in the outbox (inside the audit write's transaction). */
export async function enqueueWebhookEvents(store: Store, batch: readonly AuditEvent[]): Promise<void> {
  for (const e of batch) {
    const to = FROM_AUDIT[e.type];
    if (!to) continue;
    const id = `evt_${randomSecret(16)}`;
    const data: Record<string, unknown> = { ...e.data, ...to.data };
    for (const k of ["client_id", "agent_id", "provider_id", "user_id"] as const) if (e[k]) data[k] = e[k];
    const body = JSON.stringify({ id, type: to.type, time: new Date(e.at).toISOString(), data });
    await store.enqueueWebhookEvent({ event_id: id, type: to.type, body, created_at: e.at });
  }
}

export function isWebhookSource(e: AuditEvent): boolean {
  return e.type in FROM_AUDIT;
}

/** One attempt; "ok" on a 2xx answer, else why not (never thrown). */
export async function deliverOnce(
  d: WebhookDelivery,
  w: WebhookRecord,
  o: { secret: string; dev: boolean; fetch: Fetch; now: () => number; timeoutMs: number; lookup?: (host: string) => Promise<string[]> },
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const refusal = await checkWebhookTarget(w.url, o.dev, o.lookup ?? defaultLookup);
  if (refusal) return { ok: false, reason: refusal };
  const t = Math.floor(o.now() / 1000);
  try {
    const res = await o.fetch(w.url, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(o.timeoutMs),
      headers: { "content-type": "application/json", "user-agent": "ath-webhooks", "ath-signature": signature(o.secret, t, d.body) },
      body: d.body,
    });
    await res.body?.cancel().catch(() => undefined);
    return res.status >= 200 && res.status < 300 ? { ok: true } : { ok: false, reason: `status ${res.status}` };
  } catch (err) {
    return { ok: false, reason: (err as Error).name === "TimeoutError" ? "timed out" : "unreachable" };
  }
}

/** `t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>` */
export function signature(secret: string, t: number, body: string): string {
  return `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`;
}

export function secretAad(webhookId: string): string {
  return `webhook:${webhookId}:secret`;
}

/**
 * Why the target may not be called, or null: https only — http only to a loopback host with `--dev` — no
 * credentials in the URL, and every address the host resolves to public (loopback and private ones only with --dev),
 * as for agent identity documents (identity/ip-address.ts).
 */
export async function checkWebhookTarget(raw: string, dev: boolean, lookup: (host: string) => Promise<string[]> = defaultLookup): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "not a URL";
  }
  if (url.username || url.password) return "URLs with credentials are not allowed";
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : await lookup(host);
  } catch {
    return `host ${host} does not resolve`;
  }
  if (addresses.length === 0) return `host ${host} does not resolve`;
  const kinds = addresses.map(classifyAddress);
  if (url.protocol === "http:") {
    if (!dev || !kinds.every((k) => k === "loopback")) return "http:// is allowed only to a loopback host, with --dev (else https://)";
  } else if (url.protocol !== "https:") {
    return `${url.protocol}// is not allowed (https:// only)`;
  }
  const bad = kinds.find((k) => k !== "public" && !dev);
  return bad ? `host ${host} is or resolves to a ${bad} address, which is allowed only with --dev` : null;
}

// internal

async function defaultLookup(host: string): Promise<string[]> {
  return (await dnsLookup(host, { all: true })).map((a) => a.address);
}
