/**
 * The README is a front page and docs/ the reference: the README stays under 12 KB, names no document outside the
 * repository and reaches every docs page in one click; no page cites the design notes; every relative link of the
 * README and docs/ names a file that exists and, with a #fragment, a heading of that file.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

const REPO = resolve(import.meta.dir, "../../..");
const read = (path: string) => readFileSync(join(REPO, path), "utf8");
const pages = readdirSync(join(REPO, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`);
/** Pages written on other branches at the same time: linked by these names, checked once they exist. */
const ARRIVING = ["policy", "agent-lifecycle", "guarantees-hardening", "audit", "mcp-front-door"].map((n) => `docs/${n}.md`);

/** GitHub's heading anchors: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  for (const m of markdown.replace(/```[\s\S]*?```/g, "").matchAll(/^#{1,6} (.+)$/gm)) {
    out.add(m[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-"));
  }
  return out;
}

/** Markdown links outside code: [text](target). */
function links(markdown: string): string[] {
  return [...markdown.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "").matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

describe("README and docs/", () => {
  test("the README is a front page: ≤ 12 KB, a Quick start, no document outside the repository, every docs page one click away", () => {
    const readme = read("README.md");
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(12 * 1024);
    expect(readme).toContain("\n## Quick start\n");
    expect(links(readme).filter((l) => /^[a-z]+:/i.test(l))).toEqual([]);
    const linked = new Set(links(readme).map((l) => l.split("#")[0]));
    expect(pages.length).toBeGreaterThanOrEqual(5);
    expect(pages.filter((p) => !linked.has(p))).toEqual([]);
    for (const p of ARRIVING) expect(linked.has(p)).toBe(true);
  });

  test("the README's Performance is one paragraph pointing at docs/performance.md: the current ratio of the build that page measured, no report (no budget, no history)", () => {
    const readme = read("README.md");
    const start = readme.indexOf("\n## Performance\n");
    expect(start).toBeGreaterThan(-1);
    const section = readme.slice(start + 16, readme.indexOf("\n## ", start + 16)).trim();
    expect(section.split("\n\n")).toHaveLength(1);
    expect(links(section)).toContain("docs/performance.md");
    expect(section).not.toMatch(/budget|not met|UTC/);
    // one line's worth of figures: the proxy's ratio to the bare hop, GET and POST on each store at most
    expect((section.match(/\d\.\d+×/g) ?? []).length).toBeLessThanOrEqual(4);
    // …of the build docs/performance.md states its figures for, and no other
    const builds = (text: string) => [...new Set([...text.matchAll(/\b[Bb]uild ([0-9a-f]{7,40})\b/g)].map((m) => m[1]!.slice(0, 7)))];
    const page = builds(read("docs/performance.md"));
    expect(page).toHaveLength(1);
    expect(builds(section)).toEqual(page);
  });

  test("no page cites the design notes", () => {
    for (const file of ["README.md", ...pages]) expect({ file, cites: /\bDESIGN\b/.test(read(file)) }).toEqual({ file, cites: false });
  });

  test("every relative link names an existing file, and a #fragment one of its headings", () => {
    const broken: string[] = [];
    for (const file of ["README.md", ...pages]) {
      for (const link of links(read(file))) {
        if (/^[a-z]+:/i.test(link)) continue;
        const [path = "", fragment] = link.split("#");
        const target = path === "" ? file : join(dirname(file), path);
        if (!existsSync(join(REPO, target))) {
          if (!ARRIVING.includes(target)) broken.push(`${file}: ${link}`);
          continue;
        }
        if (fragment !== undefined && target.endsWith(".md") && !anchors(read(target)).has(fragment)) broken.push(`${file}: ${link} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});
