/** The admin API: providers (POST, GET list, GET/PUT/DELETE one). Client secrets go in sealed and never come out. */
import { AdminProviderRequest, AthError, ProviderConfig, ProviderId } from "../../protocol/index.ts";
import { requireAdmin } from "./auth.ts";
import { audit } from "../domain/audit.ts";
import type { Gateway } from "../context.ts";
import { json, parseWith, readObject } from "../http.ts";
import { maskedProvider, toRecord } from "../domain/providers.ts";

export async function createProvider(gw: Gateway, req: Request): Promise<Response> {
  requireAdmin(gw, req);
  const { provider_id, ...config } = parseWith(AdminProviderRequest, await readObject(req, { form: false }));
  if (await gw.store.getProvider(provider_id)) {
    throw new AthError("PROVIDER_ALREADY_EXISTS", undefined, { provider_id });
  }
  const record = await toRecord(gw, provider_id, config, "admin");
  await gw.store.upsertProvider(record);
  await audit(gw, "provider.created", { provider_id });
  return json(maskedProvider(record), 201);
}

export async function listProviders(gw: Gateway, req: Request): Promise<Response> {
  requireAdmin(gw, req);
  return json({ providers: (await gw.store.listProviders()).map(maskedProvider) });
}

export async function getProvider(gw: Gateway, req: Request, id: string): Promise<Response> {
  requireAdmin(gw, req);
  const record = await gw.store.getProvider(id);
  if (!record) throw new AthError("NOT_FOUND", `Provider '${id}' is not configured`, { provider_id: id });
  return json(maskedProvider(record));
}

/** Full replacement; `client_secret` may be omitted to keep the stored one. */
export async function putProvider(gw: Gateway, req: Request, id: string): Promise<Response> {
  requireAdmin(gw, req);
  parseWith(ProviderId, id);
  const body = await readObject(req, { form: false });
  delete body.provider_id;
  const existing = await gw.store.getProvider(id);
  const keepSecret = body.client_secret === undefined && existing !== null;
  const config = parseWith(ProviderConfig, keepSecret ? { ...body, client_secret: "" } : body);
  const record = await toRecord(gw, id, config, "admin");
  if (keepSecret) record.client_secret_sealed = existing.client_secret_sealed;
  await gw.store.upsertProvider(record);
  await audit(gw, existing ? "provider.updated" : "provider.created", { provider_id: id });
  return json(maskedProvider(record), existing ? 200 : 201);
}

export async function deleteProvider(gw: Gateway, req: Request, id: string): Promise<Response> {
  requireAdmin(gw, req);
  if (!(await gw.store.deleteProvider(id))) throw new AthError("NOT_FOUND", `Provider '${id}' is not configured`, { provider_id: id });
  await audit(gw, "provider.deleted", { provider_id: id });
  return json({ provider_id: id, deleted: true });
}
