/**
 * PATCH /ath/agents/registration — ath's extension (DESIGN §17): an agent grows its providers and scopes without a new
 * identity. HTTP Basic client credentials (any failure the one 401 INVALID_CLIENT) and an attestation with `aud` =
 * base_url, as at registration; `requested_providers` lists what to add. The additions are decided by the same policy
 * as at registration (rules/policy.ts): auto-approved ones are added at once; under manual approval, an agent already
 * approved keeps what it has and the additions wait in `pending_providers` until an admin approves the agent again.
 */
import { AthError, RegistrationUpdateRequest, type AgentStatusResponse, type RegistrationUpdateResponse } from "../../protocol/index.ts";
import type { Call } from "../context.ts";
import { approvalLapsed, authenticateClient } from "../domain/agents.ts";
import { growRegistration } from "../domain/registration.ts";
import { parseWith, readObject } from "../http/request.ts";
import { json } from "../http/response.ts";
import { basicCredentials } from "./agent-status.ts";
import { withAppDefaults } from "./native.ts";

export async function updateRegistration(call: Call): Promise<Response> {
  const { gw, req } = call;
  const credentials = basicCredentials(req.headers.get("authorization"));
  if (!credentials) {
    throw new AthError("INVALID_CLIENT", "Send the client credentials as HTTP Basic (client_id:client_secret)", undefined, { headers: { "www-authenticate": 'Basic realm="ath"' } });
  }
  const agent = await authenticateClient(gw, credentials.id, credentials.secret);
  await call.identify({ client_id: agent.client_id });
  const body = parseWith(RegistrationUpdateRequest, withAppDefaults(gw, await readObject(call, { form: false })));
  const outcome = await growRegistration(gw, agent, body);
  const registration: AgentStatusResponse = {
    client_id: agent.client_id,
    agent_id: agent.agent_id,
    agent_status: outcome.status,
    approved_providers: outcome.approvals,
    approval_expires: new Date(outcome.current.approval_expires).toISOString(),
    approval_expired: approvalLapsed(outcome.current, gw.now()),
  };
  const res: RegistrationUpdateResponse = { ...registration, pending_providers: outcome.pending, added: outcome.added };
  return json(res);
}
