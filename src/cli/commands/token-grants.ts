/**
 * `ath token --actor | --delegate <client_id> | --import <file> | --assertion <jwt>` (DESIGN §23): delegation to a
 * sub-agent, one flag per step, and an enterprise IdP's ID-JAG traded for the person's token (agent/flows/delegate.ts). The actor token is printed alone in text mode, so `$(ath token --actor)` takes it;
 * the handoff — which holds the sub-agent's token — goes only where it is asked to: a file (0600, `--out`), or stdout
 * with `--show-secrets`. Without either nothing is sent: a delegated token printed masked would be lost.
 */
import { actorToken, assertionToken, delegate, importHandoff } from "../../agent/flows/delegate.ts";
import { reveal } from "../../agent/mask.ts";
import { context } from "../kit/common.ts";
import type { Deps } from "../kit/deps.ts";
import { usageError } from "../kit/errors.ts";
import type { GrantMode, TokenOptions } from "./token.ts";

export async function runGrant(opts: TokenOptions, mode: GrantMode, deps: Deps): Promise<void> {
  if (mode.kind === "import") return importMode(opts, mode.file, deps);
  if (mode.kind === "assertion") return assertionMode(opts, mode, deps);
  if (mode.kind === "actor") {
    const ctx = await context(opts, deps);
    const a = await actorToken(ctx.agent, ctx.target().base);
    if (ctx.out.json) return ctx.out.doc(a);
    ctx.out.line(a.actor_token);
    ctx.out.info(`actor token of ${a.client_id} (${a.agent_id}), single use, valid until ${a.expires_at}: give it with your client_id to the agent that delegates to you`);
    return;
  }
  if (mode.out === undefined && !opts.showSecrets) {
    throw usageError("--delegate prints the sub-agent's token: give --out <file> (written 0600) or --show-secrets (to stdout)");
  }
  const budget = mode.budget === undefined ? undefined : /^\d{1,10}$/.test(mode.budget) ? Number(mode.budget) : NaN;
  if (budget !== undefined && !(budget >= 0 && budget <= 1_000_000_000)) throw usageError(`--budget must be a count of calls from 0 to 1000000000, got "${mode.budget}"`);
  const raw = mode.actorToken === "-" ? (await deps.readStdin()).trim() : mode.actorToken;
  if (!raw) throw usageError("--delegate needs --actor-token: the sub-agent runs `ath token --actor` and gives you what it prints");
  const ctx = await context(opts, deps);
  // a file that cannot be written fails before the token is minted, not after (it could not be given again)
  if (mode.out !== undefined) await writePrivate(mode.out, "");
  const { handoff } = await delegate(ctx.agent, ctx.target().base, {
    clientId: mode.clientId,
    actorToken: raw,
    ...(opts.provider === undefined ? {} : { provider: opts.provider }),
    ...(mode.scopes === undefined ? {} : { scopes: mode.scopes }),
    ...(budget === undefined ? {} : { budget }),
  });
  if (mode.out !== undefined) await writePrivate(mode.out, `${JSON.stringify(handoff, null, 2)}\n`);
  else return ctx.out.doc(handoff); // --show-secrets: the handoff itself, for a pipe to `ath token --import -`
  const summary = { ...handoff, access_token: reveal(handoff.access_token, opts.showSecrets), out: mode.out };
  if (ctx.out.json) return ctx.out.doc(summary);
  ctx.out.success(`delegated ${handoff.provider_id} to ${handoff.client_id}: handoff written to ${mode.out}`);
  ctx.out.table([
    ["agent_id", handoff.agent_id],
    ["effective_scopes", handoff.effective_scopes.join(",")],
    ["budget", handoff.budget === null ? "(none)" : String(handoff.budget)],
    ["token_type", handoff.token_type],
    ["expires_at", ctx.out.time(handoff.expires_at, deps.now())],
    ["next", `the sub-agent runs: ath token --import ${mode.out}`],
  ]);
}

// internal

async function importMode(opts: TokenOptions, file: string, deps: Deps): Promise<void> {
  let text: string;
  try {
    text = file === "-" ? await deps.readStdin() : await Bun.file(file).text();
  } catch (e) {
    throw usageError(`cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw usageError(`${file === "-" ? "stdin" : file} is not valid JSON`);
  }
  const ctx = await context(opts, deps);
  const { saved, handoff } = await importHandoff(ctx.agent, doc);
  if (ctx.out.json) return ctx.out.doc({ ...saved, access_token: reveal(saved.access_token, opts.showSecrets), gateway: handoff.gateway, act: handoff.act, budget: handoff.budget });
  ctx.out.success(`delegated token for ${saved.provider_id} saved (from ${handoff.act.sub})`);
  ctx.out.table([
    ["provider", saved.provider_id],
    ["access_token", reveal(saved.access_token, opts.showSecrets)],
    ["token_type", saved.token_type],
    ["expires_at", ctx.out.time(saved.expires_at, deps.now())],
    ["effective_scopes", saved.effective_scopes.join(",")],
    ["budget", handoff.budget === null ? "(none)" : String(handoff.budget)],
  ]);
}

async function assertionMode(opts: TokenOptions, mode: Extract<GrantMode, { kind: "assertion" }>, deps: Deps): Promise<void> {
  if (opts.provider === undefined) throw usageError("--assertion needs --provider <id>: the provider the assertion's resource names");
  const assertion = mode.assertion === "-" ? (await deps.readStdin()).trim() : mode.assertion;
  const ctx = await context(opts, deps);
  const { response, saved } = await assertionToken(ctx.agent, ctx.target().base, { assertion, provider: opts.provider, ...(mode.scopes ? { scopes: mode.scopes } : {}) });
  if (ctx.out.json) return ctx.out.doc({ ...response, access_token: reveal(response.access_token, opts.showSecrets), expires_at: saved.expires_at });
  ctx.out.success(`token for ${response.provider_id} saved (from the enterprise's assertion)`);
  ctx.out.table([
    ["provider", response.provider_id],
    ["access_token", reveal(response.access_token, opts.showSecrets)],
    ["token_type", response.token_type],
    ["expires_at", ctx.out.time(saved.expires_at, deps.now())],
    ["effective_scopes", response.effective_scopes.join(",")],
  ]);
}

/** Writes `text` readable by its owner only (0600, also when the file existed). */
async function writePrivate(path: string, text: string): Promise<void> {
  const { chmod, open } = await import("node:fs/promises");
  let fh;
  try {
    fh = await open(path, "w", 0o600);
    await fh.writeFile(text, "utf8");
  } catch (e) {
    throw usageError(`cannot write ${path} (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  } finally {
    await fh?.close();
  }
  await chmod(path, 0o600);
}
