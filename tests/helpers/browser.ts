/**
 * A small "browser" for the e2e tests: a cookie jar (RFC 6265 rules that matter on loopback: host, path,
 * expiry; cookies ignore the port, as in real browsers), manual redirect following, and HTML form submission
 * (form action/method, hidden inputs, the pressed button's name=value). Used to drive the gateway's consent page
 * and the upstream's login form over plain HTTP.
 */

export interface Cookie {
  name: string;
  value: string;
  host: string;
  path: string;
  expires?: number;
  httpOnly: boolean;
  sameSite?: string;
}

export interface Page {
  url: string;
  status: number;
  headers: Headers;
  body: string;
  /** Every URL visited on the way, including the first and the last. */
  history: string[];
}

export interface Form {
  action: string;
  method: string;
  fields: [string, string][];
  buttons: { name: string; value: string; label: string }[];
}

export interface NavigateOptions {
  method?: string;
  body?: string;
  contentType?: string;
  /** Stop before fetching a redirect target for which this returns true (e.g. the agent's redirect URI). */
  stopAt?: (url: URL) => boolean;
}

export class Browser {
  readonly cookies: Cookie[] = [];

  /** `fetch` is the network: the global one, or an in-process gateway's (tests/helpers/in-process.ts). */
  constructor(private readonly fetch: (req: Request) => Promise<Response> = (req) => globalThis.fetch(req)) {}

  /** Cookies the jar would send to `url`, as `name=value` pairs. */
  cookiesFor(url: string): Cookie[] {
    const u = new URL(url);
    const now = Date.now();
    return this.cookies.filter(
      (c) =>
        c.host === u.hostname &&
        (u.pathname === c.path || u.pathname.startsWith(c.path.endsWith("/") ? c.path : `${c.path}/`)) &&
        (c.expires === undefined || c.expires > now),
    );
  }

  /** Requests `url` and follows redirects like a browser (303 and POST-302 become GET). */
  async navigate(url: string, options: NavigateOptions = {}): Promise<Page> {
    let method = options.method ?? "GET";
    let body = options.body;
    let current = url;
    const history = [url];
    for (let hop = 0; hop < 20; hop++) {
      const headers = new Headers();
      const cookie = this.cookiesFor(current).map((c) => `${c.name}=${c.value}`).join("; ");
      if (cookie) headers.set("cookie", cookie);
      if (body !== undefined) headers.set("content-type", options.contentType ?? "application/x-www-form-urlencoded");
      const response = await this.fetch(new Request(current, { method, headers, body, redirect: "manual" }));
      this.store(current, response.headers.getSetCookie());
      const location = response.headers.get("location");
      if (response.status >= 300 && response.status < 400 && location !== null) {
        await response.body?.cancel();
        const next = new URL(location, current);
        history.push(next.href);
        if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
          method = "GET";
          body = undefined;
        }
        if (options.stopAt?.(next)) {
          return { url: next.href, status: response.status, headers: response.headers, body: "", history };
        }
        current = next.href;
        continue;
      }
      return { url: current, status: response.status, headers: response.headers, body: await response.text(), history };
    }
    throw new Error(`too many redirects starting at ${url}`);
  }

  /** Submits `form` (from `page`), pressing the button whose label or value is `button`, with field overrides. */
  submit(page: Page, form: Form, options: { button?: string; fields?: Record<string, string>; stopAt?: (url: URL) => boolean } = {}): Promise<Page> {
    const params = new URLSearchParams();
    const overrides = { ...options.fields };
    for (const [name, value] of form.fields) {
      if (Object.hasOwn(overrides, name)) continue;
      params.append(name, value);
    }
    for (const [name, value] of Object.entries(overrides)) params.append(name, value);
    if (options.button !== undefined) {
      const pressed = form.buttons.find((b) => b.label === options.button || b.value === options.button);
      if (pressed === undefined) throw new Error(`no button "${options.button}" in form ${form.action}`);
      if (pressed.name) params.append(pressed.name, pressed.value);
    }
    const action = new URL(form.action || page.url, page.url).href;
    if (form.method === "GET") {
      const target = new URL(action);
      target.search = params.toString();
      return this.navigate(target.href, { stopAt: options.stopAt });
    }
    return this.navigate(action, { method: "POST", body: params.toString(), stopAt: options.stopAt });
  }

  // internal

  private store(url: string, setCookies: string[]): void {
    const u = new URL(url);
    for (const header of setCookies) {
      const [pair = "", ...attrs] = header.split(";").map((s) => s.trim());
      const eq = pair.indexOf("=");
      if (eq <= 0) continue;
      const cookie: Cookie = {
        name: pair.slice(0, eq),
        value: pair.slice(eq + 1),
        host: u.hostname,
        path: defaultPath(u.pathname),
        httpOnly: false,
      };
      for (const attr of attrs) {
        const [key = "", val = ""] = attr.split("=", 2).map((s) => s.trim());
        const k = key.toLowerCase();
        if (k === "path" && val.startsWith("/")) cookie.path = val;
        else if (k === "max-age") cookie.expires = Date.now() + Number(val) * 1000;
        else if (k === "expires" && cookie.expires === undefined) cookie.expires = Date.parse(val);
        else if (k === "httponly") cookie.httpOnly = true;
        else if (k === "samesite") cookie.sameSite = val;
      }
      const i = this.cookies.findIndex((c) => c.name === cookie.name && c.host === cookie.host && c.path === cookie.path);
      if (i >= 0) this.cookies.splice(i, 1);
      this.cookies.push(cookie);
    }
  }
}

/** Every `<form>` of an HTML page with its inputs and buttons (regex parsing: enough for server-rendered pages). */
export function parseForms(html: string): Form[] {
  const forms: Form[] = [];
  for (const m of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const attrs = parseAttrs(m[1] ?? "");
    const inner = m[2] ?? "";
    const fields: [string, string][] = [];
    for (const input of inner.matchAll(/<input\b([^>]*)>/gi)) {
      const a = parseAttrs(input[1] ?? "");
      const type = (a.type ?? "text").toLowerCase();
      if (a.name === undefined || type === "submit" || type === "button") continue;
      if ((type === "checkbox" || type === "radio") && !("checked" in a)) continue;
      fields.push([a.name, a.value ?? ""]);
    }
    const buttons: Form["buttons"] = [];
    for (const b of inner.matchAll(/<button\b([^>]*)>([\s\S]*?)<\/button>/gi)) {
      const a = parseAttrs(b[1] ?? "");
      buttons.push({ name: a.name ?? "", value: a.value ?? "", label: decodeEntities((b[2] ?? "").replace(/<[^>]*>/g, "").trim()) });
    }
    forms.push({ action: attrs.action ?? "", method: (attrs.method ?? "GET").toUpperCase(), fields, buttons });
  }
  return forms;
}

/** The one form of `page` that has a button labelled `label`. */
export function formWithButton(page: Page, label: string): Form {
  const form = parseForms(page.body).find((f) => f.buttons.some((b) => b.label === label));
  if (form === undefined) throw new Error(`no form with a "${label}" button at ${page.url} (status ${page.status})`);
  return form;
}

export function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_, e: string) => {
    const k = e.toLowerCase();
    if (k.startsWith("#x")) return String.fromCodePoint(Number.parseInt(k.slice(2), 16));
    if (k.startsWith("#")) return String.fromCodePoint(Number.parseInt(k.slice(1), 10));
    return ({ amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" } as Record<string, string>)[k] ?? _;
  });
}

// internal

function parseAttrs(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of s.matchAll(/([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?/g)) {
    const name = (m[1] ?? "").toLowerCase();
    out[name] = decodeEntities(m[2] ?? m[3] ?? m[4] ?? "");
  }
  return out;
}

function defaultPath(pathname: string): string {
  const i = pathname.lastIndexOf("/");
  return i <= 0 ? "/" : pathname.slice(0, i);
}
