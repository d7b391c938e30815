/** `ath admin issuers list|add|remove` (DESIGN §23): the identity providers and workload issuers the gateway trusts. */
import { addIssuer, listIssuers, removeIssuer } from "../../../agent/flows/admin.ts";
import type { Invocation } from "../../kit/flags.ts";
import { readEntry, setup, str, table } from "./common.ts";

export async function issuersList({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await listIssuers(c.target);
  if (c.out.json) return c.out.doc(answer);
  const rows = answer.trusted_issuers.map((t) => [
    t.issuer,
    t.kind,
    t.source,
    typeof t.jwks_uri === "string" ? t.jwks_uri : "(inline jwks)",
    Array.isArray(t.subjects) ? t.subjects.join(",") : "-",
  ]);
  table(c.out, ["ISSUER", "KIND", "SOURCE", "KEYS", "SUBJECTS"], rows);
}

export async function issuersAdd({ args: a, format }: Invocation): Promise<void> {
  const body = await readEntry(str(a.file));
  const c = await setup(a, format);
  const answer = await addIssuer(c.target, body);
  if (c.out.json) return c.out.doc(answer);
  c.out.success(`trusted issuer ${answer.issuer} saved (${answer.kind})`);
}

export async function issuersRemove({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await removeIssuer(c.target, str(a.id));
  if (c.out.json) return c.out.doc(answer);
  c.out.success(`trusted issuer ${answer.issuer} removed`);
}
