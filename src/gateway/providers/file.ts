/**
 * The `--providers` file: JSON keyed by provider id (and `trusted_issuers`, DESIGN §23), `${ENV_NAME}` taken from the environment in any string, an
 * entry's `template` filled in (DESIGN §11), every problem reported with its path at once
 * (`providers.github.token_endpoint: Invalid http(s) URL`).
 */
import { readFileSync } from "node:fs";
import { formatIssues, ProvidersFile, providersFileIssue, TrustedIssuers, type ProviderConfig, type TrustedIssuer } from "../../protocol/index.ts";
import { locateJsonError } from "./json-syntax.ts";
import { policyProblems } from "../rules/conditions.ts";
import { applyTemplate, UnknownTemplateError } from "./templates/index.ts";
import { fileProblem } from "../../text/file-errors.ts";
import { groupProblems, McpGroups, prefixClashes, expandPrefix, DEFAULT_PREFIX } from "../../protocol/mcp-groups.ts";

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** Reads, interpolates and validates a providers file; throws ConfigError listing every problem. */
export function loadProvidersFile(path: string, env: Record<string, string | undefined> = process.env): Record<string, ProviderConfig> {
  return loadGatewayFile(path, env).providers;
}

/**
 * The providers file with its `trusted_issuers` (DESIGN §23): the one key that is not a provider id — an array of
 * issuer entries, validated with the providers, every problem reported at once.
 */
export function loadGatewayFile(
  path: string,
  env: Record<string, string | undefined> = process.env,
): { providers: Record<string, ProviderConfig>; trustedIssuers: TrustedIssuer[]; mcpGroups: McpGroups } {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError(`cannot read providers file ${path}: ${fileProblem(e)}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    const at = locateJsonError(text);
    const where = at ? `line ${at.line}, column ${at.column}: ${at.message}` : (e as Error).message;
    throw new ConfigError(`providers file ${path} is not valid JSON: ${where}`);
  }
  const wrapped = wrapperOf(raw);
  if (wrapped !== undefined) throw new ConfigError(`invalid providers file ${path}:\n  ${wrapped}`);
  const missing: string[] = [];
  const interpolated = interpolateEnv(raw, env, [], missing);
  const { issuers, groups, rest } = splitIssuers(interpolated);
  // type errors in words, each at its path (issue 40); the schema's own messages stay
  const parsed = ProvidersFile.safeParse(fillTemplates(rest, missing), { error: providersFileIssue });
  // A field whose ${ENV} is unset is reported once, as such, not again as the empty string zod then sees.
  const missingPaths = new Set(missing.map((m) => m.slice(0, m.indexOf(":"))));
  const invalid = parsed.success ? [] : formatIssues(parsed.error, "providers").filter((m) => !missingPaths.has(m.slice(0, m.indexOf(":"))));
  // `when` conditions compile now, so a typo fails the start, naming the rule (DESIGN §16)
  const conditions = parsed.success ? Object.entries(parsed.data).flatMap(([id, c]) => policyProblems(c.policy, `providers.${id}.policy`)) : [];
  const trusted = TrustedIssuers.safeParse(issuers);
  const issuerProblems = [...(trusted.success ? [] : formatIssues(trusted.error, "trusted_issuers")), ...duplicateIssuers(issuers)];
  // DESIGN §22: groups name MCP providers of this file; names that could collide are refused here, naming both
  const grouped = McpGroups.safeParse(groups, { error: providersFileIssue });
  const groupIssues = grouped.success ? (parsed.success ? federationProblems(grouped.data, parsed.data) : []) : formatIssues(grouped.error, "mcp_groups");
  const problems = [...missing, ...invalid, ...conditions, ...issuerProblems, ...groupIssues];
  if (problems.length > 0 || !parsed.success || !trusted.success || !grouped.success) {
    throw new ConfigError(`invalid providers file ${path}:\n  ${problems.join("\n  ")}`);
  }
  return { providers: parsed.data, trustedIssuers: trusted.data, mcpGroups: grouped.data };
}

// internal

/** The file's `trusted_issuers` and `mcp_groups` (default none) apart from its provider entries. */
function splitIssuers(file: unknown): { issuers: unknown; groups: unknown; rest: unknown } {
  if (file === null || typeof file !== "object" || Array.isArray(file)) return { issuers: [], groups: {}, rest: file };
  const { trusted_issuers: issuers = [], mcp_groups: groups = {}, ...rest } = file as Record<string, unknown>;
  return { issuers, groups, rest };
}

/** The groups' problems, and the plain `/mcp`'s: every MCP provider of the file under the default prefix. */
function federationProblems(groups: McpGroups, providers: Record<string, ProviderConfig>): string[] {
  const mcp = Object.keys(providers).filter((id) => providers[id]!.mcp);
  const plain = prefixClashes(mcp.map((id) => ({ id, prefix: expandPrefix(DEFAULT_PREFIX, id) }))).map((c) => `mcp (every MCP provider at {base_url}/mcp): ${c}`);
  return [...groupProblems(groups, mcp, Object.keys(providers)), ...plain];
}

/** Each issuer listed again (read from the raw entries: reported with the entries' other problems, all at once). */
function duplicateIssuers(issuers: unknown): string[] {
  if (!Array.isArray(issuers)) return [];
  const seen = new Set<string>();
  return issuers.flatMap((t: unknown, i) => {
    const issuer = (t as { issuer?: unknown } | null)?.issuer;
    if (typeof issuer !== "string") return [];
    if (seen.has(issuer)) return [`trusted_issuers.${i}.issuer: ${issuer} is listed twice`];
    seen.add(issuer);
    return [];
  });
}

/**
 * `{"providers": {"github": {…}}}` — the file wrapped in a key of its own name, as the admin API's list answers —
 * is said as one problem, not as every field missing from a provider called "providers".
 */
function wrapperOf(raw: unknown): string | undefined {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw) || Object.keys(raw).length !== 1) return undefined;
  const inner = (raw as Record<string, unknown>).providers;
  if (inner === null || typeof inner !== "object" || Array.isArray(inner)) return undefined;
  const ids = Object.keys(inner);
  const entries = Object.values(inner);
  if (ids.length === 0 || !entries.every((e) => e !== null && typeof e === "object" && !Array.isArray(e))) return undefined;
  const named = ids.slice(0, 3).map((id) => `"${id}"`).join(", ") + (ids.length > 3 ? ", …" : "");
  return `providers.providers: the file is keyed by provider id: put ${named} at the top level, without "providers"`;
}

/**
 * Each entry with its template filled in. An unknown template is reported under the entry's `template` and the entry
 * left out of validation, so the one mistake is not also reported as every field the template would have filled.
 */
function fillTemplates(file: unknown, problems: string[]): unknown {
  if (file === null || typeof file !== "object" || Array.isArray(file)) return file;
  const out: Record<string, unknown> = {};
  for (const [id, entry] of Object.entries(file)) {
    if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
      out[id] = entry;
      continue;
    }
    try {
      out[id] = applyTemplate(entry as Record<string, unknown>);
    } catch (e) {
      if (!(e instanceof UnknownTemplateError)) throw e;
      problems.push(`providers.${id}.${e.field}: ${e.message}`);
    }
  }
  return out;
}

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

function interpolateEnv(value: unknown, env: Record<string, string | undefined>, path: string[], missing: string[]): unknown {
  if (typeof value === "string") {
    return value.replace(ENV_REF, (_, name: string) => {
      const v = env[name];
      if (v === undefined || v === "") {
        missing.push(`providers.${path.join(".")}: environment variable ${name} is not set (or empty)`);
        return "";
      }
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolateEnv(v, env, [...path, String(i)], missing));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, interpolateEnv(v, env, [...path, k], missing)]),
    );
  }
  return value;
}
