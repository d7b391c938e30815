/** The admin API: providers (POST, GET list, GET/PUT/DELETE one). Client secrets go in sealed and never come out. */
import { requireConditions } from "../rules/conditions.ts";
import { AdminProviderRequest, AthError, ProviderConfig, ProviderId } from "../../protocol/index.ts";
import { audit } from "../domain/audit.ts";
import type { Call, Gateway } from "../context.ts";
import { parseWith, readObject } from "../http/request.ts";
import { json } from "../http/response.ts";
import { findProvider, listProviders, MASKED_SECRET, maskedProvider, toRecord } from "../domain/providers.ts";
import { applyTemplate, UnknownTemplateError } from "../providers/templates/index.ts";

export async function create(call: Call): Promise<Response> {
  const { gw } = call;
  const body = editable(await readObject(call, { form: false }));
  const { provider_id, ...config } = parseWith(AdminProviderRequest, withTemplate(body.provider_id, body));
  requireConditions(config.policy, "policy");
  if (await findProvider(gw, provider_id)) {
    throw new AthError("PROVIDER_ALREADY_EXISTS", undefined, { provider_id });
  }
  const record = await toRecord(gw, provider_id, config, "admin");
  await gw.store.upsertProvider(record);
  await audit(gw, "provider.created", { provider_id });
  return json(maskedProvider(record), 201);
}

export async function list({ gw }: Call): Promise<Response> {
  return json({ providers: (await listProviders(gw)).map(maskedProvider) });
}

export async function get({ gw, params }: Call): Promise<Response> {
  const id = params.provider_id!;
  const record = await findProvider(gw, id);
  if (!record) throw new AthError("NOT_FOUND", `Provider '${id}' is not configured`, { provider_id: id });
  return json(maskedProvider(record));
}

/** Full replacement; `client_secret` may be omitted to keep the stored one. */
export async function put(call: Call): Promise<Response> {
  const { gw } = call;
  const id = parseWith(ProviderId, call.params.provider_id);
  const body = editable(await readObject(call, { form: false }));
  delete body.provider_id;
  const existing = await findProvider(gw, id);
  const keepSecret = body.client_secret === undefined && existing !== null;
  const config = parseWith(ProviderConfig, withTemplate(id, keepSecret ? { ...body, client_secret: "" } : body));
  requireConditions(config.policy, "policy");
  const record = await toRecord(gw, id, config, "admin");
  if (keepSecret) record.client_secret_sealed = existing.client_secret_sealed;
  await gw.store.upsertProvider(record);
  await audit(gw, existing ? "provider.updated" : "provider.created", { provider_id: id });
  return json(maskedProvider(record), existing ? 200 : 201);
}

export async function remove({ gw, params }: Call): Promise<Response> {
  return json(await removeProvider(gw, params.provider_id!));
}

/** Removes a provider (the API's DELETE and the console's button). */
export async function removeProvider(gw: Gateway, id: string) {
  if (!(await gw.store.deleteProvider(id))) throw new AthError("NOT_FOUND", `Provider '${id}' is not configured`, { provider_id: id });
  await audit(gw, "provider.deleted", { provider_id: id });
  return { provider_id: id, deleted: true };
}

// internal

/**
 * The body without what a GET answer carries besides the configuration, so GET → edit → PUT round-trips: `source`
 * is dropped and the masked `client_secret` means "keep the stored one". Any other unknown field is refused by the
 * schema, naming it (a misspelt `scope_rule` would otherwise leave the provider without rules).
 */
function editable(body: Record<string, unknown>): Record<string, unknown> {
  const { source: _source, ...rest } = body;
  if (rest.client_secret === MASKED_SECRET) delete rest.client_secret;
  return rest;
}

/** The body with its `template` filled in (DESIGN §11); an unknown template is a 400 naming it and the known ones. */
function withTemplate(providerId: unknown, body: Record<string, unknown>): Record<string, unknown> {
  try {
    return applyTemplate(body);
  } catch (e) {
    if (!(e instanceof UnknownTemplateError)) throw e;
    const name = typeof providerId === "string" ? `Provider '${providerId}': ` : "";
    throw new AthError("INVALID_REQUEST", `Invalid request: ${name}${e.message}`, { field: e.field, template: e.template, known_templates: e.known });
  }
}
