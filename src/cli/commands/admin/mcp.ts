/** `ath admin mcp` (DESIGN §22): each federated MCP URL, its members with their prefixes, and who connected which. */
import { mcpFederation } from "../../../agent/flows/admin.ts";
import type { Invocation } from "../../kit/flags.ts";
import { setup, table } from "./common.ts";

export async function mcp({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await mcpFederation(c.target);
  if (c.out.json) return c.out.doc(answer);
  const urls = answer.urls.map((u) => [u.url, u.group ?? "(every MCP server)", u.members.map((m) => `${m.provider_id} ${m.prefix === "" ? '""' : m.prefix}`).join(", ")]);
  table(c.out, ["URL", "GROUP", "MEMBERS (PREFIX)"], urls);
  const people = answer.urls.flatMap((u) => u.people.map((p) => [u.url, p.user_id, p.client_id, p.connected.join(",") || "-", p.missing.join(",") || "-"]));
  table(c.out, ["URL", "USER", "CLIENT_ID", "CONNECTED", "NOT CONNECTED"], people);
}
