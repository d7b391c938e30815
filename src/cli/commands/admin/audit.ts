/**
 * `ath admin audit`: events newest first; `--follow` streams new ones until Ctrl-C (json: one event per line).
 * `audit export [--since T]`: the hash chain as JSONL; `audit verify FILE [--key FILE]`: offline, exit 1 naming the
 * first bad seq, or the export as truncated (agent/audit-verify.ts); `audit key`: the gateway's public audit key (DESIGN §20).
 */
import { parseAuditKey, verifyAuditExport } from "../../../agent/audit-verify.ts";
import { auditKey as fetchKey, exportAudit, followAudit, listAudit, type AuditEventView } from "../../../agent/flows/admin.ts";
import { stringifyInert } from "../../../text/sanitize.ts";
import { getDeps } from "../../kit/deps.ts";
import { ClientError, usageError } from "../../kit/errors.ts";
import type { Invocation } from "../../kit/flags.ts";
import { output } from "../../kit/render.ts";
import { defined, filters, more, page, readInput, setup, table, text, time, type Args } from "./common.ts";

export async function audit(inv: Invocation): Promise<void> {
  const { args: a, format } = inv;
  const action = text(a.action);
  if (action === "export") return auditExport(inv);
  if (action === "verify") return auditVerify(inv);
  if (action === "key") return auditKey(inv);
  if (action !== undefined) throw usageError(`unknown audit action "${action}": export, verify or key`);
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
  const print = (e: AuditEventView) => (c.out.json ? c.deps.stdout(`${stringifyInert(e)}\n`) : c.out.table([auditRow(e)]));
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

/** `admin audit export [--since T]`: the chain as JSONL on stdout, as the gateway streams it. */
async function auditExport({ args: a, format }: Invocation): Promise<void> {
  const since = time(a, "since", getDeps().now());
  const c = await setup(a, format);
  await exportAudit(c.target, since, (chunk) => c.deps.stdout(chunk));
}

/** `admin audit verify FILE [--key FILE]`: offline; exit 1 naming the first bad seq. */
async function auditVerify({ args: a, format }: Invocation): Promise<void> {
  const file = text(a.file);
  if (file === undefined) throw usageError("say which export to verify: ath admin audit verify FILE [--key FILE]");
  const out = await output(format, getDeps());
  const exported = await readInput(file);
  const keyFile = text(a.key);
  const key = keyFile === undefined ? undefined : parseAuditKey(await readInput(keyFile));
  if (key === null) throw usageError(`${keyFile} holds no Ed25519 audit key (a JWK, or an export's key line)`);
  const r = verifyAuditExport(exported, key);
  if (!r.ok) {
    const where = r.kind === "truncated" ? "truncated" : `broken at ${r.seq === null ? "the start" : `seq ${r.seq}`}`;
    throw new ClientError("failure", r.kind === "truncated" ? "AUDIT_EXPORT_TRUNCATED" : "AUDIT_CHAIN_BROKEN", `${where}: ${r.reason} (line ${r.line})`, {
      details: { kind: r.kind, seq: r.seq, line: r.line },
    });
  }
  if (out.json) return out.doc(r);
  const span = r.range ? `seq ${r.range[0]}–${r.range[1]}` : "no records";
  out.line(`intact: ${r.records} record(s) (${span}), ${r.checkpoints} checkpoint(s); closed at seq ${r.end.seq}, signed ${r.end.time}`);
  out.line(
    r.keySource === "given"
      ? `signed by the given key ${r.kid}`
      : `signed by the export's own key ${r.kid} — pass --key with the key you trust (ath admin audit key) to pin it`,
  );
}

/** `admin audit key`: the gateway's public audit key (JWK), to keep for `verify --key`. */
async function auditKey({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format, { noToken: true });
  const jwk = await fetchKey(c.target);
  if (c.out.json) return c.out.doc(jwk);
  c.deps.stdout(`${JSON.stringify(jwk)}\n`);
}

// internal

const FOLLOW_INTERVAL_MS = 1000;
const AUDIT_HEADER = ["AT", "TYPE", "CLIENT_ID", "PROVIDER", "USER", "DATA"];

function auditRow(e: AuditEventView): string[] {
  return [e.at, e.type, e.client_id ?? "", e.provider_id ?? "", e.user_id ?? "", e.data === null ? "" : JSON.stringify(e.data)];
}
