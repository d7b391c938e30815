/**
 * The offline verifier of an audit export (DESIGN §20): pure — text in, verdict out — so `ath admin audit verify`
 * and anyone's script reach the same answer without the gateway. It walks the lines once, each read strictly (valid
 * JSON, no name twice in one object: protocol/strict-json.ts): the key line first; then an optional starting
 * checkpoint (an export `--since`, or the anchor a sweep left); every record must carry the next `seq`, the previous
 * hash as `prev_hash`, and its own hash over its JCS without `hash`; every checkpoint must sign (under the trusted key)
 * the record just before it; and the export must end with its closing line — `{type:"end"}`, signed for this export
 * over the head it was taken at — or it is *truncated*: an export cut anywhere, right after a checkpoint too, or down
 * to its key line, lacks the one line only the key can make. The first fault is named by the `seq` where the chain
 * stops being what was signed.
 */
import {
  checkpointVerifier, endMessage, hashRecord, isAuditPublicJwk, ZERO_HASH, type AuditPublicJwk, type ChainRecord,
  type CheckpointLine, type EndLine,
} from "../protocol/audit-chain.ts";
import { parseStrictJson } from "../protocol/strict-json.ts";

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
      /** The closing line: the head the export was taken at, and when it was signed. */
      end: { seq: number; time: string };
    }
  | {
      ok: false;
      /** `truncated`: no closing line (the export was cut); `broken`: a line is not what was signed, or not readable. */
      kind: "broken" | "truncated";
      seq: number | null;
      reason: string;
      line: number;
    };

/** `key`: the trusted public key (`--key`); without it the export's own key line is trusted, and the result says so. */
export function verifyAuditExport(text: string, key?: AuditPublicJwk): VerifyResult {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  let n = 1;
  const fail = (seq: number | null, reason: string): VerifyResult => ({ ok: false, kind: "broken", seq, reason, line: n });

  const first = parseLine(lines[0]);
  if (!first.ok || first.value.type !== "key" || !isAuditPublicJwk(first.value.jwk)) {
    return fail(null, `the first line is not the audit key ({"type":"key","jwk":…})${first.ok ? "" : `: ${first.reason}`}`);
  }
  const trusted = key ?? (first.value.jwk as AuditPublicJwk);
  const signedBy = checkpointVerifier(trusted);
  const endSignedBy = checkpointVerifier(trusted, endMessage);

  let expected: number | null = null; // the next record's seq, once known
  let prev = "";
  let records = 0;
  let checkpoints = 0;
  let firstSeq: number | null = null;
  let end: EndLine | null = null;
  for (let i = 1; i < lines.length; i++) {
    n = i + 1;
    const parsed = parseLine(lines[i]);
    if (!parsed.ok) return fail(expected ?? looseSeq(lines[i]), `a line is not strict JSON: ${parsed.reason}`);
    const o = parsed.value;
    if (end) return fail(expected, "a line after the export's closing line");
    if (o.type === "checkpoint" || o.type === "end") {
      const c = o as unknown as CheckpointLine | EndLine;
      if (!isSigned(c) || (o.type === "checkpoint" && c.seq < 1)) return fail(expected, `a ${o.type === "end" ? "closing" : "checkpoint"} line is malformed`);
      const what = o.type === "end" ? "the closing line" : "checkpoint";
      if (!(o.type === "end" ? endSignedBy(c) : signedBy(c))) return fail(c.seq, `${what} at seq ${c.seq} is not signed by key ${trusted.kid}`);
      if (expected === null && o.type === "checkpoint") {
        // The starting checkpoint: the chain continues from what it signed.
        expected = c.seq + 1;
        prev = c.hash;
      } else if (expected === null) {
        if (c.seq !== 0 || c.hash !== ZERO_HASH) return fail(1, `the export closes at seq ${c.seq} but holds no record: seq 1 to ${c.seq} are missing`);
      } else if (c.seq >= expected) {
        return fail(expected, `${what} at seq ${c.seq} follows seq ${expected - 1}: seq ${expected} and on are missing`);
      } else if (c.seq !== expected - 1 || c.hash !== prev) {
        return fail(c.seq, `${what} at seq ${c.seq} does not sign the chain as read`);
      }
      if (o.type === "end") end = c as unknown as EndLine;
      else checkpoints++;
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
    if (hashOf(record as ChainRecord) !== hash) return fail(seq, "the record does not hash to its `hash` (altered)");
    firstSeq ??= seq;
    prev = hash;
    expected++;
    records++;
  }
  if (!end) {
    n = lines.length;
    const after = expected === null ? "its key line" : `seq ${expected - 1}`;
    return { ok: false, kind: "truncated", seq: expected === null ? null : expected - 1, reason: `the export has no closing line: it was cut after ${after}`, line: n };
  }
  return {
    ok: true,
    records,
    checkpoints,
    range: firstSeq === null ? null : [firstSeq, expected! - 1],
    keySource: key ? "given" : "export",
    kid: trusted.kid,
    end: { seq: end.seq, time: end.time },
  };
}

/** A key file: the JWK itself, or the export's key line. */
export function parseAuditKey(text: string): AuditPublicJwk | null {
  const o = parseLine(text.trim().split("\n")[0]);
  if (!o.ok) return null;
  const jwk = o.value.type === "key" ? o.value.jwk : o.value;
  return isAuditPublicJwk(jwk) ? jwk : null;
}

// internal

type Line = { ok: true; value: Record<string, any> } | { ok: false; reason: string };

function parseLine(line: string | undefined): Line {
  if (line === undefined) return { ok: false, reason: "the line is missing" };
  const r = parseStrictJson(line);
  if (!r.ok) return r;
  const v = r.value;
  return typeof v === "object" && v !== null && !Array.isArray(v) ? { ok: true, value: v as Record<string, any> } : { ok: false, reason: "not a JSON object" };
}

/** The seq a line claims, read leniently, to name where a line that is not strict JSON stands. */
function looseSeq(line: string | undefined): number | null {
  const m = /"seq"\s*:\s*(\d{1,15})/.exec(line ?? "");
  return m ? Number(m[1]) : null;
}

/** The record's hash, or "" when it holds a value JSON cannot carry (a number out of range): it then matches none. */
function hashOf(record: ChainRecord): string {
  try {
    return hashRecord(record);
  } catch {
    return "";
  }
}

function isSigned(c: { seq: unknown; hash: unknown; time: unknown; signature: unknown }): c is CheckpointLine {
  return Number.isSafeInteger(c.seq) && (c.seq as number) >= 0 && typeof c.hash === "string" && typeof c.time === "string" && typeof c.signature === "string";
}
