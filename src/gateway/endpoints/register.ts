/** POST /ath/agents/register — Phase A: verify the agent, decide its approvals, issue client credentials. */
import {
  AgentRegistrationRequest,
  AthError,
  LIMITS,
  PREFIX,
  type AgentRegistrationResponse,
} from "../../protocol/index.ts";
import { verifyAttestation } from "../identity/attestation.ts";
import { audit } from "../domain/audit.ts";
import type { Call } from "../context.ts";
import { parseWith, readObject } from "../http/request.ts";
import { withAppDefaults } from "./native.ts";
import { json } from "../http/response.ts";
import { decideApprovals } from "../rules/policy.ts";
import { providerMap } from "../domain/providers.ts";
import { hashSecret, mintSecret } from "../crypto/secrets.ts";

export async function register(call: Call): Promise<Response> {
  const { gw } = call;
  const body = parseWith(AgentRegistrationRequest, withAppDefaults(gw, await readObject(call, { form: false })));
  const now = gw.now();
  await verifyAttestation(
    body.agent_attestation,
    { audience: gw.opts.baseUrl, agentId: body.agent_id, subMismatch: "INVALID_ATTESTATION", now },
    { keys: gw.keys, recordJti: (a, j, e, n) => gw.store.recordJti(a, j, e, n) },
  );

  const { approvals, status } = decideApprovals(body.requested_providers, await providerMap(gw), gw.opts.approval);
  const clientId = mintSecret(PREFIX.clientId, 16);
  const clientSecret = mintSecret(PREFIX.clientSecret);
  const approvalExpires = now + LIMITS.approvalTtlDefaultSeconds * 1000;
  const created = await gw.store.createAgent({
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
  });
  if (!created) {
    await audit(gw, "agent.registration_refused", { agent_id: body.agent_id, data: { reason: "already registered" } });
    throw new AthError("AGENT_ALREADY_REGISTERED", undefined, { agent_id: body.agent_id });
  }
  await call.identify({ client_id: clientId });
  await audit(gw, "agent.registered", { client_id: clientId, agent_id: body.agent_id, data: { status, approvals } });

  const res: AgentRegistrationResponse = {
    client_id: clientId,
    client_secret: clientSecret,
    agent_status: status,
    approved_providers: approvals,
    approval_expires: new Date(approvalExpires).toISOString(),
  };
  return json(res, 201);
}
