/**
 * Changing a JSON-RPC request ath forwards without re-serializing what it does not change (issue 35 #4: an approval is
 * bound to bytes): the message is rebuilt from the spans of its members as sent (rules/strict-json.ts `spanOf`), so
 * `params.arguments` — what a person approved, what policy read — reaches the upstream byte for byte. Used to take ath's
 * own multi-round-trip parts out (its `ath1.` requestState, its `inputResponses` entry) and, when bridging wires, to
 * set or drop the 2026 envelope.
 */
import { spanOf } from "../rules/strict-json.ts";
import type { Message } from "./jsonrpc.ts";

export interface ParamsChange {
  /** The message's `id`, as JSON text. */
  id?: string;
  /** `params` members to remove. */
  drop?: readonly string[];
  /** `params` members to set, as JSON text. */
  set?: Readonly<Record<string, string>>;
  /** `params.inputResponses` members to remove (the member itself goes when none is left). */
  dropInputs?: readonly string[];
}

/** The message's JSON text with its `params` changed as `c` says; every other byte as sent. */
export function rewriteParams(text: string, m: Message, c: ParamsChange): string {
  const raw = m.raw;
  const params = raw.params !== null && typeof raw.params === "object" && !Array.isArray(raw.params) ? (raw.params as Record<string, unknown>) : null;
  const members: string[] = [];
  for (const key of Object.keys(raw)) {
    if (key === "params") continue;
    members.push(`${JSON.stringify(key)}:${key === "id" && c.id !== undefined ? c.id : slice(text, raw, key)}`);
  }
  const inner: string[] = [];
  if (params !== null) {
    for (const key of Object.keys(params)) {
      if (c.drop?.includes(key) || (c.set && key in c.set)) continue;
      if (key === "inputResponses" && c.dropInputs?.length) {
        const kept = inputsWithout(text, params.inputResponses, c.dropInputs);
        if (kept !== null) inner.push(`"inputResponses":${kept}`);
        continue;
      }
      inner.push(`${JSON.stringify(key)}:${slice(text, params, key)}`);
    }
  }
  for (const [key, value] of Object.entries(c.set ?? {})) inner.push(`${JSON.stringify(key)}:${value}`);
  if (params !== null || inner.length) members.push(`"params":{${inner.join(",")}}`);
  return `{${members.join(",")}}`;
}

// internal

/** A member's value as sent (its span), or — when the reader kept none — as JSON of the value read. */
function slice(text: string, obj: object, key: string): string {
  const span = spanOf(obj, key);
  return span ? text.slice(span[0], span[1]) : JSON.stringify((obj as Record<string, unknown>)[key]);
}

/** `inputResponses` without `drop`, as JSON text; null when nothing is left. */
function inputsWithout(text: string, inputs: unknown, drop: readonly string[]): string | null {
  if (inputs === null || typeof inputs !== "object" || Array.isArray(inputs)) return JSON.stringify(inputs);
  const kept = Object.keys(inputs).filter((k) => !drop.includes(k));
  if (kept.length === 0) return null;
  return `{${kept.map((k) => `${JSON.stringify(k)}:${slice(text, inputs, k)}`).join(",")}}`;
}
