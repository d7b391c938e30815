/**
 * Registration (DESIGN §3 Phase A, §17, §23): an agent proves its identity (the attestation's signature by the key its
 * agent_id names, `aud` = base_url — or a trusted issuer's workload JWT: domain/workload.ts), the registration policy
 * decides its approvals (rules/policy.ts), and it gets
 * client credentials — 256-bit, stored hashed; and, later, grows its providers and scopes without a new identity.
 */
import {
  AthError,
  LIMITS,
  PREFIX,
  type AgentRegistrationRequest,
  type AgentRegistrationResponse,
  type AgentStatus,
  type RegistrationUpdateRequest,
} from "../../protocol/index.ts";
import type { WorkloadAgentRecord } from "../../store/identity-types.ts";
import type { AgentRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { hashSecret, mintSecret } from "../crypto/secrets.ts";
import { verifyAttestation } from "../identity/attestation.ts";
import { decideApprovals, growApprovals } from "../rules/policy.ts";
import { attest } from "./agents.ts";
import { audit } from "./audit.ts";
import { providerMap } from "./providers.ts";
import { isWorkloadJwt } from "./trusted-issuers.ts";
import { provenKey, verifyWorkloadJwt } from "./workload.ts";

/**
 * A new agent, registered; AGENT_ALREADY_REGISTERED (409) when its agent_id already is. `proof`: the request's DPoP
 * header — a workload (DESIGN §23), whose agent_id holds no key, proves the key its tokens will bind to with it.
 */
export async function registerAgent(gw: Gateway, body: AgentRegistrationRequest, proof: string | null = null): Promise<AgentRegistrationResponse> {
  const now = gw.now();
  let workload: WorkloadAgentRecord | null = null;
  if (await isWorkloadJwt(gw, body.agent_attestation, body.agent_id)) {
    const verified = await verifyWorkloadJwt(gw, body.agent_attestation, { audience: gw.opts.baseUrl });
    if (verified.sub !== body.agent_id) throw new AthError("INVALID_ATTESTATION", "the workload JWT's sub must be the agent_id", { reason: "assertion_invalid" });
    workload = { client_id: "", issuer: verified.issuer, jkt: await provenKey(gw, proof, body.agent_id) };
  } else {
    await verifyAttestation(
      body.agent_attestation,
      { audience: gw.opts.baseUrl, agentId: body.agent_id, subMismatch: "INVALID_ATTESTATION", now },
      { keys: gw.keys, recordJti: (a, j, e, n) => gw.store.recordJti(a, j, e, n) },
    );
  }
  const { approvals, status } = decideApprovals(body.requested_providers, await providerMap(gw), gw.opts.approval);
  const clientId = mintSecret(PREFIX.clientId, 16);
  const clientSecret = mintSecret(PREFIX.clientSecret);
  const approvalExpires = now + LIMITS.approvalTtlDefaultSeconds * 1000;
  const record = {
    client_id: clientId,
    client_secret_hash: hashSecret(clientSecret),
    agent_id: body.agent_id,
    developer: body.developer,
    purpose: body.purpose ?? null,
    redirect_uris: body.redirect_uris ?? null,
    status,
    approvals,
    approval_expires: approvalExpires,
    created_at: now,
  };
  // a workload agent and its issuer and key come into being together
  const created = workload
    ? await gw.store.transaction(async (tx) => (await tx.createAgent(record)) && (await tx.createWorkloadAgent({ ...workload, client_id: clientId }), true))
    : await gw.store.createAgent(record);
  if (!created) {
    await audit(gw, "agent.registration_refused", { agent_id: body.agent_id, data: { reason: "already registered" } });
    throw new AthError("AGENT_ALREADY_REGISTERED", undefined, { agent_id: body.agent_id });
  }
  const identity = workload ? { workload: { issuer: workload.issuer, key_bound: workload.jkt !== null } } : {};
  await audit(gw, "agent.registered", { client_id: clientId, agent_id: body.agent_id, data: { status, approvals, ...identity } });
  return {
    client_id: clientId,
    client_secret: clientSecret,
    agent_status: status,
    approved_providers: approvals,
    approval_expires: new Date(approvalExpires).toISOString(),
  };
}

/**
 * PATCH /ath/agents/registration's decision (DESIGN §17): the additions are decided by the same policy as at
 * registration; auto-approved ones are added at once; under manual approval, an agent already approved keeps what it
 * has and the additions wait in `pending_providers` until an admin approves the agent again. One transaction, the
 * agent row locked.
 */
export async function growRegistration(gw: Gateway, agent: AgentRecord, body: RegistrationUpdateRequest) {
  await attest(gw, body.agent_attestation, agent, gw.opts.baseUrl);
  const decided = decideApprovals(body.requested_providers, await providerMap(gw), gw.opts.approval);
  const outcome = await gw.store.transaction(async (tx) => {
    const current = await tx.lockAgent(agent.client_id);
    if (!current) throw new AthError("INVALID_CLIENT");
    const hadScopes = current.approvals.some((a) => a.approved_scopes.length > 0);
    // Suspended, or denied by an admin (an agent denied at registration only because nothing was approvable may grow).
    if (current.status === "suspended" || (current.status === "denied" && hadScopes)) {
      throw new AthError("AGENT_UNAPPROVED", `The agent's registration is ${current.status}`, { agent_status: current.status });
    }
    const manual = decided.status === "pending";
    const hold = manual && current.status === "approved";
    const grown = growApprovals(current.approvals, decided.approvals, current.pending_approvals ?? [], hold);
    const anyApproved = grown.approvals.some((a) => a.approved_scopes.length > 0);
    const status: AgentStatus = current.status === "approved" || current.status === "pending" ? current.status : anyApproved ? (manual ? "pending" : "approved") : "denied";
    await tx.updateAgent(agent.client_id, { status, approvals: grown.approvals, pending_approvals: grown.pending });
    return { current, status, ...grown };
  });
  await audit(gw, "agent.registration_updated", {
    client_id: agent.client_id,
    agent_id: agent.agent_id,
    data: { added: outcome.added, pending: outcome.pending, status: outcome.status },
  });
  return outcome;
}
