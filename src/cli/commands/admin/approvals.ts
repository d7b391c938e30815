/** `ath admin approvals list|approve|deny`: the per-request approvals whose approver is an admin (DESIGN §15). */
import { decideApproval, listApprovals } from "../../../agent/flows/admin.ts";
import type { Invocation } from "../../kit/flags.ts";
import { defined, more, page, setup, str, table, text, type Args } from "./common.ts";

export async function approvalsList({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await listApprovals(c.target, defined({ status: text(a.status), ...page(a) }));
  if (c.out.json) return c.out.doc(answer);
  const rows = answer.approvals.map((x) => [x.approval_id, x.status, x.approver, x.client_id, x.provider_id, `${x.method} ${x.path}${x.query ? `?${x.query}` : ""}`, x.expires_at]);
  table(c.out, ["APPROVAL_ID", "STATUS", "APPROVER", "CLIENT_ID", "PROVIDER", "REQUEST", "EXPIRES"], rows);
  more(c.out, answer.next_cursor);
}

export async function approvalDecide({ args: a, format }: Invocation, decision: "approve" | "deny"): Promise<void> {
  const c = await setup(a, format);
  const answer = await decideApproval(c.target, str(a.id), decision);
  if (c.out.json) return c.out.doc(answer);
  c.out.success(`approval ${answer.approval_id} ${answer.status}`);
}
