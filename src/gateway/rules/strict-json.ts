/**
 * Strict JSON: the one reading of a JSON body that a rule may judge (DESIGN §16 "one body model", issue 35). A body is
 * read only if it is what every JSON reader reads alike — UTF-8 without a byte-order mark, one JSON text with nothing
 * after it, no object with a key twice (readers disagree on which value wins), nested at most 32 deep. Anything else
 * is *unreadable*: a rule that reads it holds as an evaluation error (fail closed), never as "no such field".
 *
 * `readStrictJson` also remembers where the members of the outer objects sit in the text (`spanOf`), so a door can bind
 * an approval to the bytes of one member as sent (an MCP call's `params.arguments`), not to a re-serialization. The
 * duplicate-name rule is protocol/strict-json.ts's, which the offline audit verifier shares.
 */
import { firstDuplicateName } from "../../protocol/strict-json.ts";

/** Why a body is not strict JSON: what a rule's evaluation error names. */
export class UnreadableJson extends Error {
  override readonly name = "UnreadableJson";
}

/** Nesting a strict body may have (DESIGN §10's protocol bodies: 32). */
export const MAX_STRICT_DEPTH = 32;

/** How deep `spanOf` remembers member positions: an MCP batch → message → params → arguments. */
const SPAN_DEPTH = 3;

/** The value of `bytes` read strictly, or UnreadableJson naming why not. */
export function readStrictJson(bytes: Uint8Array): unknown {
  return readStrictText(decodeUtf8(bytes));
}

/** The same for text already decoded (as UTF-8, fatally). */
export function readStrictText(text: string): unknown {
  if (text.charCodeAt(0) === 0xfeff) throw new UnreadableJson("the body starts with a byte-order mark");
  let value: unknown;
  try {
    // JSON.parse refuses comments, trailing commas, single quotes, trailing data and every other syntax error
    value = JSON.parse(text);
  } catch {
    throw new UnreadableJson("the body is not one JSON text");
  }
  if (value === null || typeof value !== "object") return value;
  // the one duplicate-name rule, shared with the offline audit verifier
  const dup = firstDuplicateName(text);
  if (dup !== null) throw new UnreadableJson(`duplicate key "${dup.slice(0, 64)}": services read either value`);
  scan(text, value);
  return value;
}

/** UTF-8, fatally: one invalid byte makes the body unreadable (a lenient decoder would read U+FFFD where the service reads bytes). */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new UnreadableJson("the body is not UTF-8");
  }
}

/**
 * Where `key`'s value sits in the text `obj` was read from — `[start, end)` in UTF-16 units of that text — for objects
 * at most three levels in (a batch's message, its params, their members); undefined for others.
 */
export function spanOf(obj: object, key: string): readonly [number, number] | undefined {
  return spans.get(obj)?.get(key);
}

// internal

const spans = new WeakMap<object, Map<string, [number, number]>>();

/**
 * One pass over a text JSON.parse accepted (and with no duplicate name), alongside the value it made: depth is refused
 * past MAX_STRICT_DEPTH, and the member positions of the outer objects recorded. Linear in the text: strings are
 * skipped, not parsed again, except keys holding an escape.
 */
function scan(text: string, root: object): void {
  // per open container: the value it is (null once deeper than SPAN_DEPTH), whether it is an object (keys), the key being read
  const stack: { value: unknown; keys: boolean; key: string | null; start: number }[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (stack.length >= MAX_STRICT_DEPTH) throw new UnreadableJson(`the body is nested deeper than ${MAX_STRICT_DEPTH} levels`);
      const parent = stack[stack.length - 1];
      const value = parent === undefined ? root : childOf(parent, stack.length);
      noteStart(parent, i);
      stack.push({ value, keys: c === 0x7b, key: null, start: i });
      expectKey = c === 0x7b;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
      noteEnd(stack[stack.length - 1], i + 1);
      expectKey = false;
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1]!;
      if (top.keys) expectKey = true;
      else top.key = String(Number(top.key ?? -1) + 1);
    } else if (c === 0x22 /* " */) {
      let end = i + 1;
      let escaped = false;
      while (text.charCodeAt(end) !== 0x22) {
        if (text.charCodeAt(end) === 0x5c) {
          escaped = true;
          end++;
        }
        end++;
      }
      const top = stack[stack.length - 1]!;
      if (expectKey && top.keys) {
        top.key = escaped ? (JSON.parse(text.slice(i, end + 1)) as string) : text.slice(i + 1, end);
        expectKey = false;
        // skip to the value: whitespace and the colon
        i = end + 1;
        while (text.charCodeAt(i) !== 0x3a) i++;
        continue;
      }
      noteStart(top, i);
      noteEnd(top, end + 1);
      i = end;
    } else if (c > 0x20 && c !== 0x3a) {
      // a number, true, false or null: runs until a delimiter
      let end = i;
      while (end < text.length && !DELIMITERS.has(text.charCodeAt(end))) end++;
      const top = stack[stack.length - 1];
      noteStart(top, i);
      noteEnd(top, end);
      i = end - 1;
    }
  }
}

/** `,` `]` `}` and JSON's whitespace end a number or literal. */
const DELIMITERS = new Set([0x2c, 0x5d, 0x7d, 0x20, 0x09, 0x0a, 0x0d]);

function childOf(parent: { value: unknown; keys: boolean; key: string | null }, depth: number): unknown {
  if (depth >= SPAN_DEPTH || parent.value === null || typeof parent.value !== "object") return null;
  if (!parent.keys && parent.key === null) parent.key = "0";
  return (parent.value as Record<string, unknown>)[parent.key!];
}

/** The value of the member being read starts at `at` (recorded for outer objects only). */
function noteStart(top: { value: unknown; keys: boolean; key: string | null; start: number } | undefined, at: number): void {
  if (!top) return;
  if (!top.keys && top.key === null) top.key = "0";
  if (top.keys && top.key !== null && top.value !== null && typeof top.value === "object") {
    let m = spans.get(top.value);
    if (!m) spans.set(top.value, (m = new Map()));
    m.set(top.key, [at, at]);
  }
}

function noteEnd(top: { value: unknown; keys: boolean; key: string | null } | undefined, at: number): void {
  if (!top?.keys || top.key === null || top.value === null || typeof top.value !== "object") return;
  const span = spans.get(top.value)?.get(top.key);
  if (span) span[1] = at;
}
