/**
 * The home files' hand-written checks (src/agent/home-files.ts): they read config.json and credentials.json as the
 * zod schemas they replaced did — the same defaults, unknown fields dropped, the same fields in the same order, the
 * same documents refused at the same paths — and `ath status` loads no zod (DESIGN §13).
 */
import { describe, expect, test } from "bun:test";
import * as z from "zod/mini";
import { checkConfigFile, checkCredentialsFile, type Checked } from "../../../src/agent/home-files.ts";
import { AgentStatus, ProviderApproval, ScopeIntersection } from "../../../src/protocol/lean.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

/** The modules an entry point loads before any dynamic import: the bundle's static closure, by input path. */
async function staticInputs(entry: string): Promise<string[]> {
  const r = (await Bun.build({ entrypoints: [`${ROOT}${entry}`], target: "bun", splitting: true, metafile: true } as Parameters<typeof Bun.build>[0])) as unknown as {
    success: boolean;
    metafile: { outputs: Record<string, { entryPoint?: string; inputs: Record<string, unknown>; imports?: { path: string; kind: string }[] }> };
  };
  expect(r.success).toBe(true);
  const outputs = r.metafile.outputs;
  // every chunk loaded by a dynamic import is an entry point too: start from this entry's own
  const stack = Object.keys(outputs).filter((k) => outputs[k]!.entryPoint === entry);
  expect(stack).toHaveLength(1);
  const seen = new Set<string>();
  while (stack.length > 0) {
    const o = stack.pop()!;
    if (seen.has(o)) continue;
    seen.add(o);
    for (const i of outputs[o]!.imports ?? []) if (i.kind !== "dynamic-import" && outputs[i.path] !== undefined) stack.push(i.path);
  }
  return [...seen].flatMap((o) => Object.keys(outputs[o]!.inputs));
}

describe("ath status's start", () => {
  test("loads no zod: neither the status command nor the root statically imports it", async () => {
    for (const entry of ["src/cli/commands/status.ts", "src/cli/root.ts"]) {
      const inputs = await staticInputs(entry);
      expect(inputs.some((i) => i.endsWith("agent/home-files.ts") || i.endsWith("cli/root.ts"))).toBe(true);
      expect(inputs.filter((i) => i.includes("node_modules/zod/") || i.endsWith("protocol/lean.ts"))).toEqual([]);
    }
  }, 60_000);
});

/** The zod schemas home.ts used before its checks were written by hand: the reference the checks must agree with. */
const Zod = (() => {
  const SavedToken = z.object({
    access_token: z.string(),
    token_type: z.string(),
    provider_id: z.string(),
    agent_id: z.string(),
    effective_scopes: z.array(z.string()),
    scope_intersection: z.optional(ScopeIntersection),
    obtained_at: z.string(),
    expires_at: z.string(),
    refresh_token: z.optional(z.string()),
    refresh_expires_at: z.optional(z.string()),
  });
  const PendingSession = z.object({
    provider_id: z.string(),
    scopes: z.array(z.string()),
    state: z.string(),
    authorization_url: z.string(),
    created_at: z.string(),
    user_redirect_uri: z.optional(z.string()),
  });
  const ExchangedCode = z.object({ ath_session_id: z.string(), provider_id: z.string(), exchanged_at: z.string() });
  const Registration = z.object({
    client_id: z.string(),
    client_secret: z.string(),
    agent_status: z.union([AgentStatus, z.literal("suspended")]),
    approved_providers: z.array(ProviderApproval),
    approval_expires: z.string(),
    pending_providers: z.optional(z.array(z.object({ provider_id: z.string(), scopes: z.array(z.string()) }))),
    registered_at: z.string(),
    loopback_port: z.optional(z.number()),
    tokens: z._default(z.record(z.string(), SavedToken), {}),
    pending: z._default(z.record(z.string(), PendingSession), {}),
    exchanged: z._default(z.record(z.string(), ExchangedCode), {}),
  });
  return {
    ConfigFile: z.object({
      gateways: z._default(z.record(z.string(), z.string()), {}),
      default_gateway: z.optional(z.string()),
      agent_id: z.optional(z.string()),
      key_path: z.optional(z.string()),
      developer_name: z.optional(z.string()),
      developer_id: z.optional(z.string()),
    }),
    CredentialsFile: z.object({
      gateways: z._default(z.record(z.string(), z.object({ agents: z._default(z.record(z.string(), Registration), {}), admin_token: z.optional(z.string()) })), {}),
    }),
  };
})();

const token = {
  access_token: "ath_tk_1",
  token_type: "Bearer",
  provider_id: "mail",
  agent_id: "did:key:z1",
  effective_scopes: ["mail:read"],
  scope_intersection: { agent_approved: ["mail:read"], user_consented: ["mail:read"], effective: ["mail:read"], extra: 1 },
  obtained_at: "2026-01-01T00:00:00Z",
  expires_at: "2026-01-01T01:00:00Z",
  refresh_token: "ath_rt_1",
};
const registration = {
  // fields in another order than the shape's, and fields the shape does not know
  tokens: { mail: token },
  client_secret: "ath_secret_1",
  client_id: "ath_1",
  future_field: { x: 1 },
  agent_status: "approved",
  approved_providers: [{ provider_id: "mail", approved_scopes: ["mail:read"], denied_scopes: [], denial_reason: "no", note: "n" }],
  approval_expires: "2027-01-01T00:00:00Z",
  pending_providers: [{ provider_id: "cal", scopes: ["cal:read"], why: "?" }],
  registered_at: "2026-01-01T00:00:00Z",
  loopback_port: 8123,
  pending: { ath_sess_1: { provider_id: "mail", scopes: ["mail:read"], state: "s".repeat(16), authorization_url: "http://a", created_at: "2026-01-01T00:00:00Z" } },
};

const validConfigs: unknown[] = [
  {},
  { gateways: { local: "http://127.0.0.1:8787" }, default_gateway: "local", agent_id: "did:key:z1", key_path: "/k.pem", developer_name: "d", developer_id: "i", theme: "dark" },
  { default_gateway: "http://gw" },
];
const validCredentials: unknown[] = [
  {},
  { gateways: {} },
  { gateways: { "http://gw": {} } },
  { gateways: { "http://gw": { admin_token: "t", agents: { "did:key:z1": registration } }, "https://other": { agents: { a: { ...registration, tokens: undefined, agent_status: "suspended" } } } }, other: 1 },
  JSON.parse('{"gateways": {"__proto__": {"agents": {}}, "http://gw": {"agents": {}}}}'),
];
const invalidConfigs: unknown[] = [null, [], "x", { gateways: { a: 1 } }, { gateways: [] }, { gateways: null }, { default_gateway: null, agent_id: 3, key_path: [] }];
const invalidCredentials: unknown[] = [
  null,
  [],
  { gateways: { g: null } },
  { gateways: { g: { agents: { a: {} } } } },
  { gateways: { g: { agents: { a: { ...registration, agent_status: "gone" } } } } },
  { gateways: { g: { agents: { a: { ...registration, loopback_port: "8123", approved_providers: [{ provider_id: 1 }] } } } } },
  { gateways: { g: { agents: { a: { ...registration, tokens: { mail: { ...token, effective_scopes: [1, "x", null], scope_intersection: null } } } } } } },
  { gateways: { g: { agents: { a: { ...registration, pending: { s: { provider_id: "p" } }, exchanged: { h: { ath_session_id: 1 } } } } } } },
  { gateways: { g: { agents: { a: { ...registration, pending_providers: {} } } }, admin_token: 5 } },
];

/** The paths of a zod failure, as `path:` (the messages differ: zod/mini has no message texts). */
const zodPaths = (r: { success: boolean; error?: { issues: { path: PropertyKey[] }[] } }) => (r.error?.issues ?? []).map((i) => i.path.join("."));
const ownPaths = (r: Checked<unknown>) => (r.ok ? [] : r.issues.map((m) => (/^([^ ]*): /.exec(m)?.[1] ?? "")));

describe("config.json and credentials.json checks", () => {
  test("valid files read as zod read them: defaults, unknown fields dropped, the shape's field order", () => {
    for (const [docs, check, schema] of [
      [validConfigs, checkConfigFile, Zod.ConfigFile],
      [validCredentials, checkCredentialsFile, Zod.CredentialsFile],
    ] as const) {
      for (const doc of docs) {
        const ours = (check as (v: unknown) => Checked<unknown>)(doc);
        const theirs = schema.safeParse(doc);
        expect(theirs.success).toBe(true);
        expect(ours.ok).toBe(true);
        if (ours.ok) expect(JSON.stringify(ours.value)).toBe(JSON.stringify(theirs.data));
      }
    }
  });

  test("invalid files are refused at the paths zod refused them", () => {
    for (const [docs, check, schema] of [
      [invalidConfigs, checkConfigFile, Zod.ConfigFile],
      [invalidCredentials, checkCredentialsFile, Zod.CredentialsFile],
    ] as const) {
      for (const doc of docs) {
        const ours = (check as (v: unknown) => Checked<unknown>)(doc);
        const theirs = schema.safeParse(doc);
        expect(theirs.success).toBe(false);
        expect(ours.ok).toBe(false);
        expect(ownPaths(ours).sort()).toEqual(zodPaths(theirs as never).sort());
      }
    }
  });

  test("defaults are new objects each time (a mutation of one read is not in the next)", () => {
    const a = checkCredentialsFile({ gateways: { g: { agents: { r: { ...registration, tokens: undefined } } } } });
    const b = checkCredentialsFile({});
    const c = checkCredentialsFile({});
    if (!a.ok || !b.ok || !c.ok) throw new Error("expected valid");
    expect(a.value.gateways.g!.agents.r!.tokens).toEqual({});
    expect(a.value.gateways.g!.agents.r!.pending).toEqual({ ath_sess_1: expect.any(Object) });
    expect(a.value.gateways.g!.agents.r!.exchanged).toEqual({});
    b.value.gateways.x = { agents: {} };
    expect(c.value).toEqual({ gateways: {} });
    const d = checkConfigFile({});
    expect(d).toEqual({ ok: true, value: { gateways: {} } });
  });

  test("each problem is named by its path, with what was expected and what was found", () => {
    expect(checkConfigFile({ gateways: { a: 1 }, default_gateway: null })).toEqual({
      ok: false,
      issues: ["gateways.a: Invalid input: expected string, received number", "default_gateway: Invalid input: expected string, received null"],
    });
    expect(checkConfigFile([])).toEqual({ ok: false, issues: ["Invalid input: expected object, received array"] });
    const bad = checkCredentialsFile({ gateways: { "http://gw": { agents: { "did:key:z1": { ...registration, agent_status: "gone", loopback_port: "1", tokens: [] } } } } });
    expect(bad).toEqual({
      ok: false,
      issues: [
        'gateways.http://gw.agents.did:key:z1.agent_status: Invalid option: expected one of "approved"|"pending"|"denied"|"suspended"',
        "gateways.http://gw.agents.did:key:z1.loopback_port: Invalid input: expected number, received string",
        "gateways.http://gw.agents.did:key:z1.tokens: Invalid input: expected record, received array",
      ],
    });
  });
});
