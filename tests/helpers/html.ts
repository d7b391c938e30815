/** Checks on rendered HTML: hostile strings must come out as inert, escaped text. */
import { expect } from "bun:test";
import { escapeHtml } from "../../src/gateway/pages/index.ts";

/** Strings that would run script if a page did not escape them. */
export const HOSTILE = [`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`, `' onmouseover='alert(1)`];

const OUR_TAGS = new Set(["!doctype", "html", "head", "meta", "title", "style", "body", "main", "p", "h1", "h2", "ul", "li", "span", "div", "dl", "dt", "dd", "form", "input", "button", "pre", "label", "b", "strong", "code", "time"]);

/** The payload appears only as escaped text: every tag in the page is one of ours and carries no event handler. */
export function expectInert(html: string, payload: string) {
  expect(html).not.toContain(payload);
  expect(html).toContain(escapeHtml(payload));
  for (const tag of html.match(/<[^>]*>/g) ?? []) {
    const name = /^<\/?([!a-z0-9]+)/i.exec(tag)?.[1]?.toLowerCase() ?? tag;
    expect(OUR_TAGS.has(name) ? "ours" : tag).toBe("ours");
    // attribute values cannot hold a raw quote (escaped), so blanking them leaves only real attribute names
    expect(tag.replace(/"[^"]*"/g, "\"\"")).not.toMatch(/\son[a-z]+\s*=/i);
  }
}
