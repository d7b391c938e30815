/**
 * Workload identity (DESIGN §23): an agent registers and authenticates with a workload JWT (a `kind: workload`
 * issuer's, `sub` matching its `subjects`, ≤ 10 minutes) instead of an ES256 attestation; its agent_id is the JWT's
 * `sub` (e.g. a SPIFFE ID). The JWT travels in `agent_attestation`; its issuer tells it apart (an attestation's `iss`
 * is the agent_id or its origin). A workload has no key in its agent_id: it proves one with a DPoP proof at
 * registration, and everything after is unchanged — its tokens bind to that key (§17). Any failed check at
 * registration is 401 INVALID_ATTESTATION; afterwards a JWT for another workload is 403 AGENT_IDENTITY_MISMATCH.
 */
import { AthError, PATHS } from "../../protocol/index.ts";
import type { AgentRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { DpopProofError, registeredThumbprint, verifyDpopProof } from "../identity/dpop.ts";
import { AssertionError, peekClaims } from "../identity/issuer-jwt.ts";
import { checkWorkloadClaims } from "../identity/workload-jwt.ts";
import { verifyFromIssuer } from "./trusted-issuers.ts";

export interface VerifiedWorkload {
  issuer: string;
  sub: string;
}

/**
 * A workload JWT verified for `audience` (the endpoint's: base_url, or `{base_url}/ath/token`; base_url itself is
 * always accepted, as is the issuer entry's `audience`), from `pinnedIssuer` when the agent already registered.
 */
export async function verifyWorkloadJwt(gw: Gateway, jwt: string, o: { audience: string; pinnedIssuer?: string }): Promise<VerifiedWorkload> {
  try {
    const { issuer, claims } = await verifyFromIssuer(gw, jwt, "workload");
    if (o.pinnedIssuer !== undefined && issuer.issuer !== o.pinnedIssuer) throw new AssertionError("issuer_untrusted", "this agent registered with another workload issuer");
    const audiences = [o.audience, gw.opts.baseUrl, ...(issuer.audience ? [issuer.audience] : [])];
    const c = checkWorkloadClaims(claims, { subjects: issuer.subjects ?? [], audiences, now: gw.now() });
    if (c.jti !== null && !(await gw.store.recordJti(`workload:${issuer.issuer}`, c.jti, c.exp * 1000, gw.now()))) {
      throw new AssertionError("assertion_replayed", "this workload JWT was already used (jti)");
    }
    return { issuer: issuer.issuer, sub: c.sub };
  } catch (err) {
    if (err instanceof AssertionError) throw new AthError("INVALID_ATTESTATION", `workload JWT refused: ${err.message}`, { reason: err.reason });
    throw err;
  }
}

/**
 * The key a workload proves at registration: the thumbprint of a valid DPoP proof of the registration request (RFC
 * 9449 §4.3), or null when it sent none (its tokens are then bearer tokens). A bad proof is 401 INVALID_ATTESTATION.
 */
export async function provenKey(gw: Gateway, proof: string | null, agentId: string): Promise<string | null> {
  if (proof === null) return null;
  try {
    const deps = { now: gw.now(), recordJti: (scope: string, jti: string, e: number, n: number) => gw.store.recordJti(scope, jti, e, n) };
    return await verifyDpopProof(proof, { method: "POST", url: gw.opts.baseUrl + PATHS.register, replayScope: `register:${agentId}` }, deps);
  } catch (err) {
    if (err instanceof DpopProofError) throw new AthError("INVALID_ATTESTATION", `Invalid DPoP proof of the workload's key: ${err.message}`, { reason: "invalid_dpop_proof" });
    throw err;
  }
}

/**
 * A registered workload agent's attestation at authorize, token or PATCH: true when `jwt` was its workload JWT (and
 * held), false when the agent is no workload agent or `jwt` is not from a workload issuer (the caller verifies it as an
 * ES256 attestation then). An attestation names the agent itself as `iss`: only other JWTs cost the store read.
 */
export async function attestedAsWorkload(gw: Gateway, jwt: string, agent: AgentRecord, audience: string): Promise<boolean> {
  const iss = peekClaims(jwt)?.iss;
  if (typeof iss !== "string" || iss === agent.agent_id || iss === originOf(agent.agent_id)) return false;
  const workload = await gw.store.getWorkloadAgent(agent.client_id);
  if (!workload) return false;
  const { sub } = await verifyWorkloadJwt(gw, jwt, { audience, pinnedIssuer: workload.issuer });
  if (sub !== agent.agent_id) throw new AthError("AGENT_IDENTITY_MISMATCH", "the workload JWT is for another workload than the registered agent_id");
  return true;
}

/** The RFC 7638 thumbprint of the key the agent proves: a workload's key from registration, else its agent_id's key. */
export async function agentThumbprint(gw: Gateway, agent: Pick<AgentRecord, "client_id" | "agent_id">): Promise<string | null> {
  const workload = await gw.store.getWorkloadAgent(agent.client_id);
  if (workload) return workload.jkt;
  return registeredThumbprint(gw.keys, agent.agent_id);
}

// internal

function originOf(agentId: string): string | undefined {
  return /^https?:\/\//.test(agentId) && URL.canParse(agentId) ? new URL(agentId).origin : undefined;
}
