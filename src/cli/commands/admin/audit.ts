/** `ath admin audit`: events newest first; `--follow` streams new ones until Ctrl-C (json: one event per line). */
import { followAudit, listAudit, type AuditEventView } from "../../../agent/flows/admin.ts";
import { getDeps } from "../../kit/deps.ts";
import type { Invocation } from "../../kit/flags.ts";
import { defined, filters, more, page, setup, table, text, time, type Args } from "./common.ts";

export async function audit({ args: a, format }: Invocation): Promise<void> {
  const now = getDeps().now();
  const f = defined({ type: text(a.type), ...filters(a), since: time(a, "since", now), until: time(a, "until", now) });
  const c = await setup(a, format);
  const answer = await listAudit(c.target, { ...f, ...page(a) });
  const events = answer.events;
  if (a.follow !== true) {
    if (c.out.json) return c.out.doc(answer);
    table(c.out, AUDIT_HEADER, events.map(auditRow));
    more(c.out, answer.next_cursor);
    return;
  }
  // --follow: the latest events oldest first, then each new one as it comes — json: one event object per line
  const print = (e: AuditEventView) => (c.out.json ? c.deps.stdout(`${JSON.stringify(e)}\n`) : c.out.table([auditRow(e)]));
  if (!c.out.json && c.out.tty) table(c.out, AUDIT_HEADER, []);
  for (const e of [...events].reverse()) print(e);
  const stop = new AbortController();
  const remove = c.deps.onInterrupt(async () => stop.abort());
  const { until: _until, ...following } = f;
  try {
    await followAudit(c.target, following, events[0]?.id ?? 0, print, { intervalMs: FOLLOW_INTERVAL_MS, signal: stop.signal });
  } finally {
    remove();
  }
}

// internal

const FOLLOW_INTERVAL_MS = 1000;
const AUDIT_HEADER = ["AT", "TYPE", "CLIENT_ID", "PROVIDER", "USER", "DATA"];

function auditRow(e: AuditEventView): string[] {
  return [e.at, e.type, e.client_id ?? "", e.provider_id ?? "", e.user_id ?? "", e.data === null ? "" : JSON.stringify(e.data)];
}
