/**
 * The request a person approves, as the bytes that will be sent (DESIGN §16), for the approval page and the admin
 * console alike: method; path as sent and decoded; the raw query beside its decoded pairs; the bound headers; the raw
 * body (the first 16 KiB, escaped, format and control characters shown as `⟨U+XXXX⟩`); and a formatted JSON view only
 * when it is faithful — no duplicate keys, every number survives the round trip, depth ≤ 32, ≤ 64 KiB formatted —
 * else a visible warning. Every step is one pass over what is shown: a 16 KB body nested 8,000 deep costs what a flat
 * one does.
 */
import { escapeHtml } from "./layout.ts";

export interface RequestView {
  method: string;
  /** The path as sent (percent-encoded). */
  path: string;
  /** The query as sent, without `?`. */
  query: string;
  /** Bound headers, lower-case names. */
  headers: Readonly<Record<string, string>>;
  /** null: no body. `shown` is the first 16 KiB. */
  body: { shown: Uint8Array; bytes: number; contentType: string | null } | null;
}

/** The formatted view's bounds (DESIGN §16). */
export const MAX_FORMATTED_DEPTH = 32;
export const MAX_FORMATTED_CHARS = 64 * 1024;

export function renderRequestView(v: RequestView): string {
  const decodedPath = safeDecode(v.path);
  const path =
    decodedPath === v.path
      ? `<code class="id">${text(v.path)}</code>`
      : `<code class="id">${text(v.path)}</code><br><span class="hint">decoded:</span> <code class="id">${text(decodedPath)}</code>`;
  const query = v.query
    ? `<dt>Query</dt><dd><code>${text(v.query)}</code><br><span class="hint">decoded:</span><br><code>${v.query
        .split("&")
        .map((p) => {
          const i = p.indexOf("=");
          return i < 0 ? text(safeDecode(p, true)) : `${text(safeDecode(p.slice(0, i), true))} = ${text(safeDecode(p.slice(i + 1), true))}`;
        })
        .join("<br>")}</code></dd>`
    : "";
  const names = Object.keys(v.headers).sort();
  const headers = names.length
    ? `<dt>Headers</dt><dd><code>${names.map((n) => `${text(n)}: ${text(v.headers[n] ?? "")}`).join("<br>")}</code></dd>`
    : "";
  return `<dl class="identity">
<dt>Method</dt><dd><code class="id">${text(v.method)}</code></dd>
<dt>Path</dt><dd>${path}</dd>
${query}
${headers}
</dl>
${bodyHtml(v.body)}`;
}

/**
 * A JSON text's formatted view when it is faithful to what the service will read; a warning when it is not; null
 * when the text is not JSON at all (then only the raw text is shown, with no claim about it).
 */
export function faithfulJson(source: string): { formatted: string } | { warning: string } | null {
  const p = new Parser(source);
  try {
    p.ws();
    p.value(0);
    p.ws();
    if (p.i !== source.length) return null;
  } catch (err) {
    if (err instanceof Unfaithful) return { warning: err.message };
    return null;
  }
  return { formatted: p.out.join("") };
}

/** Format and control characters (bidi overrides, zero-width, BOM, C0/C1 but tab and line breaks) made visible. */
export function visible(s: string): string {
  return s.replace(INVISIBLE, (c) => `⟨U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}⟩`);
}

// internal

const INVISIBLE = /[\p{Cf}\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u2028\u2029]/gu;

/** Escaped and made visible: how every piece of the request reaches the page. */
function text(s: string): string {
  return escapeHtml(visible(s));
}

function bodyHtml(b: RequestView["body"]): string {
  if (b === null) return `<h2>Body</h2><p class="hint">No body.</p>`;
  const type = b.contentType ? ` <span class="hint">(${text(b.contentType)})</span>` : "";
  const more = b.bytes > b.shown.byteLength ? `<p class="hint">Showing the first ${b.shown.byteLength} of ${b.bytes} bytes.</p>` : "";
  const raw = utf8(b.shown, b.bytes > b.shown.byteLength);
  if (raw === null) return `<h2>Body${type}</h2><p class="hint">${b.bytes} bytes of binary data, not shown.</p>`;
  const json = more ? null : faithfulJson(raw);
  const view =
    json === null
      ? ""
      : "warning" in json
        ? `<p class="status-bad" role="alert">${text(json.warning)}. Shown exactly as sent only.</p>`
        : `<h3>Formatted</h3>\n<pre>${text(json.formatted)}</pre>`;
  return `<h2>Body${type}</h2>
${view}
<h3>As sent</h3>
<pre>${text(raw)}</pre>
${more}`;
}

class Unfaithful extends Error {}
class NotJson extends Error {}

/**
 * A strict RFC 8259 reader that writes the formatted view from the source's own tokens (so what it shows is what was
 * sent) and stops at the first thing that would make a formatted view lie: a duplicate key, a number a JSON reader
 * may take for another, nesting past 32, a view past 64 KiB. Recursion is bounded by the depth limit.
 */
class Parser {
  i = 0;
  out: string[] = [];
  #chars = 0;
  constructor(readonly s: string) {}

  ws(): void {
    const s = this.s;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if (c === 32 || c === 9 || c === 10 || c === 13) this.i++;
      else break;
    }
  }

  emit(piece: string): void {
    this.#chars += piece.length;
    if (this.#chars > MAX_FORMATTED_CHARS) throw new Unfaithful(`formatted it would be over ${MAX_FORMATTED_CHARS / 1024} KiB`);
    this.out.push(piece);
  }

  value(depth: number): void {
    const c = this.s[this.i];
    if (c === "{" || c === "[") {
      if (depth >= MAX_FORMATTED_DEPTH) throw new Unfaithful(`nested deeper than ${MAX_FORMATTED_DEPTH} levels`);
      if (c === "{") this.object(depth + 1);
      else this.array(depth + 1);
    } else if (c === '"') this.emit(this.string().raw);
    else if (c === "t" || c === "f" || c === "n") this.literal();
    else this.number();
  }

  object(depth: number): void {
    this.i++;
    this.ws();
    if (this.s[this.i] === "}") {
      this.i++;
      this.emit("{}");
      return;
    }
    const keys = new Set<string>();
    const pad = "  ".repeat(depth);
    this.emit("{\n");
    for (;;) {
      this.ws();
      if (this.s[this.i] !== '"') throw new NotJson();
      const key = this.string();
      if (keys.has(key.value)) throw new Unfaithful(`duplicate key ${"`"}${key.value}${"`"}: the service may read either value`);
      keys.add(key.value);
      this.ws();
      if (this.s[this.i++] !== ":") throw new NotJson();
      this.ws();
      this.emit(`${pad}${key.raw}: `);
      this.value(depth);
      this.ws();
      const next = this.s[this.i++];
      if (next === ",") this.emit(",\n");
      else if (next === "}") break;
      else throw new NotJson();
    }
    this.emit(`\n${"  ".repeat(depth - 1)}}`);
  }

  array(depth: number): void {
    this.i++;
    this.ws();
    if (this.s[this.i] === "]") {
      this.i++;
      this.emit("[]");
      return;
    }
    const pad = "  ".repeat(depth);
    this.emit("[\n");
    for (;;) {
      this.ws();
      this.emit(pad);
      this.value(depth);
      this.ws();
      const next = this.s[this.i++];
      if (next === ",") this.emit(",\n");
      else if (next === "]") break;
      else throw new NotJson();
    }
    this.emit(`\n${"  ".repeat(depth - 1)}]`);
  }

  string(): { raw: string; value: string } {
    const start = this.i;
    STRING.lastIndex = start;
    const m = STRING.exec(this.s);
    if (!m) throw new NotJson();
    this.i = start + m[0].length;
    const raw = m[0];
    return { raw, value: raw.includes("\\") ? (JSON.parse(raw) as string) : raw.slice(1, -1) };
  }

  literal(): void {
    for (const word of ["true", "false", "null"]) {
      if (this.s.startsWith(word, this.i)) {
        this.i += word.length;
        this.emit(word);
        return;
      }
    }
    throw new NotJson();
  }

  number(): void {
    NUMBER.lastIndex = this.i;
    const m = NUMBER.exec(this.s);
    if (!m) throw new NotJson();
    const t = m[0];
    this.i += t.length;
    if (!exact(t)) throw new Unfaithful(`the number ${t} has no exact JSON reading: the service may read another value`);
    this.emit(t);
  }
}

/** A JSON string token: no raw control characters, valid escapes. */
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * Whether every JSON reader takes the number for the same value: integers that a double holds exactly (a reader
 * using doubles and one using big integers agree), and other numbers that are finite with at most 15 significant
 * digits (every double reader rounds them alike, and prints them back the same).
 */
function exact(t: string): boolean {
  if (/^-?\d+$/.test(t)) return t.length <= 15 || BigInt(Number(t)) === BigInt(t);
  const n = Number(t);
  if (!Number.isFinite(n)) return false;
  const digits = t.replace(/^-/, "").replace(/[eE].*$/, "").replace(".", "").replace(/^0+/, "").replace(/0+$/, "");
  return digits.length <= 15;
}

function utf8(bytes: Uint8Array, cut: boolean): string | null {
  try {
    // a body cut at 16 KiB may end inside a character: streaming leaves that one out instead of failing
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes, { stream: cut });
  } catch {
    return null;
  }
}

/** For reading only (the digest covers the bytes as sent): percent-decoded, `+` as a space in a query. */
function safeDecode(s: string, query = false): string {
  try {
    return decodeURIComponent(query ? s.replace(/\+/g, "%20") : s);
  } catch {
    return s;
  }
}
