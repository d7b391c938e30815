/**
 * The README's "## Quick start" (and any docs page's journey section, `readJourney`) as data, so the journey test runs what a newcomer reads: the command lines of the
 * section's ```sh blocks and the `$ ` lines of its ```console blocks (with what they print), in order, the buttons the
 * prose tells them to click (**bold** words), and the port `ath serve` listens on (an explicit --port, else the
 * default documented in docs/serve.md's configuration table). Also the shell blocks of any docs page.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";

export interface QuickStart {
  /** Every command line of the section's ```sh and ```console blocks, in order, verbatim (without `$ `). */
  commands: string[];
  /** What the README shows each command printing (```console blocks), by index in `commands`. */
  printed: string[];
  /** Words in **bold** in the section's prose after the last block, in order (the buttons to press). */
  buttons: string[];
  /** The port the serve command listens on for a reader following the README. */
  servePort: number;
}

export async function readQuickStart(repo: string): Promise<QuickStart> {
  const readme = await readFile(join(repo, "README.md"), "utf8");
  const section = sectionOf(readme, "Quick start");
  const { commands, printed } = shellLines(section);
  const afterLast = section.slice(section.lastIndexOf("```") + 3);
  const buttons = [...afterLast.matchAll(/\*\*([^*]+)\*\*/g)].map((m) => m[1] ?? "");
  const serve = commands.find((c) => / serve\b/.test(c));
  if (serve === undefined) throw new Error("README quick start has no `ath serve` command");
  const explicit = /--port[ =](\d+)/.exec(serve)?.[1];
  const reference = await readFile(join(repo, "docs/serve.md"), "utf8");
  const documented = /^\| `--port` \|[^|]*\| `(\d+)` \|/m.exec(reference)?.[1];
  const port = explicit ?? documented;
  if (port === undefined) throw new Error("docs/serve.md documents no default port for `ath serve`");
  return { commands, printed, buttons, servePort: Number(port) };
}

/** A journey section of any page (`## title`), as the quick start is read: its commands, what they print, the buttons. */
export async function readJourney(repo: string, file: string, title: string): Promise<Omit<QuickStart, "servePort"> & { prose: string }> {
  const section = sectionOf(await readFile(join(repo, file), "utf8"), title);
  const { commands, printed } = shellLines(section);
  const prose = section.slice(section.lastIndexOf("```") + 3);
  return { commands, printed, buttons: [...prose.matchAll(/\*\*([^*]+)\*\*/g)].map((m) => m[1] ?? ""), prose };
}

/**
 * Lines as comparable text: the gateway's ids and secrets (`ath_…`), did:key identities, the sandbox's note ids, and runs of letters, digits
 * and `_-:.` that hold a digit or end in `…` (masked secrets, times, ports) become `#`; whitespace runs become one
 * space; lines that are only `#`, punctuation or empty go.
 */
export function shape(text: string): string[] {
  return text
    .replace(/\x1b\[[0-9;]*[A-Za-z]/g, "\n")
    .split(/\r?\n|\r/)
    .map((l) =>
      l
        .replace(/\b(ath_|did:key:)[\w:.\/?&=%+…-]*/g, "#")
        // the sandbox's note ids (`n_` + 8 random base64url characters, a digit or not)
        .replace(/\bn_[A-Za-z0-9_-]{8}(?![\w-])/g, "#")
        .replace(/[\w:.\/?&=%+-]*(\d[\w:.\/?&=%+-]*|…)/g, "#")
        .replace(/\s+/g, " ")
        .trim(),
    )
    .filter((l) => /[a-z]{3}/i.test(l.replace(/#/g, "")));
}

/** The command lines of ```sh blocks (comment lines skipped) and the `$ ` lines of ```console blocks, with the
 * lines a console block shows after each command. */
export function shellLines(markdown: string): { commands: string[]; printed: string[] } {
  const commands: string[] = [];
  const printed: string[] = [];
  for (const m of markdown.matchAll(/```(sh|console)\n([\s\S]*?)```/g)) {
    for (const line of (m[2] ?? "").split("\n")) {
      if (m[1] === "sh") {
        const l = line.trim();
        if (l !== "" && !l.startsWith("#")) commands.push(l), printed.push("");
      } else if (line.startsWith("$ ")) {
        commands.push(line.slice(2).trim()), printed.push("");
      } else if (commands.length > 0 && line !== "") {
        printed[printed.length - 1] += `${line}\n`;
      }
    }
  }
  return { commands, printed };
}

/** The text of the `## title` section, up to the next `## ` heading. */
export function sectionOf(markdown: string, title: string): string {
  const start = markdown.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`no "## ${title}" section`);
  const rest = markdown.slice(start + title.length + 5);
  const end = rest.search(/\n## /);
  return end < 0 ? rest : rest.slice(0, end);
}
