/**
 * The admin API for trusted issuers (DESIGN §23): `GET /ath/admin/trusted-issuers`, `POST` (the entry as in the
 * providers file: added, or replacing the one with the same `issuer`), `DELETE /ath/admin/trusted-issuers/{issuer}`
 * (the issuer URL-encoded). An entry of the providers file is put back at the next start: the file wins for its own.
 */
import { AthError, TrustedIssuer } from "../../protocol/index.ts";
import type { TrustedIssuerRecord } from "../../store/identity-types.ts";
import type { Call } from "../context.ts";
import { audit } from "../domain/audit.ts";
import { findIssuer, listIssuers, putIssuer, removeIssuer } from "../domain/trusted-issuers.ts";
import { parseWith, readObject } from "../http/request.ts";
import { json } from "../http/response.ts";

export async function list({ gw }: Call): Promise<Response> {
  return json({ trusted_issuers: (await listIssuers(gw)).map(view) });
}

export async function create(call: Call): Promise<Response> {
  const { gw } = call;
  const body = await readObject(call, { form: false });
  delete body.source; // a GET answer's field: GET → edit → POST round-trips
  const entry = parseWith(TrustedIssuer, body);
  const existing = await findIssuer(gw, entry.issuer);
  const record = await putIssuer(gw, entry, "admin");
  await audit(gw, existing ? "trusted_issuer.updated" : "trusted_issuer.created", { data: { issuer: entry.issuer, kind: entry.kind } });
  return json(view(record), existing ? 200 : 201);
}

export async function remove({ gw, params }: Call): Promise<Response> {
  const issuer = params.issuer!;
  if (!(await removeIssuer(gw, issuer))) throw new AthError("NOT_FOUND", `No trusted issuer ${JSON.stringify(issuer.slice(0, 200))}`, { issuer });
  await audit(gw, "trusted_issuer.deleted", { data: { issuer } });
  return json({ issuer, deleted: true });
}

// internal

function view(r: TrustedIssuerRecord) {
  return { ...r.config, source: r.source };
}
