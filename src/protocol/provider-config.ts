/**
 * The provider configuration entry (spec §2.1 plus DESIGN.md §3 and §11 optional fields): the `--providers` file
 * and the body of POST /ath/admin/providers. The §11 fields say how a real provider departs from RFC 6749; each is
 * optional and its default is what a spec-perfect provider needs, so an entry without them behaves as before.
 */
import { z } from "zod";
import { LIMITS } from "./constants.ts";
import { httpUrl } from "./schemas.ts";
import { didYouMean } from "../text/suggest.ts";

/**
 * A `scope_rules` entry: "METHOD /path/glob", bounded in length and in `**` segments (DESIGN §14). Written decoded
 * (DESIGN §16): a space is a space, and a `%` is refused — the request's path is matched after one decoding, so a
 * rule holding `%20` would never match anything.
 */
const scopeRule = z
  .string()
  .max(LIMITS.scopeRuleMaxChars, `a scope rule is at most ${LIMITS.scopeRuleMaxChars} characters`)
  // "METHOD /path", or an MCP call (DESIGN §18): "MCP tools/call send_email", "MCP tools/call *", "MCP resources/read **"
  .regex(/^(?:[A-Z*]+ \/[^\u0000-\u001f\u007f]*|MCP [a-z][A-Za-z/_]{0,63}(?: \S+)?)$/, "expected \"METHOD /path\" or \"MCP <method> <name>\"")
  .refine((rule) => !rule.includes("%"), {
    message: "rules are written decoded: write the character itself, not its %-encoding (a rule holding '%' never matches)",
  })
  .refine((rule) => rule.split("/").filter((s) => s === "**").length <= LIMITS.scopeRuleMaxGlobstars, {
    message: `a scope rule holds at most ${LIMITS.scopeRuleMaxGlobstars} "**" segments`,
  });

/** A dot path into a JSON object (`authed_user`, `owner.user.id`, `data.viewer.id`). */
const jsonPath = z.string().regex(/^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/, "expected a dot path such as owner.user.id");

/**
 * Header names `api_headers` may not set: the token and routing of the upstream hop belong to the gateway, and the
 * method/URL override headers would let a request do what scope_rules did not allow (see proxy/handler.ts).
 */
const RESERVED_API_HEADERS = [
  "authorization", "host", "cookie", "content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer",
  "upgrade", "proxy-authorization", "forwarded", "x-http-method-override", "x-http-method", "x-method-override",
  "x-original-url", "x-rewrite-url", "x-original-method",
];
const apiHeaderName = z
  .string()
  .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, "expected an HTTP header name (RFC 9110 token)")
  .refine((n) => !RESERVED_API_HEADERS.includes(n.toLowerCase()) && !n.toLowerCase().startsWith("x-ath-"), {
    message: "this header is set by the gateway and cannot be configured",
  });
const apiHeaderValue = z.string().max(1024).regex(/^[\x20-\x7e\t]*$/, "expected a printable header value without line breaks");


/**
 * One approval rule (DESIGN §15): a request matching one of `match` waits for a person — the user who granted the
 * token (`user`) or an admin — who approves that exact request within `ttl` seconds (default 300).
 */
export const ApprovalRule = z.strictObject({
  // the grammar, bounds and matcher of scope_rules
  match: z.array(scopeRule).min(1).max(100),
  approver: z.enum(["user", "admin"]).default("user"),
  ttl: z.number().int().min(10).max(7 * 24 * 3600).default(300),
});
export type ApprovalRule = z.output<typeof ApprovalRule>;
export const ApprovalRules = z.array(ApprovalRule).max(100);

/**
 * One policy rule (DESIGN §16): the first whose `match` (and CEL `when`, if any) holds decides — `allow` forwards,
 * `deny` refuses (403 POLICY_DENIED with `reason`), `approve` asks a person (§15). `when` is compiled when the
 * configuration is read (gateway/rules/conditions.ts): a syntax or unknown-variable error fails the start, or the
 * admin call, naming the rule.
 */
export const PolicyRule = z.strictObject({
  match: z.array(scopeRule).min(1).max(100),
  when: z.string().min(1).max(4096).optional(),
  action: z.enum(["allow", "deny", "approve"]),
  approver: z.enum(["user", "admin"]).default("user"),
  ttl: z.number().int().min(10).max(7 * 24 * 3600).default(300),
  reason: z.string().max(500).optional(),
});
export type PolicyRule = z.output<typeof PolicyRule>;
export const PolicyRules = z.array(PolicyRule).max(100);

/**
 * One budget (DESIGN §16): at most `limit` matching calls per `window` — per agent, or per agent and user — counted
 * exactly across instances; past it `deny` (429 BUDGET_EXHAUSTED) or `approve` (each further call needs a person).
 */
export const BudgetRule = z.strictObject({
  match: z.array(scopeRule).min(1).max(100),
  per: z.enum(["agent", "agent_user"]).default("agent"),
  limit: z.number().int().min(0).max(1_000_000_000),
  window: z.enum(["1h", "1d", "30d"]),
  then: z.enum(["deny", "approve"]).default("deny"),
  approver: z.enum(["user", "admin"]).default("user"),
  ttl: z.number().int().min(10).max(7 * 24 * 3600).default(300),
});
export type BudgetRule = z.output<typeof BudgetRule>;
export const BudgetRules = z.array(BudgetRule).max(100);

/**
 * Every field of an entry is known: a misspelt optional field (`scope_rule` for `scope_rules`) would otherwise be
 * dropped silently — and a provider without its scope_rules allows every path (issue 13, item 7).
 */
export const ProviderConfig = z
  .strictObject({
    /** The built-in template this entry was filled from (`ath templates` lists them); the entry's fields override it. */
    template: z.string().min(1).max(64).optional(),
    display_name: z.string().min(1).max(200),
    available_scopes: z.array(z.string().min(1).max(512)).max(200),
    authorize_endpoint: httpUrl,
    token_endpoint: httpUrl,
    api_base_url: httpUrl.optional(),
    client_id: z.string().min(1).max(1024),
    client_secret: z.string().max(4096),
    // optional extensions
    /**
     * A remote MCP server fronted at `{base_url}/mcp/{provider_id}` (DESIGN §18): its Streamable HTTP endpoint, and the
     * RFC 8707 `resource` to ask the provider's authorization server for (sent upstream only when set).
     */
    mcp: z.strictObject({ url: httpUrl, resource: httpUrl.optional() }).optional(),
    /** Per scope, the requests it allows: `"METHOD /path/glob"`, `*` one segment, `**` any rest. */
    scope_rules: z.record(z.string(), z.array(scopeRule)).optional(),
    /** Requests a person must approve one by one (DESIGN §15), checked after scope_rules. */
    approval_rules: ApprovalRules.optional(),
    /**
     * The API reads `;` segment parameters (DESIGN §16): a path holding `;` is forwarded, with `;…` cut off each
     * segment for matching. Without it such a path is ambiguous and refused.
     */
    path_params: z.boolean().optional(),
    /** Conditions and actions on the canonical request (DESIGN §16), checked after scope_rules and approval_rules. */
    policy: PolicyRules.optional(),
    /** Exact call budgets per agent (or agent and user) and window (DESIGN §16). */
    budgets: BudgetRules.optional(),
    /** Human descriptions of scopes, shown on the consent page. */
    scope_descriptions: z.record(z.string(), z.string().max(500)).optional(),
    categories: z.array(z.string()).optional(),
    userinfo_endpoint: httpUrl.optional(),
    /** RFC 7009 endpoint; `{client_id}` in it is replaced by the client id (GitHub's `/applications/{client_id}/token`). */
    revocation_endpoint: httpUrl.optional(),
    token_endpoint_auth_method: z.enum(["client_secret_post", "client_secret_basic"]).default("client_secret_post"),
    extra_authorize_params: z.record(z.string(), z.string()).optional(),
    consent_screen: z.boolean().default(true),
    /** Tokens for this provider must be DPoP-bound to the agent's key (RFC 9449, DESIGN §17): bearer tokens are refused. */
    require_dpop: z.boolean().optional(),
    approval: z.enum(["auto", "manual"]).optional(),
    /** Scopes that always wait for an admin, whatever the approval policy. */
    review_scopes: z.array(z.string()).optional(),
    // How the provider departs from RFC 6749 (DESIGN §11); every default is the RFC's behaviour.
    /** Body encoding of token requests: `form` (RFC 6749 §4.1.3, default) or `json` (Notion). */
    token_request_format: z.enum(["form", "json"]).optional(),
    /** Joins scopes in the authorize request: `" "` (RFC 6749 §3.3, default) or `","` (Slack, Linear). */
    scope_separator: z.enum([" ", ","]).optional(),
    /** The authorize parameter carrying scopes: `scope` (default), `user_scope` (Slack); null sends none (Notion). */
    scope_param: z.string().regex(/^[a-z_]{1,32}$/, "expected a parameter name such as scope").nullable().optional(),
    /** Scopes always asked of the provider but never offered to agents (Microsoft's offline_access, OIDC openid). */
    extra_scopes: z.array(z.string().min(1).max(512)).max(20).optional(),
    /** Where the token object sits in the token response (Slack `authed_user`); the top level when absent there. */
    token_path: jsonPath.optional(),
    /**
     * Where the user id comes from: `auto` (default: id_token `sub`, else userinfo `sub`/`id`/`login`), `id_token`,
     * `userinfo` (`user_id_path` in the userinfo_endpoint's JSON) or `token_response` (`user_id_path` in the token response).
     */
    user_id_source: z.enum(["auto", "id_token", "userinfo", "token_response"]).optional(),
    /** The user id's dot path for `user_id_source` userinfo or token_response (`id`, `authed_user.id`, `owner.user.id`). */
    user_id_path: jsonPath.optional(),
    /** When set, userinfo is a POST of this JSON body (Linear's GraphQL `{ viewer { id } }`); else a GET. */
    userinfo_body: z.record(z.string(), z.unknown()).optional(),
    /** Static headers on every API call and the userinfo call (`Notion-Version`); they replace an agent's own. */
    api_headers: z.record(apiHeaderName, apiHeaderValue).optional(),
    /** PKCE S256 on the authorize and token requests (default true; off where it changes the client's type: Slack). */
    pkce: z.boolean().optional(),
    /** Send the grant's scopes with refresh requests (Microsoft lists `scope` as required there; default false). */
    refresh_sends_scope: z.boolean().optional(),
    /** Token-endpoint `error` codes meaning the grant is dead (default `["invalid_grant"]`; GitHub `bad_refresh_token`). */
    refused_grant_errors: z.array(z.string().min(1).max(64)).min(1).max(20).optional(),
    /** Client authentication at the revocation endpoint; default: token_endpoint_auth_method. `bearer`: the token itself. */
    revocation_auth: z.enum(["client_secret_post", "client_secret_basic", "bearer", "none"]).optional(),
    /** Body encoding of revocation requests: `form` (RFC 7009, default) or `json` (Notion, GitHub). */
    revocation_format: z.enum(["form", "json"]).optional(),
    /** HTTP method of revocation requests: `POST` (RFC 7009, default) or `DELETE` (GitHub). */
    revocation_method: z.enum(["POST", "DELETE"]).optional(),
    /** The body field holding the token to revoke: `token` (RFC 7009, default) or `access_token` (GitHub). */
    revocation_token_param: z.string().regex(/^[a-z_]{1,32}$/, "expected a parameter name such as token").optional(),
  }, { error: (issue) => (issue.code === "unrecognized_keys" ? unknownFields(issue.keys) : undefined) })
  .superRefine((c, ctx) => {
    if (c.user_id_source === "userinfo" && !c.userinfo_endpoint) {
      ctx.addIssue({ code: "custom", path: ["userinfo_endpoint"], message: "required when user_id_source is userinfo" });
    }
    if (c.user_id_source === "token_response" && !c.user_id_path) {
      ctx.addIssue({ code: "custom", path: ["user_id_path"], message: "required when user_id_source is token_response" });
    }
  });
export type ProviderConfig = z.infer<typeof ProviderConfig>;

function unknownFields(keys: readonly string[]): string {
  const fields = PROVIDER_FIELDS();
  return keys.map((k) => `unknown field "${k}"${didYouMean(k, fields)}`).join("\n");
}
/** The known fields (read lazily: the schema is defined after the message function that names them). */
const PROVIDER_FIELDS = (): string[] => Object.keys(ProviderConfig.shape);
export type ProviderConfigInput = z.input<typeof ProviderConfig>;

export const ProviderId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, "provider ids are 1–64 of a-z 0-9 _ . - (starting with a letter or digit)");

export const AdminProviderRequest = ProviderConfig.safeExtend({ provider_id: ProviderId });

export const ProvidersFile = z.record(ProviderId, ProviderConfig);

/** The fields that hold a URL: a missing one is said as "a URL is required", not "a string". */
const URL_FIELDS = new Set(["authorize_endpoint", "token_endpoint", "api_base_url", "userinfo_endpoint", "revocation_endpoint", "url", "resource"]);

const WANTED: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "a whole number",
  boolean: "true or false",
  array: "a list",
  object: "an object",
  record: "an object",
};

/**
 * zod's type errors in words, for a person fixing a providers file (issue 40: `expected string, received undefined`):
 * `missing (a URL is required)`, `must be a list (an array), not a string`; the root of the file is named as a file.
 * Pass it as the parse's `error`; every other issue keeps its own message (undefined).
 */
export function providersFileIssue(issue: { code: string; expected?: string; input?: unknown; path?: readonly PropertyKey[]; issues?: readonly { message?: string }[] }): string | undefined {
  // a provider id the record refuses: its own rule, not "Invalid key in record"
  if (issue.code === "invalid_key") return `${JSON.stringify(issue.input)} is not a provider id: ${issue.issues?.[0]?.message ?? "see the rule for provider ids"}`;
  if (issue.code !== "invalid_type" || issue.expected === undefined) return undefined;
  const path = issue.path ?? [];
  const field = String(path.at(-1) ?? "");
  const wanted = issue.expected === "string" && URL_FIELDS.has(field) ? "a URL" : (WANTED[issue.expected] ?? `a ${issue.expected}`);
  if (path.length === 0) return `the file must be an object keyed by provider id ({"github": {…}}), not ${kindOf(issue.input)}`;
  if (path.length === 1) return `a provider's entry must be an object of its fields, not ${kindOf(issue.input)}`;
  if (issue.input === undefined) return `missing (${wanted} is required)`;
  return `must be ${wanted}${issue.expected === "array" ? " (an array)" : ""}, not ${kindOf(issue.input)}`;
}

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "an object";
  if (typeof v === "boolean") return String(v);
  return `a ${typeof v}`;
}
