/**
 * The command line's flags: the global ones every command shares (`commonArgs`, the one definition of
 * `-g/-m/-s/--agent-id/--key/--format`), and the one reader of argv behind every question asked of it — strict
 * checking on top of citty (which accepts unknown flags silently), the global flags allowed before the command
 * words, the last `--format`, every value of a repeatable flag. Violations are usage errors (exit 2).
 */
import type { ArgDef, ArgsDef, CommandDef } from "citty";
import { closest } from "../../text/suggest.ts";
import { usageError } from "./errors.ts";

/**
 * Declares a command (citty's CommandDef shape). Not citty's defineCommand: importing citty loads node:util for its
 * argument parser — 6 ms of every start — and `parseArgs` below reads argv with this file's own scanner instead.
 */
export function defineCommand<A extends ArgsDef = ArgsDef>(def: CommandDef<A>): CommandDef<A> {
  return def;
}

/** A command's lazily given part (`args`, `subCommands`, `meta`: a value, a promise or a function of one), resolved. */
export async function resolve<T>(v: T | Promise<T> | (() => T | Promise<T>) | undefined): Promise<T | undefined> {
  return typeof v === "function" ? await (v as () => T | Promise<T>)() : await v;
}

/**
 * The parsed arguments of a command, as citty would give them to `run`: each flag by its name (and its camelCase and
 * kebab-case twins) — the last value given, a boolean's `--no-` form false, the default when absent, undefined when
 * absent without one — and each positional from the words, in order. An enum value outside its options and a
 * missing required positional are usage errors. Call `checkFlags` first: unknown flags are its to refuse.
 */
export function parseArgs(argv: readonly string[], args: ArgsDef): Record<string, unknown> {
  return parseScanned(scan(argv, args), args);
}

function parseScanned({ flags, words }: { flags: Flag[]; words: string[] }, args: ArgsDef): Record<string, unknown> {
  const out: Record<string, unknown> = { _: words };
  const positional = [...words];
  for (const [name, def] of Object.entries(args)) {
    let value: unknown;
    if (def.type === "positional") {
      value = positional.shift();
      if (value === undefined && def.default === undefined && (def as { required?: boolean }).required !== false) {
        throw usageError(`Missing required positional argument: ${name.toUpperCase()}`);
      }
    } else {
      for (const f of flags) {
        if (f.name !== name) continue;
        value = def.type === "boolean" ? (f.negated ? false : f.value === undefined ? true : f.value === "true") : f.value;
      }
      if (def.type === "enum" && value !== undefined) {
        const options = ((def as { options?: string[] }).options ?? []) as string[];
        if (options.length > 0 && !options.includes(value as string)) {
          throw usageError(`Invalid value for argument: --${name} (${String(value)}). Expected one of: ${options.join(", ")}.`);
        }
      }
    }
    value ??= def.default;
    for (const key of new Set([name, camel(name), kebab(name)])) out[key] = value;
  }
  return out;
}

/**
 * One command's command line, read once: the parsed flags and positionals (`args`, as citty would give them), the
 * output format, and every value of a repeatable flag. The root builds it for the leaf command after checking the
 * flags strictly, and hands it to the command's `run` as `data`.
 */
export interface Invocation {
  /** The command as typed, `ath admin agents list`. */
  command: string;
  argv: readonly string[];
  args: Record<string, unknown>;
  format: "text" | "json";
  /** Every value of a repeatable flag (`--provider a --provider=b -p c`), in order. */
  values(name: string): string[];
}

/** Reads `argv` for a command with `args`: `-g=x` expanded, unknown flags refused (exit 2), then parsed. */
export function invoke(argv: readonly string[], args: ArgsDef, command: string): Invocation {
  const expanded = expandShortInline(argv, args);
  const scanned = scan(expanded, args);
  checkScanned(scanned, args, command);
  const parsed = parseScanned(scanned, args);
  return {
    command,
    argv: expanded,
    args: parsed,
    format: parsed.format === "json" ? "json" : "text",
    values: (name) => scanned.flags.filter((f) => f.name === name && f.value !== undefined).map((f) => f.value as string),
  };
}

/** The invocation the root handed a command's `run` (its `data`). */
export function invocation(data: unknown): Invocation {
  const inv = data as Invocation | undefined;
  if (inv === undefined || typeof inv.values !== "function") throw new Error("a command ran without its invocation (run it through cli/root.ts)");
  return inv;
}

/** The global flags (DESIGN.md §5): spread into every command's `args`, since citty passes a subcommand only the words after its name. */
export const commonArgs = {
  gateway: { type: "string", alias: "g", description: "Gateway URL or saved name", valueHint: "url|name" },
  mode: { type: "enum", alias: "m", options: ["gateway", "native"], default: "gateway", description: "Deployment mode" },
  service: { type: "string", alias: "s", description: "Service URL (native mode)", valueHint: "url" },
  "agent-id": { type: "string", description: "Override the agent identity (a URI)", valueHint: "uri" },
  key: { type: "string", description: "Path to an ES256 PEM private key", valueHint: "path" },
  format: { type: "enum", options: ["text", "json"], default: "text", description: "Output format" },
} as const satisfies ArgsDef;

/** `--show-secrets`, for commands that print client secrets or tokens. */
export const showSecretsArg = {
  "show-secrets": { type: "boolean", description: "Print secrets unmasked", default: false },
} as const satisfies ArgsDef;

/** The output format the last `--format` asks for (the one citty applies too), so errors and output agree. */
export function formatOf(argv: readonly string[]): "text" | "json" {
  return lastValue(argv, commonArgs, "format") === "json" ? "json" : "text";
}

/** True when `argv` is `--version` / `-v` alone, or with `--format <f>` (`ath --version --format json`). */
export function isVersion(argv: readonly string[]): boolean {
  const { flags, words } = scan(argv, VERSION_ARGS);
  const others = flags.filter((f) => f.name !== "format");
  return words.length === 0 && others.length === 1 && others[0]?.name === "version" && others[0].value === undefined && !others[0].negated;
}

/** Every value of a repeatable flag (`--provider a --provider=b -p c`): citty keeps only the last. */
export function allValues(argv: readonly string[], args: ArgsDef, name: string): string[] {
  return scan(argv, args)
    .flags.filter((f) => f.name === name && f.value !== undefined)
    .map((f) => f.value as string);
}

/** Throws a usage error for the first flag or word `argv` has that `args` does not define. */
export function checkFlags(argv: readonly string[], args: ArgsDef, command: string): void {
  checkScanned(scan(argv, args), args, command);
}

function checkScanned({ flags, words }: { flags: Flag[]; words: string[] }, args: ArgsDef, command: string): void {
  for (const f of flags) {
    if (!f.long && f.key.length !== 1) throw usageError(`unknown flag ${f.raw} for \`${command}\` (short flags take one letter)`);
    if (f.name === undefined) {
      const names = Object.entries(args).filter(([, d]) => d.type !== "positional").map(([n]) => n);
      const known = THEIR_NAMES[f.key];
      const guess = known !== undefined && names.includes(known) ? known : f.long ? closest(f.key, names) : undefined;
      const hint = guess === undefined ? "" : ` (did you mean --${guess}?)`;
      throw usageError(`unknown flag ${f.long ? "--" : "-"}${f.key} for \`${command}\`${hint}: see \`${command} --help\``);
    }
    checkValue(f, `--${f.name}`);
  }
  const positionals = Object.values(args).filter((d) => d.type === "positional").length;
  if (words.length > positionals) throw usageError(`too many arguments for \`${command}\`: see \`${command} --help\``);
}

/**
 * What other tools call our flags (curl's `-d`/`--data`, httpie's `--json`, `gh api --input`): too far from `--body`
 * by spelling for "did you mean" to find, and what people type first (issue 40).
 */
const THEIR_NAMES: Record<string, string> = { d: "body", data: "body", "data-raw": "body", "data-binary": "body", json: "body", input: "body" };

/**
 * Splits `argv` at its first word that is not a flag (the command word): the global flags before it (with
 * their values, `-h`/`--help` included) and the rest from the command word on. Any other flag before the
 * command word is a usage error.
 */
export function leadingFlags(argv: readonly string[], command: string): { flags: string[]; rest: string[] } {
  let i = 0;
  while (i < argv.length && isFlag(argv[i] as string) && argv[i] !== "--") {
    const f = readFlag(argv, i, LEADING_ARGS);
    if (f.name === undefined || f.long !== (f.key.length > 1)) {
      throw usageError(`unknown flag ${f.raw} before the command: only the global flags (${GLOBAL_NAMES}) may come before it; see \`${command} --help\``);
    }
    checkValue(f, f.raw);
    i = f.end;
  }
  return { flags: argv.slice(0, i), rest: argv.slice(i) };
}

/** `--help` / `-h` before `--`. */
export function hasHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  return (end < 0 ? argv : argv.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

/**
 * `-g=local` → `--gateway=local` for every short flag `args` defines: citty (node's parseArgs) would read the
 * value of `-g=local` as "=local". Words after `--` and unknown short flags are left for `checkFlags`.
 */
export function expandShortInline(argv: readonly string[], args: ArgsDef): string[] {
  const longOf = new Map<string, string>();
  for (const [name, def] of Object.entries(args)) for (const a of aliases(def)) if (a.length === 1) longOf.set(a, name);
  const end = argv.indexOf("--");
  return argv.map((a, i) => {
    const m = /^-([A-Za-z])=/.exec(a);
    const long = m === null || (end >= 0 && i > end) ? undefined : longOf.get(m[1] as string);
    return long === undefined ? a : `--${long}=${a.slice(3)}`;
  });
}

// internal

/** The last value of a flag, as citty reads it. */
function lastValue(argv: readonly string[], args: ArgsDef, name: string): string | undefined {
  return allValues(argv, args, name).at(-1);
}

const HELP_ARGS = { help: { type: "boolean", alias: "h" } } as const satisfies ArgsDef;
const VERSION_ARGS = { format: commonArgs.format, version: { type: "boolean", alias: "v" } } as const satisfies ArgsDef;
const LEADING_ARGS = { ...commonArgs, ...HELP_ARGS } as const satisfies ArgsDef;
/** "-g, -m, -s, --agent-id, --key, --format": the names of commonArgs as a person types them. */
const GLOBAL_NAMES = Object.entries(commonArgs)
  .map(([name, def]) => ("alias" in def ? `-${def.alias}` : `--${name}`))
  .join(", ");

/** A flag as read from argv: `name` is the definition it stands for (undefined: none), `end` the index after it. */
interface Flag {
  raw: string;
  /** The flag as typed, without dashes or `=value`. */
  key: string;
  long: boolean;
  /** `--no-flag` of a boolean. */
  negated: boolean;
  name?: string;
  type?: string;
  value?: string;
  /** `--flag=value`: the value came inline. */
  inline: boolean;
  /** A string flag had no value to take. */
  missing: boolean;
  end: number;
}

/** Reads all of argv: its flags, and its words (positionals, and everything after `--`). */
function scan(argv: readonly string[], args: ArgsDef): { flags: Flag[]; words: string[] } {
  const flags: Flag[] = [];
  const words: string[] = [];
  for (let i = 0; i < argv.length; ) {
    const a = argv[i] as string;
    if (a === "--") {
      words.push(...argv.slice(i + 1));
      break;
    }
    if (!isFlag(a)) {
      words.push(a);
      i++;
      continue;
    }
    const f = readFlag(argv, i, args);
    flags.push(f);
    i = f.end;
  }
  return { flags, words };
}

/** A word that is a flag: not `-`, not a negative number. */
function isFlag(a: string): boolean {
  return a.startsWith("-") && a !== "-" && !/^-\d/.test(a);
}

/**
 * The flag at `argv[i]`: its definition by name, kebab-case or camelCase twin, alias, or `--no-` negation of a
 * boolean; a string flag takes its value inline or from the next word, unless that word is itself a flag.
 */
function readFlag(argv: readonly string[], i: number, args: ArgsDef): Flag {
  const raw = argv[i] as string;
  const long = raw.startsWith("--");
  const [key = "", inline] = splitOnce(raw.slice(long ? 2 : 1), "=");
  const direct = lookup(args, key);
  const found = direct ?? (long && key.startsWith("no-") ? lookup(args, key.slice(3), "boolean") : undefined);
  const f: Flag = { raw, key, long, negated: direct === undefined && found !== undefined, inline: inline !== undefined, missing: false, end: i + 1 };
  if (found === undefined) return f;
  f.name = found.name;
  f.type = found.def.type ?? "string";
  if (f.type === "boolean" || inline !== undefined) {
    if (inline !== undefined) f.value = inline;
    return f;
  }
  const next = argv[i + 1];
  if (next === undefined || isFlag(next)) f.missing = true;
  else {
    f.value = next;
    f.end = i + 2;
  }
  return f;
}

/** A boolean takes no value (but `=true`/`=false`); a string flag needs one. `shown` names the flag in the message. */
function checkValue(f: Flag, shown: string): void {
  if (f.type === "boolean") {
    if (f.inline && f.value !== "true" && f.value !== "false") throw usageError(`--${f.name} takes no value`);
  } else if (f.missing) {
    throw usageError(`${shown} needs a value`);
  }
}

function lookup(args: ArgsDef, key: string, type?: string): { name: string; def: ArgDef } | undefined {
  for (const [name, def] of Object.entries(args)) {
    if (def.type === "positional" || (type !== undefined && def.type !== type)) continue;
    if ([name, kebab(name), camel(name), ...aliases(def)].includes(key)) return { name, def };
  }
  return undefined;
}

function aliases(def: ArgDef): string[] {
  const v = (def as { alias?: string | string[] }).alias;
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
