/**
 * THE sanitizer for strings from elsewhere (DESIGN §14 "Strings from elsewhere are data"): whatever a gateway, a
 * provider or a registrant wrote — names, purposes, URLs, messages, bodies — passes here before it reaches a terminal,
 * an MCP host or a page. C0/C1 controls (ESC and every sequence it starts: title changes, `ESC]52` clipboard writes,
 * screen clears), DEL, the line/paragraph separators and Unicode format characters (Cf: bidi overrides U+202A–U+202E
 * and U+2066–U+2069, zero-width U+200B–U+200F, U+FEFF, tag characters…) are replaced:
 * - `forTerminal`: by U+FFFD (tab and line feed kept where the text is multi-line, else they too become a space);
 * - `forPage`: by a visible `⟨U+202E⟩` (CR kept: only whitespace in HTML; HTML escaping is the page's own, after this);
 * - `jsonInert`: in JSON text, by their `\uXXXX` escape — the value is unchanged, what reaches a terminal is inert.
 * URLs from a gateway are used only when DESIGN §14's link rule allows them (`checkLink`): https to any origin —
 * another one named first —, http only to the gateway's own origin or a loopback host; a refused one is named by its
 * origin alone.
 */

/** Every character that must not reach a terminal raw, tab and line feed excepted. */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\p{Cf}]/gu;
/** The same, in JSON text (JSON.stringify already escapes C0; a C0 character here is an escape's own text). */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u2028\u2029\p{Cf}]/gu;

/** `s` for a terminal or an MCP host: unsafe characters → U+FFFD; `multiline: false` also folds tab/line feed to a space. */
export function forTerminal(s: string, o: { multiline?: boolean } = {}): string {
  const out = s.replace(UNSAFE, "\ufffd");
  return o.multiline === false ? out.replace(/[\t\n]/g, " ") : out;
}

/** What a page shows visibly: as UNSAFE, but a carriage return is only whitespace in HTML (CRLF bodies stay readable). */
const UNSAFE_ON_PAGE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u2028\u2029\p{Cf}]/gu;

/** `s` for a page, before HTML escaping: unsafe characters made visible as `⟨U+202E⟩` (tab, CR and LF kept). */
export function forPage(s: string): string {
  return s.replace(UNSAFE_ON_PAGE, (c) => `⟨U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}⟩`);
}

/** JSON text with every unsafe character written as its `\uXXXX` escape (surrogate pairs for astral ones). */
export function jsonInert(json: string): string {
  return json.replace(UNSAFE_IN_JSON, escapeUnit);
}

/** `JSON.stringify`, inert (see `jsonInert`). */
export function stringifyInert(value: unknown, space?: number): string {
  return jsonInert(JSON.stringify(value, null, space));
}

/** A URL's origin as named in a refusal: `scheme://host:port`, or only the scheme when it has no host. */
export function originOf(url: string): string {
  try {
    const u = new URL(url);
    return u.host === "" ? forTerminal(u.protocol, { multiline: false }) : forTerminal(`${u.protocol}//${u.host}`, { multiline: false });
  } catch {
    return "(not a URL)";
  }
}

/** What a link from a gateway may be used as: its URL and, when it leaves the gateway's origin, the host it opens. */
export type LinkVerdict = { ok: true; href: string; elsewhere: string | null } | { ok: false; why: string };

/**
 * DESIGN §14's rule for a URL a gateway hands the client to open, print as a link or elicit: `https` to any origin
 * (the protocol lets `authorization_url` point at the provider; `elsewhere` is then the host to name first), `http`
 * only to the gateway's own origin or a loopback host; never userinfo, control or format characters, or another
 * scheme.
 * @example checkLink("https://accounts.example.com/o/authorize?…", "http://127.0.0.1:8787") // ok, elsewhere "accounts.example.com"
 */
export function checkLink(url: string, gateway: string): LinkVerdict {
  // before parsing: the URL parser silently drops tabs and line breaks, and would hide them
  if (/[\u0000-\u0020\u007f-\u009f\u2028\u2029\p{Cf}]/u.test(url)) return { ok: false, why: "it holds control, space or format characters" };
  let u: URL;
  let g: URL;
  try {
    u = new URL(url);
    g = new URL(gateway);
  } catch {
    return { ok: false, why: "it is not a URL" };
  }
  if (u.username !== "" || u.password !== "") return { ok: false, why: "it carries a user name or password" };
  const own = u.origin === g.origin;
  if (u.protocol === "http:" && !own && !isLoopbackHost(u.hostname)) return { ok: false, why: "it is plain http to another host (only https may leave the gateway's origin)" };
  if (u.protocol !== "https:" && u.protocol !== "http:") return { ok: false, why: `${forTerminal(u.protocol, { multiline: false })} links are never opened (only https, or http to the gateway or this computer)` };
  return { ok: true, href: u.href, elsewhere: own ? null : forTerminal(u.host, { multiline: false }) };
}

/** A loopback host: `localhost`, 127.0.0.0/8, ::1 (the person's own computer). */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h.endsWith(".localhost") || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

// internal

function escapeUnit(c: string): string {
  let out = "";
  for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`;
  return out;
}
