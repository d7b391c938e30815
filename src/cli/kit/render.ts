/**
 * Output rules of every command: stdout is data, stderr is messages; `--format json` writes exactly one JSON
 * document; text mode colours (kleur) only on a TTY without NO_COLOR; piped text is tab-separated with ISO
 * times, and a table cell (often a server's text) cannot break its row or column or carry control characters.
 */
import { forTerminal, stringifyInert } from "../../text/sanitize.ts";
import type { Deps } from "./deps.ts";

export type Format = "text" | "json";

export interface Output {
  json: boolean;
  tty: boolean;
  color: boolean;
  /** Writes one JSON document to stdout (json mode). */
  doc(value: unknown): void;
  /** Writes a line of data to stdout. */
  line(s?: string): void;
  /** Writes rows: aligned columns on a TTY, tab-separated when piped. */
  table(rows: string[][]): void;
  /** A message for people on stderr (never in json mode's stdout). */
  info(s: string): void;
  /** A confirmation of a change: on a TTY only, since a piped successful change prints nothing (gh). */
  success(s: string): void;
  /** Formats a time: ISO when piped, ISO plus "in 59m" on a TTY. */
  time(iso: string, now: number): string;
  paint: Paint;
}

/** The kleur colours the commands use. */
export interface Paint {
  bold(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  red(s: string): string;
  dim(s: string): string;
}

/**
 * Colours off: no codes — but the same one-line sanitizing as the coloured paint, since what is painted is often a
 * gateway's string (issue 35: with NO_COLOR, a gateway_id holding `\r\n…` reached the terminal as a line of its own).
 */
const oneLineSafe = (s: string) => forTerminal(s, { multiline: false });
const PLAIN: Paint = { bold: oneLineSafe, green: oneLineSafe, yellow: oneLineSafe, red: oneLineSafe, dim: oneLineSafe };

/** The output of a command. kleur is loaded only when colours are on: importing it reads process.stdout, slow in Bun. */
export async function output(format: Format, deps: Deps): Promise<Output> {
  // JSON output is the same on a terminal or not: no need to ask (an fstat or two at every start).
  const tty = format === "json" ? false : deps.stdoutTTY;
  const color = tty && !deps.env.NO_COLOR && deps.env.TERM !== "dumb";
  let paint = PLAIN;
  if (color) {
    const kleur = (await import("kleur")).default;
    kleur.enabled = true;
    paint = ownColours(kleur);
  }
  return {
    json: format === "json",
    tty,
    color,
    doc: (value) => deps.stdout(`${stringifyInert(value, 2)}\n`),
    line: (s = "") => deps.stdout(`${s.split("\n").map((l) => cell(l, color)).join("\n")}\n`),
    table(rows) {
      rows = rows.map((r) => r.map((c) => cell(c, color)));
      if (!tty) {
        for (const r of rows) deps.stdout(`${r.join("\t")}\n`);
        return;
      }
      const widths: number[] = [];
      rows = rows.map((r) => r.map((c) => c.replaceAll("\t", "  ")));
      for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, visible(c).length)));
      for (const r of rows) {
        deps.stdout(`${r.map((c, i) => (i === r.length - 1 ? c : c + " ".repeat((widths[i] ?? 0) - visible(c).length))).join("  ")}\n`);
      }
    },
    info: (s) => deps.stderr(`${s.split("\n").map((l) => cell(l, color)).join("\n")}\n`),
    success: (s) => {
      if (tty && format === "text") deps.stdout(`${cell(`${paint.green("✓")} ${s}`, color)}\n`);
    },
    time(iso, now) {
      if (!tty) return iso;
      return `${iso} (${relative(Date.parse(iso) - now)})`;
    },
    paint,
  };
}

/** "in 59m", "3h ago", "expired". */
export function relative(ms: number): string {
  const past = ms < 0;
  const s = Math.round(Math.abs(ms) / 1000);
  const text = s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m` : s < 172_800 ? `${Math.floor(s / 3600)}h` : `${Math.floor(s / 86_400)}d`;
  return past ? `${text} ago` : `in ${text}`;
}

/** Removes ANSI escape sequences (citty colours its messages). */
export function stripAnsi(s: string): string {
  return s.replace(/\u001b\[[0-9;]*m/g, "");
}

// internal

function visible(s: string): string {
  return stripAnsi(s);
}

/**
 * Our own colours, marked: kleur's `ESC[…m` codes are written as `MARK[…m` (a private-use character and a nonce of this
 * process, which no gateway can guess), so that at output only they become colours again — every ESC that came with a
 * string from elsewhere is replaced (DESIGN §14: only the CLI's own colours survive).
 */
const MARK = `\ue000${crypto.randomUUID().slice(0, 8)}`;
const MARKED = new RegExp(`${MARK}\\[([0-9;]*)m`);

function ownColours(kleur: Paint): Paint {
  // the argument is sanitized first: only the codes kleur itself adds are marked
  const mark = (f: (s: string) => string) => (s: string) => f(forTerminal(s, { multiline: false })).replace(/\u001b\[([0-9;]*)m/g, `${MARK}[$1m`);
  return { bold: mark(kleur.bold), green: mark(kleur.green), yellow: mark(kleur.yellow), red: mark(kleur.red), dim: mark(kleur.dim) };
}

/**
 * A line or table cell made safe (protocol/sanitize.ts): line breaks become a space, other control and format
 * characters U+FFFD (tabs stay: some rows pack two columns in one cell). Our own marked colours become colour codes
 * again (when colours are on); nothing else of ESC survives.
 */
function cell(s: string, color: boolean): string {
  const parts = s.split(MARKED);
  return parts
    .map((p, i) => (i % 2 === 1 ? (color ? `\u001b[${p}m` : "") : forTerminal(p.replace(/[\n\v\f\r]/g, " "))))
    .join("");
}
