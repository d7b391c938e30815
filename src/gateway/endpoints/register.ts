/** POST /ath/agents/register — Phase A: parse the registration; domain/registration.ts verifies, decides and records it. */
import { AgentRegistrationRequest } from "../../protocol/index.ts";
import type { Call } from "../context.ts";
import { registerAgent } from "../domain/registration.ts";
import { dpopHeader, parseWith, readObject } from "../http/request.ts";
import { json } from "../http/response.ts";
import { withAppDefaults } from "./native.ts";

export async function register(call: Call): Promise<Response> {
  const { gw } = call;
  const body = parseWith(AgentRegistrationRequest, withAppDefaults(gw, await readObject(call, { form: false })));
  const res = await registerAgent(gw, body, dpopHeader(call.req));
  await call.identify({ client_id: res.client_id });
  return json(res, 201);
}
