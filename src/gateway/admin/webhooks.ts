/** The admin API for webhooks (DESIGN §20): subscribe (201), list, remove. The secret goes in sealed, never comes out. */
import { AthError } from "../../protocol/index.ts";
import type { Call } from "../context.ts";
import { subscribe, WebhookRequest, webhookView } from "../domain/webhooks.ts";
import { parseWith, readObject } from "../http/request.ts";
import { json } from "../http/response.ts";

export async function create(call: Call): Promise<Response> {
  const input = parseWith(WebhookRequest, await readObject(call, { form: false }));
  return json(webhookView(await subscribe(call.gw, input)), 201);
}

export async function list({ gw }: Call): Promise<Response> {
  return json({ webhooks: (await gw.store.listWebhooks()).map(webhookView) });
}

export async function remove({ gw, params }: Call): Promise<Response> {
  const id = params.webhook_id!;
  if (!(await gw.store.deleteWebhook(id))) throw new AthError("NOT_FOUND", `No webhook '${id}'`, { webhook_id: id });
  return json({ webhook_id: id, deleted: true });
}
