/**
 * `ath config init|show|set|set-gateway|use|unset`: the agent's config.json (named gateways, default gateway,
 * agent_id, key_path, developer). Every change is a locked, atomic update.
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { ensurePrivateDir } from "../../agent/files.ts";
import { updateConfig, type ConfigFile } from "../../agent/home.ts";
import { normalizeBaseUrl } from "../../agent/target.ts";
import { commonOptions, context, type CommonOptions } from "../kit/common.ts";
import { usageError } from "../kit/errors.ts";
import { commonArgs, defineCommand } from "../kit/flags.ts";
import { getDeps, type Deps } from "../kit/deps.ts";
import type { Output } from "../kit/render.ts";
import { fileProblem } from "../../text/file-errors.ts";

/** Settable keys (kebab-case on the command line) → config.json fields. */
const SETTINGS = {
  "agent-id": "agent_id",
  "key-path": "key_path",
  "default-gateway": "default_gateway",
  "developer-name": "developer_name",
  "developer-id": "developer_id",
} as const satisfies Record<string, Exclude<keyof ConfigFile, "gateways">>;
type Setting = keyof typeof SETTINGS;

/** `config init`: creates the home directory, the key and config.json; `-g <url>` saves it as the default gateway. */
export async function init(opts: CommonOptions, deps: Deps): Promise<void> {
  // Every value is checked before anything is written: a key that does not load is never saved as key_path.
  const gateway = opts.gateway === undefined ? undefined : checkUrl(opts.gateway);
  const agentId = opts.agentId === undefined ? undefined : checkAgentId(opts.agentId);
  const keyPath = opts.key === undefined ? undefined : await checkKey(opts.key, "--key");
  const ctx = await context(opts, deps);
  await ensurePrivateDir(ctx.agent.home.dir);
  const config = await updateConfig(ctx.agent.home, (c) => {
    if (agentId !== undefined) c.agent_id = agentId;
    if (keyPath !== undefined) c.key_path = keyPath;
    if (gateway !== undefined) {
      c.gateways.default = gateway;
      c.default_gateway = "default";
    }
  });
  const { loadIdentity } = await import("../../agent/identity.ts");
  const id = await loadIdentity({}, config, ctx.agent.home);
  const result = { home: ctx.agent.home.dir, agent_id: id.agentId, key_path: id.keyPath, key_created: id.created, thumbprint: id.key.thumbprint, default_gateway: config.default_gateway ?? null };
  if (ctx.out.json) return ctx.out.doc(result);
  ctx.out.table(Object.entries(result).map(([k, v]) => [k, String(v)]));
}

export async function show(opts: CommonOptions, deps: Deps): Promise<void> {
  const ctx = await context(opts, deps);
  if (ctx.out.json) return ctx.out.doc(ctx.agent.config);
  const { gateways, ...rest } = ctx.agent.config;
  ctx.out.table([
    ...Object.entries(rest).map(([k, v]) => [k.replace(/_/g, "-"), String(v)]),
    ...Object.entries(gateways).map(([name, url]) => [`gateway.${name}`, url]),
  ]);
}

export async function set(opts: CommonOptions, name: string, value: string, deps: Deps): Promise<void> {
  const setting = settingOf(name);
  let v = value;
  if (setting === "agent-id") v = checkAgentId(value);
  if (setting === "key-path") v = await checkKey(value);
  const ctx = await context(opts, deps);
  await updateConfig(ctx.agent.home, (c) => {
    if (setting === "default-gateway" && c.gateways[v] === undefined) v = checkUrl(v);
    c[SETTINGS[setting]] = v;
  });
  done(ctx.out, { [SETTINGS[setting]]: v }, `${setting} set to ${v}`);
}

export async function setGateway(opts: CommonOptions, name: string, url: string, deps: Deps): Promise<void> {
  if (!/^[A-Za-z0-9][\w.-]*$/.test(name)) throw usageError(`gateway name "${name}" must be letters, digits, ".", "_" or "-"`);
  const base = checkUrl(url);
  const ctx = await context(opts, deps);
  const c = await updateConfig(ctx.agent.home, (c) => {
    c.gateways[name] = base;
    c.default_gateway ??= name;
  });
  done(ctx.out, { name, url: base, default_gateway: c.default_gateway ?? null }, `gateway ${name} = ${base}${c.default_gateway === name ? " (default)" : ""}`);
}

export async function use(opts: CommonOptions, name: string, deps: Deps): Promise<void> {
  const ctx = await context(opts, deps);
  await updateConfig(ctx.agent.home, (c) => {
    if (c.gateways[name] === undefined) throw usageError(`no gateway named "${name}": add it with \`ath config set-gateway ${name} <url>\``);
    c.default_gateway = name;
  });
  done(ctx.out, { default_gateway: name }, `default gateway is now ${name}`);
}

export async function unset(opts: CommonOptions, setting: string, name: string | undefined, deps: Deps): Promise<void> {
  const ctx = await context(opts, deps);
  if (setting === "gateway") {
    if (name === undefined) throw usageError("usage: ath config unset gateway <name>");
    await updateConfig(ctx.agent.home, (c) => {
      delete c.gateways[name];
      if (c.default_gateway === name) delete c.default_gateway;
    });
    return done(ctx.out, { removed: `gateway.${name}` }, `gateway ${name} removed`);
  }
  const known = settingOf(setting);
  await updateConfig(ctx.agent.home, (c) => void delete c[SETTINGS[known]]);
  done(ctx.out, { removed: known }, `${known} unset`);
}

// internal

function settingOf(name: string): Setting {
  const k = name.replace(/_/g, "-") === "gateway" ? "default-gateway" : name.replace(/_/g, "-");
  if (!Object.hasOwn(SETTINGS, k)) throw usageError(`unknown setting "${name}": one of ${Object.keys(SETTINGS).join(", ")}`);
  return k as Setting;
}

function checkUrl(url: string): string {
  const base = normalizeBaseUrl(url);
  if (base === undefined) throw usageError(`"${url}" is not an http(s) URL`);
  return base;
}

function checkAgentId(id: string): string {
  if (!URL.canParse(id)) throw usageError(`agent id must be a URI (https://… or did:key:…), got "${id}"`);
  return id;
}

/** The absolute path of a key file that loads; else a usage error naming it (`what` is the flag or setting). */
async function checkKey(path: string, what = "key-path"): Promise<string> {
  const abs = resolve(path);
  const { loadKey } = await import("../../agent/keys.ts");
  let pem: string;
  try {
    pem = await readFile(abs, "utf8");
  } catch (e) {
    throw usageError(`${what} ${abs} cannot be read: ${fileProblem(e)}`);
  }
  try {
    await loadKey(pem);
  } catch (e) {
    throw usageError(`${what} ${abs} cannot be used (${(e as Error).message.replace(/^agent key: /, "")})`);
  }
  return abs;
}

/** json mode: the change as a document; text: a confirmation on a TTY, nothing when piped. */
function done(out: Output, json: unknown, text: string): void {
  if (out.json) out.doc(json);
  else out.success(text);
}

const str = (v: unknown) => (typeof v === "string" ? v : "");

export default defineCommand({
  meta: { name: "config", description: "Manage configuration (init, show, set, set-gateway, use, unset)" },
  subCommands: {
    init: defineCommand({
      meta: { name: "init", description: "Create the home directory, the agent key and config.json" },
      args: { ...commonArgs },
      run: ({ args, data }) => init(commonOptions(data), getDeps()),
    }),
    show: defineCommand({
      meta: { name: "show", description: "Print config.json" },
      args: { ...commonArgs },
      run: ({ args, data }) => show(commonOptions(data), getDeps()),
    }),
    set: defineCommand({
      meta: { name: "set", description: `Set a setting: ${Object.keys(SETTINGS).join(", ")}` },
      // The positional is `setting`, not `key`: a positional named `key` would shadow the global --key flag.
      args: { ...commonArgs, setting: { type: "positional", required: true }, value: { type: "positional", required: true } },
      run: ({ args, data }) => set(commonOptions(data), str(args.setting), str(args.value), getDeps()),
    }),
    "set-gateway": defineCommand({
      meta: { name: "set-gateway", description: "Save a named gateway (the first one becomes the default)" },
      args: { ...commonArgs, name: { type: "positional", required: true }, url: { type: "positional", required: true } },
      run: ({ args, data }) => setGateway(commonOptions(data), str(args.name), str(args.url), getDeps()),
    }),
    use: defineCommand({
      meta: { name: "use", description: "Make a saved gateway the default" },
      args: { ...commonArgs, name: { type: "positional", required: true } },
      run: ({ args, data }) => use(commonOptions(data), str(args.name), getDeps()),
    }),
    unset: defineCommand({
      meta: { name: "unset", description: "Remove a setting, or `unset gateway <name>`" },
      args: { ...commonArgs, setting: { type: "positional", required: true }, name: { type: "positional", required: false } },
      run: ({ args, data }) => unset(commonOptions(data), str(args.setting), typeof args.name === "string" ? args.name : undefined, getDeps()),
    }),
  },
});
