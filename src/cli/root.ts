/**
 * The root command `ath`: subcommands load lazily; this file resolves the command, checks flags strictly, runs it
 * with citty's `runCommand`, and maps every failure to an exit code in one place (DESIGN.md §5): 0 ok, 1 failure /
 * upstream ≥ 400, 2 usage, 3 not configured, 4 the gateway refused, 5 network. src/main.ts is the entry point.
 */
import { forTerminal, stringifyInert } from "../text/sanitize.ts";
import type { ArgsDef, CommandDef } from "citty";
import pkg from "../../package.json" with { type: "json" };
import { getDeps } from "./kit/deps.ts";
import { oneLine, usageError } from "./kit/errors.ts";
import { didYouMean } from "../text/suggest.ts";
import { commonArgs, defineCommand, formatOf, hasHelp, invoke, leadingFlags, resolve, type Invocation } from "./kit/flags.ts";
import { stripAnsi } from "./kit/render.ts";

export const root = defineCommand({
  meta: { name: "ath", version: pkg.version, description: "Agent authorization gateway and CLI (ATH protocol v0.1)" },
  subCommands: {
    discover: () => import("./commands/discover.ts").then((m) => m.default),
    register: () => import("./commands/register.ts").then((m) => m.default),
    authorize: () => import("./commands/authorize.ts").then((m) => m.default),
    token: () => import("./commands/token.ts").then((m) => m.default),
    proxy: () => import("./commands/proxy.ts").then((m) => m.default),
    revoke: () => import("./commands/revoke.ts").then((m) => m.default),
    status: () => import("./commands/status.ts").then((m) => m.default),
    config: () => import("./commands/config.ts").then((m) => m.default),
    identity: () => import("./commands/identity.ts").then((m) => m.default),
    serve: () => import("./commands/serve.ts").then((m) => m.default),
    templates: () => import("./commands/templates.ts").then((m) => m.default),
    admin: () => import("./commands/admin.ts").then((m) => m.default),
    mcp: () => mcpCommand,
    completion: () => import("./completion.ts").then((m) => m.default),
  },
});

/**
 * `ath mcp`: the agent's tools as a Model Context Protocol server on stdio (src/mcp/, DESIGN §12) — the other front
 * end over the same flows, so the root loads it itself, lazily: no command file, and neither the MCP SDK nor the
 * server load for any other command.
 */
const { format: _format, ...targetArgs } = commonArgs;
const mcpCommand = defineCommand({
  meta: { name: "mcp", description: "Serve the agent commands as MCP tools on stdio (for Claude Code, Cursor, VS Code…)" },
  args: targetArgs,
  async run({ data }) {
    const { commonOptions } = await import("./kit/common.ts");
    const o = commonOptions(data);
    if (o.mode === "native" && o.service === undefined) throw usageError("--mode native needs --service <url>");
    const { serveMcp } = await import("../mcp/server.ts");
    await serveMcp({
      target: { mode: o.mode, ...(o.gateway === undefined ? {} : { gateway: o.gateway }), ...(o.service === undefined ? {} : { service: o.service }) },
      ...(o.agentId === undefined ? {} : { agentId: o.agentId }),
      ...(o.key === undefined ? {} : { key: o.key }),
      stderr: getDeps().stderr,
    });
    // stdin may still be open (SIGTERM): the protocol is over, so is the process.
    process.exit(0);
  },
});

const EXIT = { ok: 0, failure: 1, usage: 2, config: 3, refused: 4, network: 5 } as const;

/** Runs `ath` with `argv` (without the executable) and returns the exit code. */
export async function run(argv: string[], cmd: CommandDef = root): Promise<number> {
  const deps = getDeps();
  // argv is read once for the leaf (its invocation); before that, only the words that lead to it
  let inv: Invocation | undefined;
  let rest = argv;
  try {
    // `ath help proxy` is `ath proxy --help`; bare `ath` shows the usage (as gh does)
    if (argv.length === 0 || argv[0] === "help") argv = [...argv.slice(1), "--help"];
    const resolved = await resolveCommand(cmd, argv);
    const { leaf, path, parents } = resolved;
    rest = resolved.rest;
    if (hasHelp(rest)) {
      const json = formatOf(rest) === "json";
      const help = await helpText(leaf, path, parents);
      deps.stdout(json ? `${JSON.stringify(await helpDocument(leaf, path, stripAnsi(help)))}\n` : `${help}\n`);
      return EXIT.ok;
    }
    const leafArgs = ((await resolve(leaf.args)) ?? {}) as ArgsDef;
    // citty's runCommand would parse argv again, with node:util (6 ms of every start): the invocation is read once
    // here, and the command gets it as `data`.
    inv = invoke(rest, leafArgs, path.join(" "));
    await leaf.run?.({ rawArgs: [...inv.argv], args: inv.args as never, cmd: leaf, data: inv });
    return EXIT.ok;
  } catch (e) {
    // the invocation's format; a mistake found before it was read (an unknown command or flag) reads --format itself
    const json = (inv?.format ?? formatOf(rest)) === "json";
    const { exit, error, reported } = classify(e);
    if (json) {
      if (!reported) deps.stdout(`${stringifyInert({ error })}\n`);
    } else {
      const lines = (e as { multiline?: boolean }).multiline ? error.message.split("\n") : [error.message];
      deps.stderr(`ath: ${lines.map((l) => forTerminal(oneLine(l))).join("\n  ")}\n`);
    }
    return exit;
  }
}

// internal

type Failure = { exit: number; reported: boolean; error: { code: string; message: string; status?: number; details?: unknown } };

function classify(e: unknown): Failure {
  const err = e as { name?: string; kind?: keyof typeof EXIT; code?: unknown; message?: string; status?: number; details?: unknown; reported?: boolean };
  const message = stripAnsi(err?.message ?? String(e));
  const extra = { ...(err?.status === undefined ? {} : { status: err.status }), ...(err?.details === undefined ? {} : { details: err.details }) };
  if (err?.name === "ClientError" && err.kind !== undefined) {
    return { exit: EXIT[err.kind], reported: err.reported === true, error: { code: String(err.code), message, ...extra } };
  }
  // citty's CLIError (unknown command, missing positional, bad enum value) is not exported; its name is stable.
  if (err?.name === "CLIError") return { exit: EXIT.usage, reported: false, error: { code: "USAGE", message } };
  if (err?.name === "AthError") return { exit: EXIT.refused, reported: false, error: { code: String(err.code), message, ...extra } };
  return { exit: EXIT.failure, reported: false, error: { code: "ERROR", message } };
}

/**
 * Walks the command words down to the leaf command. Global flags may come before a command word (`ath -g local
 * discover`): they are passed on to the leaf ahead of its own words, so a flag given after the command wins.
 */
async function resolveCommand(cmd: CommandDef, argv: string[]) {
  let leaf = cmd;
  let rest = argv;
  const path = ["ath"];
  const parents: CommandDef[] = [];
  const globals: string[] = [];
  for (;;) {
    const subs = await resolve(leaf.subCommands);
    if (subs === undefined || Object.keys(subs).length === 0) break;
    // a command that runs on its own and also has subcommands (`ath identity`, `ath identity new`): the subcommand
    // word must come first
    if (leaf.run !== undefined && (rest[0] === undefined || !Object.hasOwn(subs, rest[0]))) break;
    const lead = leadingFlags(rest, path.join(" "));
    globals.push(...lead.flags);
    rest = lead.rest;
    const name = rest[0];
    if (name === undefined) {
      if (hasHelp(globals)) break;
      throw usageError(`missing command: one of ${Object.keys(subs).join(", ")} (see \`${path.join(" ")} --help\`)`);
    }
    const sub = Object.hasOwn(subs, name) ? subs[name] : undefined;
    if (sub === undefined) {
      const names = Object.keys(subs);
      throw usageError(`unknown command "${name}" for \`${path.join(" ")}\`${didYouMean(name, names)}; one of ${names.join(", ")}`);
    }
    parents.push(leaf);
    leaf = (await resolve(sub)) as CommandDef;
    rest = rest.slice(1);
    path.push(name);
  }
  return { leaf, path, rest: [...globals, ...rest], parents };
}

async function helpText(leaf: CommandDef, path: string[], parents: CommandDef[]): Promise<string> {
  const parentName = path.slice(0, -1).join(" ");
  const parent = parents.length > 0 ? { meta: { name: parentName, version: pkg.version } } : undefined;
  const { renderUsage } = await import("citty");
  // The global flags are described once, in their own section, not repeated among each command's own (as gh does).
  const args = ((await resolve(leaf.args)) ?? {}) as ArgsDef;
  // (the same definition object, not the same name: serve's own --mode is another flag)
  const isGlobal = (name: string) => (commonArgs as ArgsDef)[name] !== undefined && args[name] === (commonArgs as ArgsDef)[name];
  const own = Object.fromEntries(Object.entries(args).filter(([name]) => !isGlobal(name)));
  const usageText = (await renderUsage({ ...leaf, args: own }, parent as CommandDef | undefined)) + inheritedSection(Object.keys(args).filter(isGlobal));
  const { EXAMPLES } = await import("./examples.ts");
  const examples = EXAMPLES[path.slice(1).join(" ") || "ath"] ?? [];
  const text = examples.length === 0 ? usageText : `${usageText}\n\nEXAMPLES\n\n${examples.map((e) => `  ${e}`).join("\n")}\n`;
  return getDeps().stdoutTTY ? text : stripAnsi(text);
}

/**
 * `--help --format json`: the help text, and for programs the flags, the subcommands, the exit codes and the JSON
 * Schema of what the command prints (and of the error document).
 */
async function helpDocument(leaf: CommandDef, path: string[], help: string): Promise<Record<string, unknown>> {
  const args = ((await resolve(leaf.args)) ?? {}) as ArgsDef;
  const subs = (await resolve(leaf.subCommands)) ?? {};
  const flags = Object.entries(args)
    .filter(([, def]) => def.type !== "positional")
    .map(([name, def]) => {
      const alias = (def as { alias?: string | string[] }).alias;
      return {
        name: `--${name}`,
        ...(alias === undefined ? {} : { aliases: (Array.isArray(alias) ? alias : [alias]).map((a) => (a.length === 1 ? `-${a}` : `--${a}`)) }),
        type: def.type,
        ...((def as { options?: string[] }).options ? { options: (def as { options: string[] }).options } : {}),
        ...(def.default === undefined ? {} : { default: def.default }),
        description: def.description ?? "",
        global: (commonArgs as ArgsDef)[name] === def,
      };
    });
  const positionals = Object.entries(args)
    .filter(([, def]) => def.type === "positional")
    .map(([name, def]) => ({ name, required: (def as { required?: boolean }).required !== false, description: def.description ?? "" }));
  const { OUTPUT_SCHEMAS, ERROR_SCHEMA, jsonSchema } = await import("./kit/output-schemas.ts");
  const output = OUTPUT_SCHEMAS[path.slice(1).join(" ")];
  return {
    command: path.join(" "),
    help,
    positionals,
    flags,
    subcommands: Object.keys(subs),
    exit_codes: { 0: "ok", 1: "failure (an upstream answer >= 400)", 2: "usage", 3: "not configured (no gateway, registration or token)", 4: "refused by the gateway", 5: "network (unreachable, timeout)" },
    ...(output ? { output_schema: jsonSchema(output) } : {}),
    error_schema: jsonSchema(ERROR_SCHEMA),
  };
}

/** The global flags, described once (gh's "inherited flags"): each command shows those it takes. */
const INHERITED: Record<string, string> = {
  gateway: "  -g, --gateway <url|name>   Gateway URL or a name saved with `ath config set-gateway`",
  mode: "  -m, --mode gateway|native  Talk to a gateway, or straight to one native ATH service (default: gateway)",
  service: "  -s, --service <url>        The native service's base URL (with -m native)",
  "agent-id": "  --agent-id <uri>           Act as this agent identity",
  key: "  --key <path>               ES256 (P-256) private key, PEM",
  format: "  --format text|json         Output format (json: one document on stdout; errors too) (default: text)",
};

const EXIT_CODES = `

EXIT CODES

  0 ok, 1 failure (an upstream answer >= 400), 2 usage, 3 not configured (no gateway, registration or token),
  4 refused by the gateway, 5 network (unreachable, timeout)`;

function inheritedSection(names: string[]): string {
  const lines = names.filter((n) => Object.hasOwn(INHERITED, n)).map((n) => INHERITED[n]!);
  return lines.length === 0 ? "" : `\n\nINHERITED FLAGS\n\n${[...lines, "  -h, --help                 This help"].join("\n")}${EXIT_CODES}`;
}


