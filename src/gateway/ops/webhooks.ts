/**
 * The webhook deliverer (DESIGN §20): every instance runs one. It leases the due head of each endpoint's outbox
 * (store: one at a time per endpoint, across instances), POSTs it (domain/webhooks.ts), and either marks it delivered
 * or schedules the next attempt with exponential backoff — 1 s, 2 s, 4 s … at most 10 min apart — until 24 h after
 * the event, when it is given up (logged) and the endpoint's next event goes. A killed instance's lease lapses after
 * LEASE_MS and another takes the row again: at least once, in order per endpoint.
 *
 * The loop runs in the context it was started in, not in the request that nudged it: the audit queue nudges it from
 * inside a request, and a timer set there would carry that request's trace into every later poll — an idle gateway
 * exported a lone `store.claimWebhookDeliveries` span a second (issue 40).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Gateway, WebhookDeliverer } from "../context.ts";
import { deliverOnce, secretAad } from "../domain/webhooks.ts";

const POLL_MS = 1_000;
const LEASE_MS = 15_000;
const TIMEOUT_MS = 10_000;
const GIVE_UP_MS = 24 * 3600 * 1000;
const MAX_BACKOFF_MS = 10 * 60_000;


export function startWebhookDeliverer(gw: Gateway, o: { pollMs?: number; leaseMs?: number; timeoutMs?: number } = {}): WebhookDeliverer {
  const owner = crypto.randomUUID();
  const pollMs = o.pollMs ?? POLL_MS;
  const leaseMs = o.leaseMs ?? LEASE_MS;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | null = null;
  let again = false;
  /** Runs a function in the context of the deliverer's start (no request's). */
  const detached = AsyncLocalStorage.snapshot();

  async function deliverDue(): Promise<boolean> {
    const claimed = await gw.store.claimWebhookDeliveries(owner, gw.now(), leaseMs);
    await Promise.all(
      claimed.map(async (d) => {
        const w = await gw.store.getWebhook(d.webhook_id);
        if (!w) return;
        const secret = await gw.sealer.open(w.secret_sealed, secretAad(w.webhook_id));
        const r = await deliverOnce(d, w, { secret, dev: gw.opts.dev, fetch: gw.fetch, now: gw.now, timeoutMs: o.timeoutMs ?? TIMEOUT_MS });
        gw.metrics.webhookDeliveries.inc([r.ok ? "ok" : "error"]);
        const attempts = d.attempts + 1;
        const now = gw.now();
        if (r.ok) {
          await gw.store.finishWebhookDelivery(d.id, owner, { state: "delivered", attempts, next_at: now });
        } else if (now - d.created_at >= GIVE_UP_MS) {
          gw.log.warn("webhook delivery given up after 24 h", { webhook_id: w.webhook_id, event_id: d.event_id, attempts, reason: r.reason });
          await gw.store.finishWebhookDelivery(d.id, owner, { state: "failed", attempts, next_at: now });
        } else {
          const backoff = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(attempts - 1, 20));
          gw.log.info("webhook delivery failed; will retry", { webhook_id: w.webhook_id, event_id: d.event_id, attempts, reason: r.reason, retry_in_ms: backoff });
          await gw.store.finishWebhookDelivery(d.id, owner, { state: "pending", attempts, next_at: now + backoff });
        }
      }),
    );
    return claimed.length > 0;
  }

  function run(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    running = (async () => {
      try {
        // Delivered heads make the endpoints' next events due at once.
        while (!stopped && (await deliverDue())) again = false;
      } catch (err) {
        gw.log.error("webhook delivery failed", err);
      } finally {
        running = null;
        if (!stopped) {
          if (again) {
            again = false;
            queueMicrotask(run);
          } else {
            timer = setTimeout(run, pollMs);
            timer.unref();
          }
        }
      }
    })();
  }

  timer = setTimeout(run, 0);
  timer.unref();
  return {
    nudge: () => detached(run),
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
    },
  };
}
