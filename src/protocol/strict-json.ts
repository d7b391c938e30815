/**
 * JSON read strictly: the text must be valid JSON (RFC 8259) with no name repeated within one object. JSON.parse keeps
 * the last of two equal names while another reader may keep the first (RFC 8259 §4: "the behavior of software that
 * receives such an object is unpredictable"), so one text would mean two things — an audit line one way to the
 * verifier and another to whoever reads it next. Used by the offline audit verifier (agent/audit-verify.ts).
 *
 * The duplicate check is one pass over the text, constant work per character and per name: names are compared as
 * they are written unless they hold an escape (then decoded in the same pass: `"\u0061"` and `"a"` are one name), and
 * a set of names is made only for an object that reaches its second name.
 */

export type StrictJson = { ok: true; value: unknown } | { ok: false; reason: string };

/** Parses `text`; a syntax error or a repeated name is `ok: false` with a one-line reason. */
export function parseStrictJson(text: string): StrictJson {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `not JSON (${err instanceof Error ? err.message : String(err)})` };
  }
  const dup = firstDuplicateName(text);
  return dup === null ? { ok: true, value } : { ok: false, reason: `the name ${JSON.stringify(dup)} appears twice in one object` };
}

/**
 * The first name repeated within one object of `text`, which must be valid JSON (JSON.parse succeeded), or null.
 * @example firstDuplicateName('{"a":1,"b":{"c":1,"c":2}}') // "c"
 */
export function firstDuplicateName(text: string): string | null {
  // per open container: the names seen (null until an object's second name), its first name, whether a name is next
  const names: (Set<string> | null)[] = [];
  const firsts: (string | null)[] = [];
  const isObject: boolean[] = [];
  let expectName = false;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === OPEN_BRACE) {
      names.push(null);
      firsts.push(null);
      isObject.push(true);
      expectName = true;
    } else if (c === OPEN_BRACKET) {
      names.push(null);
      firsts.push(null);
      isObject.push(false);
      expectName = false;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      names.pop();
      firsts.pop();
      isObject.pop();
      expectName = false;
    } else if (c === COMMA) {
      expectName = isObject[isObject.length - 1] === true;
    } else if (c === QUOTE) {
      let end = i + 1;
      let escaped = false;
      for (;;) {
        const d = text.charCodeAt(end);
        if (d === QUOTE) break;
        if (d === BACKSLASH) {
          escaped = true;
          end += 2;
        } else end++;
      }
      if (expectName) {
        const name = escaped ? unescape(text, i + 1, end) : text.slice(i + 1, end);
        const top = names.length - 1;
        const first = firsts[top] as string | null;
        if (first === null) firsts[top] = name;
        else {
          let seen = names[top] as Set<string> | null;
          if (seen === null) seen = names[top] = new Set<string>([first]);
          if (seen.has(name)) return name;
          seen.add(name);
        }
        expectName = false;
      }
      i = end;
    }
  }
  return null;
}

// internal

const SIMPLE: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

/** The string between `from` and `to` (a valid JSON string's contents) with its escapes decoded. */
function unescape(text: string, from: number, to: number): string {
  let out = "";
  let run = from;
  for (let i = from; i < to; i++) {
    if (text.charCodeAt(i) !== BACKSLASH) continue;
    out += text.slice(run, i);
    const c = text[i + 1]!;
    if (c === "u") {
      out += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16));
      i += 5;
    } else {
      out += SIMPLE[c];
      i += 1;
    }
    run = i + 1;
  }
  return out + text.slice(run, to);
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
