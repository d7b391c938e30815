/** Phase A approval policy: which requested scopes an agent is granted, per provider, at registration. */
import type { AgentStatus, ProviderApproval, ProviderConfig, ProviderScopeRequest } from "../../protocol/index.ts";

export type ApprovalMode = "auto" | "manual";

/**
 * DESIGN §3 Phase A / §8: per provider, requested ∩ available_scopes are approved, the rest denied with a
 * `denial_reason`; an unknown provider is denied entirely; `review_scopes` are held for an admin (denied with a
 * reason saying so). Duplicate provider entries are merged. Status: `pending` when the gateway or a provider
 * requires manual approval, else `approved` when any scope was approved, else `denied`.
 */
export function decideApprovals(
  requested: readonly ProviderScopeRequest[],
  providers: ReadonlyMap<string, ProviderConfig>,
  mode: ApprovalMode,
): { approvals: ProviderApproval[]; status: AgentStatus } {
  const merged = new Map<string, Set<string>>();
  for (const r of requested) {
    const set = merged.get(r.provider_id) ?? new Set<string>();
    for (const s of r.scopes) set.add(s);
    merged.set(r.provider_id, set);
  }
  let manual = mode === "manual";
  const approvals = [...merged].map(([providerId, scopeSet]): ProviderApproval => {
    const scopes = [...scopeSet];
    const provider = providers.get(providerId);
    if (!provider) {
      return { provider_id: providerId, approved_scopes: [], denied_scopes: scopes, denial_reason: `Unknown provider '${providerId}'` };
    }
    if (provider.approval === "manual") manual = true;
    const available = new Set(provider.available_scopes);
    const review = new Set(provider.review_scopes ?? []);
    const approved = scopes.filter((s) => available.has(s) && !review.has(s));
    const notOffered = scopes.filter((s) => !available.has(s));
    const held = scopes.filter((s) => available.has(s) && review.has(s));
    const reasons = [
      notOffered.length ? `Not offered by ${providerId}: ${notOffered.join(", ")}` : "",
      held.length ? `Requires review by the gateway operator: ${held.join(", ")}` : "",
    ].filter(Boolean);
    const approval: ProviderApproval = { provider_id: providerId, approved_scopes: approved, denied_scopes: [...notOffered, ...held] };
    if (reasons.length) approval.denial_reason = reasons.join(". ");
    return approval;
  });
  const anyApproved = approvals.some((a) => a.approved_scopes.length > 0);
  const status: AgentStatus = !anyApproved ? "denied" : manual ? "pending" : "approved";
  return { approvals, status };
}
