/**
 * Re-indenting JSON for people, bounded (DESIGN §14 "Bounded work per input"): indentation grows with depth, so
 * `JSON.stringify(v, null, 2)` of 16 KiB of `[[[[…]]]]` is megabytes. Here the output stops at `maxBytes` (64 KiB)
 * and nesting at `maxDepth` (32): past either, the raw text is shown instead — linear in what is shown.
 */
export const PRETTY_LIMITS = { maxBytes: 64 * 1024, maxDepth: 32 } as const;

/** `text` re-indented when it is JSON within the limits; else `text` itself. */
export function prettyJson(text: string, limits: { maxBytes: number; maxDepth: number } = PRETTY_LIMITS): string {
  if (text.length > limits.maxBytes || depthOver(text, limits.maxDepth)) return text;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  const out: string[] = [];
  let size = 0;
  const push = (s: string) => {
    size += s.length;
    if (size > limits.maxBytes) throw TOO_LARGE;
    out.push(s);
  };
  try {
    write(value, 0, push);
  } catch (e) {
    if (e === TOO_LARGE) return text;
    throw e;
  }
  return out.join("");
}

// internal

const TOO_LARGE = new Error("too large");

/** Whether brackets outside strings nest deeper than `max` (one linear scan, before parsing). */
function depthOver(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > max) return true;
    } else if (c === 93 || c === 125) depth--;
  }
  return false;
}

function write(v: unknown, indent: number, push: (s: string) => void): void {
  if (v === null || typeof v !== "object") {
    push(JSON.stringify(v) ?? "null");
    return;
  }
  const pad = "  ".repeat(indent + 1);
  const entries: [string | null, unknown][] = Array.isArray(v) ? v.map((x) => [null, x]) : Object.entries(v);
  const [open, close] = Array.isArray(v) ? ["[", "]"] : ["{", "}"];
  if (entries.length === 0) {
    push(open + close);
    return;
  }
  push(`${open}\n`);
  entries.forEach(([k, x], i) => {
    push(pad);
    if (k !== null) push(`${JSON.stringify(k)}: `);
    write(x, indent + 1, push);
    push(i < entries.length - 1 ? ",\n" : "\n");
  });
  push(`${"  ".repeat(indent)}${close}`);
}
