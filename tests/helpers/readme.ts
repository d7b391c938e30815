/**
 * The README's "## Quick start" as data, so the journey test runs what a newcomer reads: the fenced ```sh command
 * lines in order, the buttons the prose tells them to click (**bold** words), and the port `ath serve` listens on
 * (an explicit --port, else the default documented in the README's configuration table).
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";

export interface QuickStart {
  /** Every command line of the section's ```sh blocks, in order, verbatim. */
  commands: string[];
  /** Words in **bold** in the section's prose after the last block, in order (the buttons to press). */
  buttons: string[];
  /** The port the serve command listens on for a reader following the README. */
  servePort: number;
}

export async function readQuickStart(repo: string): Promise<QuickStart> {
  const readme = await readFile(join(repo, "README.md"), "utf8");
  const section = sectionOf(readme, "Quick start");
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
  const commands = blocks.flatMap((b) => b.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#")));
  const afterLast = section.slice(section.lastIndexOf("```") + 3);
  const buttons = [...afterLast.matchAll(/\*\*([^*]+)\*\*/g)].map((m) => m[1] ?? "");
  const serve = commands.find((c) => / serve\b/.test(c));
  if (serve === undefined) throw new Error("README quick start has no `ath serve` command");
  const explicit = /--port[ =](\d+)/.exec(serve)?.[1];
  const documented = /^\| `--port` \|[^|]*\| `(\d+)` \|/m.exec(readme)?.[1];
  const port = explicit ?? documented;
  if (port === undefined) throw new Error("README documents no default port for `ath serve`");
  return { commands, buttons, servePort: Number(port) };
}

/** The text of the `## title` section, up to the next `## ` heading. */
export function sectionOf(markdown: string, title: string): string {
  const start = markdown.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`README has no "## ${title}" section`);
  const rest = markdown.slice(start + title.length + 5);
  const end = rest.search(/\n## /);
  return end < 0 ? rest : rest.slice(0, end);
}
