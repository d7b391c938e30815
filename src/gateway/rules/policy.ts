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

/** Scopes per provider, as the pending additions of an agent (DESIGN §17). */
export interface ScopeSet {
  provider_id: string;
  scopes: string[];
}

/**
 * DESIGN §17, growing an agent: `decided` (decideApprovals of the additions) merged into `current`. Scopes already
 * approved stay; newly approved ones are added — or, when `hold` (manual approval for an agent already approved), put
 * in `pending` for an admin instead; denied ones are listed as denied (with the reason) unless approved already.
 * `added` names what became approved now.
 */
export function growApprovals(
  current: readonly ProviderApproval[],
  decided: readonly ProviderApproval[],
  pendingBefore: readonly ScopeSet[],
  hold: boolean,
): { approvals: ProviderApproval[]; pending: ScopeSet[]; added: ScopeSet[] } {
  const approvals = current.map((a) => ({ ...a, approved_scopes: [...a.approved_scopes], denied_scopes: [...a.denied_scopes] }));
  const pending = new Map(pendingBefore.map((p) => [p.provider_id, new Set(p.scopes)]));
  const added: ScopeSet[] = [];
  for (const d of decided) {
    let entry = approvals.find((a) => a.provider_id === d.provider_id);
    if (!entry) {
      entry = { provider_id: d.provider_id, approved_scopes: [], denied_scopes: [] };
      approvals.push(entry);
    }
    const fresh = d.approved_scopes.filter((s) => !entry.approved_scopes.includes(s));
    if (hold) {
      if (fresh.length) pending.set(d.provider_id, new Set([...(pending.get(d.provider_id) ?? []), ...fresh]));
    } else if (fresh.length) {
      entry.approved_scopes.push(...fresh);
      added.push({ provider_id: d.provider_id, scopes: fresh });
    }
    const denied = d.denied_scopes.filter((s) => !entry.approved_scopes.includes(s) && !entry.denied_scopes.includes(s));
    entry.denied_scopes = entry.denied_scopes.filter((s) => !entry.approved_scopes.includes(s)).concat(denied);
    if (d.denial_reason && denied.length) entry.denial_reason = d.denial_reason;
    if (entry.denied_scopes.length === 0) delete entry.denial_reason;
  }
  return { approvals, pending: [...pending].map(([provider_id, s]) => ({ provider_id, scopes: [...s] })), added };
}

/** The pending additions approved: merged into the approvals (an admin approving the agent, DESIGN §17). */
export function approvePending(current: readonly ProviderApproval[], pending: readonly ScopeSet[]): ProviderApproval[] {
  const decided = pending.map((p) => ({ provider_id: p.provider_id, approved_scopes: p.scopes, denied_scopes: [] }));
  return growApprovals(current, decided, [], false).approvals;
}
