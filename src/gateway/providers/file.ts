/**
 * The `--providers` file: JSON keyed by provider id, `${ENV_NAME}` taken from the environment in any string, an
 * entry's `template` filled in (DESIGN §11), every problem reported with its path at once
 * (`providers.github.token_endpoint: Invalid http(s) URL`).
 */
import { readFileSync } from "node:fs";
import { formatIssues, ProvidersFile, providersFileIssue, type ProviderConfig } from "../../protocol/index.ts";
import { locateJsonError } from "./json-syntax.ts";
import { policyProblems } from "../rules/conditions.ts";
import { applyTemplate, UnknownTemplateError } from "./templates/index.ts";
import { fileProblem } from "../../text/file-errors.ts";

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** Reads, interpolates and validates a providers file; throws ConfigError listing every problem. */
export function loadProvidersFile(path: string, env: Record<string, string | undefined> = process.env): Record<string, ProviderConfig> {
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
  // type errors in words, each at its path (issue 40); the schema's own messages stay
  const parsed = ProvidersFile.safeParse(fillTemplates(interpolated, missing), { error: providersFileIssue });
  // A field whose ${ENV} is unset is reported once, as such, not again as the empty string zod then sees.
  const missingPaths = new Set(missing.map((m) => m.slice(0, m.indexOf(":"))));
  const invalid = parsed.success ? [] : formatIssues(parsed.error, "providers").filter((m) => !missingPaths.has(m.slice(0, m.indexOf(":"))));
  // `when` conditions compile now, so a typo fails the start, naming the rule (DESIGN §16)
  const conditions = parsed.success ? Object.entries(parsed.data).flatMap(([id, c]) => policyProblems(c.policy, `providers.${id}.policy`)) : [];
  const problems = [...missing, ...invalid, ...conditions];
  if (problems.length > 0 || !parsed.success) {
    throw new ConfigError(`invalid providers file ${path}:\n  ${problems.join("\n  ")}`);
  }
  return parsed.data;
}

// internal

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
