/**
 * What each command prints on stdout with `--format json`, as zod schemas, for `ath <command> --help --format json`
 * (JSON Schema via zod's export): an agent that shells out reads the flags, the exit codes and the shape of the
 * answer from the CLI itself. Loaded only for that help; the commands do not parse their own output with these.
 */
import { z } from "zod";
import { RequestOutput, RevokeOutput, StatusDocument } from "../../protocol/mcp-tools.ts";
import { AgentIdentityDocument, DiscoveryDocument, ProviderApproval, ScopeIntersection, ServiceDiscoveryDocument } from "../../protocol/schemas.ts";

const registration = z.object({
  gateway: z.string(),
  agent_id: z.string(),
  client_id: z.string(),
  client_secret: z.string().describe("masked unless --show-secrets"),
  agent_status: z.enum(["approved", "pending", "denied", "suspended"]),
  approved_providers: z.array(ProviderApproval),
  approval_expires: z.string(),
  already_registered: z.literal(true).optional().describe("the agent was registered before: nothing was sent again"),
  scopes_changed: z.boolean().optional().describe("already registered: whether this run added approved scopes"),
  added: z.array(z.object({ provider_id: z.string(), scopes: z.array(z.string()) })).optional(),
  pending_providers: z.array(z.object({ provider_id: z.string(), scopes: z.array(z.string()) })).optional().describe("scopes waiting for the gateway's admin"),
  refreshed: z.boolean().optional().describe("already registered: the registration was read again from the gateway"),
});

const token = z.object({
  access_token: z.string().describe("masked unless --show-secrets"),
  token_type: z.enum(["Bearer", "DPoP"]),
  expires_in: z.number(),
  expires_at: z.string(),
  refresh_token: z.string().optional().describe("masked unless --show-secrets"),
  refresh_expires_in: z.number().optional(),
  refresh_expires_at: z.string().optional(),
  effective_scopes: z.array(z.string()),
  provider_id: z.string(),
  agent_id: z.string(),
  scope_intersection: ScopeIntersection,
  already_exchanged: z.literal(true).optional(),
});

/** By command path (`proxy`, `config show`). */
export const OUTPUT_SCHEMAS: Record<string, z.ZodType> = {
  discover: z.union([DiscoveryDocument, ServiceDiscoveryDocument]).describe("native mode: the service's ath-app.json"),
  register: registration,
  authorize: z.union([z.object({ authorization_url: z.string(), ath_session_id: z.string() }).describe("--no-wait"), token.describe("--wait")]),
  token,
  proxy: RequestOutput.omit({ truncated: true }).extend({
    approval: z
      .object({ approval_id: z.string(), approval_url: z.string(), expires_at: z.string(), request_digest: z.string(), approver: z.enum(["user", "admin"]).optional(), status: z.literal("pending") })
      .optional()
      .describe("403 APPROVAL_REQUIRED (exit 4): the approval a person must give at approval_url; resend with --approval <approval_id>"),
  }),
  revoke: RevokeOutput,
  status: StatusDocument,
  identity: AgentIdentityDocument,
  "identity new": z.object({ agent_id: z.string(), key_path: z.string(), previous_agent_id: z.string().nullable(), unset_agent_id: z.string().optional() }),
};

/** What every command prints on stdout when it fails under --format json. */
export const ERROR_SCHEMA = z.object({
  error: z.object({ code: z.string(), message: z.string(), status: z.number().optional(), details: z.unknown().optional() }),
});

export function jsonSchema(schema: z.ZodType): unknown {
  return z.toJSONSchema(schema, { unrepresentable: "any", io: "output" });
}
