/**
 * Webhook subscriptions and their outbox (DESIGN §20). An event becomes one outbox row per subscribed endpoint;
 * deliverers (every instance runs one) lease only the oldest pending row of each endpoint, so an endpoint gets its
 * events in order, and a lease that lapses (a killed instance) lets another take the row: at least once.
 */
import { json, num, str, type Row } from "../rows.ts";
import type { Store, WebhookDelivery, WebhookRecord } from "../types.ts";
import { type Driver, insert, one } from "./driver.ts";

const COLUMNS = ["webhook_id", "url", "events", "secret_sealed", "created_at"] as const;

export function webhookQueries(db: Driver): Pick<
  Store,
  "createWebhook" | "listWebhooks" | "getWebhook" | "deleteWebhook" | "enqueueWebhookEvent" | "claimWebhookDeliveries" | "finishWebhookDelivery" | "countWebhookOutbox"
> {
  return {
    async createWebhook(w) {
      await db.run(insert("webhooks", COLUMNS), [w.webhook_id, w.url, JSON.stringify(w.events), w.secret_sealed, w.created_at]);
    },
    async listWebhooks() {
      return (await db.all("SELECT * FROM webhooks ORDER BY created_at DESC, webhook_id DESC")).map(toWebhook);
    },
    async getWebhook(id) {
      return one(db, "SELECT * FROM webhooks WHERE webhook_id = ?", [id], toWebhook);
    },
    async deleteWebhook(id) {
      return db.transaction(async (tx) => {
        await tx.run("DELETE FROM webhook_outbox WHERE webhook_id = ?", [id]);
        return (await tx.run("DELETE FROM webhooks WHERE webhook_id = ?", [id])) === 1;
      });
    },
    async enqueueWebhookEvent(e) {
      // `events` is a JSON array of names written by JSON.stringify: a subscribed name always reads `"name"`.
      return db.run(
        `INSERT INTO webhook_outbox (webhook_id, event_id, body, created_at, attempts, next_at, state)
         SELECT webhook_id, ?, ?, ?, 0, ?, 'pending' FROM webhooks WHERE events LIKE ? ORDER BY webhook_id`,
        [e.event_id, e.body, e.created_at, e.created_at, `%${JSON.stringify(e.type)}%`],
      );
    },
    async claimWebhookDeliveries(owner, now, leaseMs) {
      const rows = await db.all(
        `UPDATE webhook_outbox SET lease_owner = ?, lease_until = ?
         WHERE id IN (SELECT MIN(id) FROM webhook_outbox WHERE state = 'pending' GROUP BY webhook_id)
           AND state = 'pending' AND next_at <= ? AND (lease_until IS NULL OR lease_until < ?)
         RETURNING id, webhook_id, event_id, body, created_at, attempts`,
        [owner, now + leaseMs, now, now],
      );
      return rows.map(toDelivery).sort((a, b) => a.id - b.id);
    },
    async finishWebhookDelivery(id, owner, o) {
      return (
        (await db.run(
          "UPDATE webhook_outbox SET state = ?, attempts = ?, next_at = ?, lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?",
          [o.state, o.attempts, o.next_at, id, owner],
        )) === 1
      );
    },
    async countWebhookOutbox() {
      const out = { pending: 0, delivered: 0, failed: 0 };
      for (const r of await db.all("SELECT state, COUNT(*) AS n FROM webhook_outbox GROUP BY state")) out[str(r.state) as keyof typeof out] = num(r.n);
      return out;
    },
  };
}

function toWebhook(r: Row): WebhookRecord {
  return {
    webhook_id: str(r.webhook_id), url: str(r.url), events: json(r.events) as string[], secret_sealed: str(r.secret_sealed),
    created_at: num(r.created_at),
  };
}

function toDelivery(r: Row): WebhookDelivery {
  return { id: num(r.id), webhook_id: str(r.webhook_id), event_id: str(r.event_id), body: str(r.body), created_at: num(r.created_at), attempts: num(r.attempts) };
}
