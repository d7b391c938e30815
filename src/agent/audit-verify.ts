/**
 * The offline verifier of an audit export (DESIGN §20): pure — text in, verdict out — so `ath admin audit verify`
 * and anyone's script reach the same answer without the gateway. It walks the lines once: the key line first; then
 * an optional starting checkpoint (an export `--since`, or the anchor a sweep left); every record must carry the next
 * `seq`, the previous hash as `prev_hash`, and its own hash over its JCS without `hash`; every checkpoint must sign
 * (under the trusted key) the record just before it; and the export must end on a checkpoint, so nothing was cut from
 * its tail. The first fault is named by the `seq` where the chain stops being what was signed.
 */
import {
  checkpointVerifier, hashRecord, isAuditPublicJwk, ZERO_HASH, type AuditPublicJwk, type ChainRecord, type CheckpointLine,
} from "../protocol/audit-chain.ts";

export type VerifyResult =
  | {
      ok: true;
      /** Records checked. */
      records: number;
      checkpoints: number;
      /** The seq range covered (first, last); null when the export holds no record. */
      range: [number, number] | null;
      /** Whose key the checkpoints were checked against: the one given, or the export's own key line. */
      keySource: "given" | "export";
      kid: string;
    }
  | { ok: false; seq: number | null; reason: string; line: number };

/** `key`: the trusted public key (`--key`); without it the export's own key line is trusted, and the result says so. */
export function verifyAuditExport(text: string, key?: AuditPublicJwk): VerifyResult {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  let n = 0;
  const fail = (seq: number | null, reason: string): VerifyResult => ({ ok: false, seq, reason, line: n });

  const first = parse(lines[0]);
  n = 1;
  if (!first || first.type !== "key" || !isAuditPublicJwk(first.jwk)) return fail(null, "the first line is not the audit key ({\"type\":\"key\",\"jwk\":…})");
  const trusted = key ?? first.jwk;
  const signedBy = checkpointVerifier(trusted);

  let expected: number | null = null; // the next record's seq, once known
  let prev = "";
  let records = 0;
  let checkpoints = 0;
  let firstSeq: number | null = null;
  let signedThrough = 0;
  for (let i = 1; i < lines.length; i++) {
    n = i + 1;
    const o = parse(lines[i]);
    if (!o) return fail(expected, "a line is not a JSON object");
    if (o.type === "checkpoint") {
      const c = o as unknown as CheckpointLine;
      if (!isCheckpoint(c)) return fail(expected, "a checkpoint line is malformed");
      if (!signedBy(c)) return fail(c.seq, `checkpoint at seq ${c.seq} is not signed by key ${trusted.kid}`);
      if (expected === null) {
        // The starting checkpoint: the chain continues from what it signed.
        expected = c.seq + 1;
        prev = c.hash;
      } else if (c.seq >= expected) {
        return fail(expected, `checkpoint at seq ${c.seq} follows seq ${expected - 1}: seq ${expected} and on are missing`);
      } else if (c.seq !== expected - 1 || c.hash !== prev) {
        return fail(c.seq, `checkpoint at seq ${c.seq} does not sign the chain as read`);
      }
      checkpoints++;
      signedThrough = c.seq;
      continue;
    }
    if (o.type === "key") return fail(expected, "a second key line");
    const { hash, ...record } = o;
    const seq = record.seq;
    if (typeof seq !== "number" || !Number.isSafeInteger(seq) || typeof hash !== "string") return fail(expected, "a record line without a seq or hash");
    if (expected === null) {
      if (seq !== 1) return fail(1, `the export starts at seq ${seq} without a signed checkpoint to start from: seq 1 to ${seq - 1} are missing`);
      expected = 1;
      prev = ZERO_HASH;
    }
    if (seq !== expected) return fail(Math.min(seq, expected), `expected seq ${expected}, found seq ${seq} (a record dropped, reordered or inserted)`);
    if (record.prev_hash !== prev) return fail(seq, "prev_hash is not the previous record's hash");
    if (hashRecord(record as ChainRecord) !== hash) return fail(seq, "the record does not hash to its `hash` (altered)");
    firstSeq ??= seq;
    prev = hash;
    expected++;
    records++;
  }
  n = lines.length;
  if (expected !== null && signedThrough < expected - 1) {
    return fail(Math.max(signedThrough + 1, firstSeq ?? 1), "the export does not end with a checkpoint: its last records are not signed");
  }
  return {
    ok: true,
    records,
    checkpoints,
    range: firstSeq === null ? null : [firstSeq, expected! - 1],
    keySource: key ? "given" : "export",
    kid: trusted.kid,
  };
}

/** A key file: the JWK itself, or the export's key line. */
export function parseAuditKey(text: string): AuditPublicJwk | null {
  const o = parse(text.trim().split("\n")[0]);
  const jwk = o && o.type === "key" ? o.jwk : o;
  return isAuditPublicJwk(jwk) ? jwk : null;
}

// internal

function parse(line: string | undefined): Record<string, any> | null {
  if (line === undefined) return null;
  try {
    const v = JSON.parse(line) as unknown;
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, any>) : null;
  } catch {
    return null;
  }
}

function isCheckpoint(c: CheckpointLine): boolean {
  return Number.isSafeInteger(c.seq) && c.seq >= 1 && typeof c.hash === "string" && typeof c.time === "string" && typeof c.signature === "string";
}
