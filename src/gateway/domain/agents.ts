/** The agent checks every Phase B endpoint shares: registered, approved, client-authenticated, attested. */
import { AthError, type ProviderApproval } from "../../protocol/index.ts";
import type { AgentRecord } from "../../store/types.ts";
import { verifyAttestation, type AttestationCheck } from "../identity/attestation.ts";
import type { Gateway } from "../context.ts";
import { constantTimeEqual, hashSecret } from "../crypto/secrets.ts";
import { attestedAsWorkload } from "./workload.ts";

/** The agent (or MCP client) record of a client_id, or null. */
export function findAgent(gw: Gateway, clientId: string): Promise<AgentRecord | null> {
  return gw.store.getAgentByClientId(clientId);
}

/** 403 AGENT_NOT_REGISTERED for an unknown client_id. */
export async function requireAgent(gw: Gateway, clientId: string): Promise<AgentRecord> {
  const agent = await gw.store.getAgentByClientId(clientId);
  if (!agent) throw new AthError("AGENT_NOT_REGISTERED", undefined, { client_id: clientId });
  return agent;
}

/** Client authentication (token, revoke): unknown client or wrong secret are the same 401 INVALID_CLIENT. */
export async function authenticateClient(gw: Gateway, clientId: string, clientSecret: string): Promise<AgentRecord> {
  const agent = await gw.store.getAgentByClientId(clientId);
  // Hash even when the client is unknown so both failures take the same time.
  const ok = constantTimeEqual(hashSecret(clientSecret), agent?.client_secret_hash ?? hashSecret(""));
  if (!agent || !ok) throw new AthError("INVALID_CLIENT");
  return agent;
}

/** Whether the agent may act now: approved, and its approval not expired. */
export function isApproved(gw: Gateway, agent: AgentRecord): boolean {
  return agent.status === "approved" && !approvalLapsed(agent, gw.now());
}

/** Pending, denied, suspended or expired approval → 403 AGENT_UNAPPROVED. */
export function requireApproved(gw: Gateway, agent: AgentRecord): void {
  if (agent.status !== "approved") {
    // DESIGN §17: say what unblocks it — an operator's approval (pending), or nothing the agent can do itself.
    const next = `ath admin agents approve ${agent.client_id}`;
    const how = agent.status === "pending" ? `: an operator of this gateway approves it with \`${next}\`` : "";
    throw new AthError("AGENT_UNAPPROVED", `The agent's registration is ${agent.status}${how}`, {
      agent_status: agent.status,
      client_id: agent.client_id,
      ...(agent.status === "pending" ? { operator_command: next } : {}),
    });
  }
  if (approvalLapsed(agent, gw.now())) {
    throw new AthError("AGENT_UNAPPROVED", "The agent's approval has expired; register again", {
      approval_expires: new Date(agent.approval_expires).toISOString(),
    });
  }
}

/** Whether an agent's approval has lapsed at `now` (the clock's part of requireApproved; proxy/plan.ts asks it too). */
export function approvalLapsed(agent: Pick<AgentRecord, "approval_expires">, now: number): boolean {
  return agent.approval_expires <= now;
}

/** The approval for one provider, if any scope of it was approved. */
export function approvalFor(agent: AgentRecord, providerId: string): ProviderApproval | undefined {
  return agent.approvals.find((a) => a.provider_id === providerId && a.approved_scopes.length > 0);
}

/**
 * The attestation of a registered agent: sub must be its agent_id (403 AGENT_IDENTITY_MISMATCH otherwise). A workload
 * agent's is a workload JWT of the issuer it registered with (DESIGN §23, domain/workload.ts).
 */
export async function attest(gw: Gateway, jwt: string, agent: AgentRecord, audience: string): Promise<void> {
  if (await attestedAsWorkload(gw, jwt, agent, audience)) return;
  const check: AttestationCheck = { audience, agentId: agent.agent_id, subMismatch: "AGENT_IDENTITY_MISMATCH", now: gw.now() };
  await verifyAttestation(jwt, check, { keys: gw.keys, recordJti: (a, j, e, n) => gw.store.recordJti(a, j, e, n) });
}
