/**
 * Strict flag checking on top of citty, which accepts unknown flags silently: every `--flag` / `-f` must be
 * defined by the command (or an alias, camelCase/kebab-case twin or `--no-` negation of a boolean), string
 * flags need a value, and extra positional words are refused. Violations are usage errors (exit 2). Also: the
 * global flags allowed before the command words, and `-f=value` rewritten to the `--flag=value` citty parses.
 */
import type { ArgsDef } from "citty";
import { usageError } from "../agent/errors.ts";

/** Throws a usage error for the first flag or word `argv` has that `args` does not define. */
export function checkFlags(argv: readonly string[], args: ArgsDef, command: string): void {
  const byName = new Map<string, { type: string; name: string }>();
  let positionals = 0;
  for (const [name, def] of Object.entries(args)) {
    if (def.type === "positional") {
      positionals++;
      continue;
    }
    const entry = { type: def.type ?? "string", name };
    for (const n of [name, kebab(name), camel(name), ...toArray((def as { alias?: string | string[] }).alias)]) byName.set(n, entry);
  }
  let words = 0;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--") {
      words += argv.length - i - 1;
      break;
    }
    if (!a.startsWith("-") || a === "-" || /^-\d/.test(a)) {
      words++;
      continue;
    }
    const long = a.startsWith("--");
    const [flag = "", inline] = splitOnce(a.slice(long ? 2 : 1), "=");
    if (!long && flag.length !== 1) throw usageError(`unknown flag ${a} for \`${command}\` (short flags take one letter)`);
    let def = byName.get(flag);
    if (def === undefined && long && flag.startsWith("no-")) {
      const positive = byName.get(flag.slice(3));
      if (positive?.type === "boolean") def = positive;
    }
    if (def === undefined) throw usageError(`unknown flag ${long ? "--" : "-"}${flag} for \`${command}\`: see \`${command} --help\``);
    if (def.type === "boolean") {
      if (inline !== undefined && inline !== "true" && inline !== "false") throw usageError(`--${def.name} takes no value`);
      continue;
    }
    if (inline !== undefined) continue;
    const next = argv[i + 1];
    if (next === undefined || (next.startsWith("-") && next.length > 1 && !/^-\d/.test(next))) {
      throw usageError(`--${def.name} needs a value`);
    }
    i++;
  }
  if (words > positionals) throw usageError(`too many arguments for \`${command}\`: see \`${command} --help\``);
}

/** The global flags (DESIGN.md §5) that may also come before the command words; each takes a value. */
const GLOBAL_FLAGS = new Set(["g", "gateway", "m", "mode", "s", "service", "agent-id", "key", "format"]);

/**
 * Splits `argv` at its first word that is not a flag (the command word): the global flags before it (with
 * their values, `-h`/`--help` included) and the rest from the command word on. Any other flag before the
 * command word is a usage error.
 */
export function leadingFlags(argv: readonly string[], command: string): { flags: string[]; rest: string[] } {
  const flags: string[] = [];
  let i = 0;
  for (; i < argv.length; i++) {
    const a = argv[i] as string;
    if (!a.startsWith("-") || a === "-") break;
    if (a === "--help" || a === "-h") {
      flags.push(a);
      continue;
    }
    const long = a.startsWith("--");
    const [flag = "", inline] = splitOnce(a.slice(long ? 2 : 1), "=");
    if (!GLOBAL_FLAGS.has(flag) || long !== (flag.length > 1)) {
      throw usageError(`unknown flag ${a} before the command: only the global flags (-g, -m, -s, --agent-id, --key, --format) may come before it; see \`${command} --help\``);
    }
    flags.push(a);
    if (inline !== undefined) continue;
    const value = argv[i + 1];
    if (value === undefined || (value.startsWith("-") && value.length > 1)) throw usageError(`${a} needs a value`);
    flags.push(value);
    i++;
  }
  return { flags, rest: argv.slice(i) };
}

/**
 * `-g=local` → `--gateway=local` for every short flag `args` defines: citty (node's parseArgs) would read the
 * value of `-g=local` as "=local". Words after `--` and unknown short flags are left for `checkFlags`.
 */
export function expandShortInline(argv: readonly string[], args: ArgsDef): string[] {
  const longOf = new Map<string, string>();
  for (const [name, def] of Object.entries(args)) {
    for (const a of toArray((def as { alias?: string | string[] }).alias)) if (a.length === 1) longOf.set(a, name);
  }
  const end = argv.indexOf("--");
  return argv.map((a, i) => {
    const m = /^-([A-Za-z])=/.exec(a);
    const long = m === null || (end >= 0 && i > end) ? undefined : longOf.get(m[1] as string);
    return long === undefined ? a : `--${long}=${a.slice(3)}`;
  });
}

// internal

function toArray(v: string | string[] | undefined): string[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

function splitOnce(s: string, sep: string): [string, string | undefined] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, undefined] : [s.slice(0, i), s.slice(i + 1)];
}

function kebab(s: string): string {
  return s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function camel(s: string): string {
  return s.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}
