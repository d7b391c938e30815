/** `ath admin webhooks list|add|remove` (DESIGN §20): signed POSTs of agent, token and approval events. */
import { addWebhook, listWebhooks, removeWebhook } from "../../../agent/flows/admin.ts";
import { usageError } from "../../kit/errors.ts";
import type { Invocation } from "../../kit/flags.ts";
import { setup, str, table } from "./common.ts";

export async function webhooksList({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await listWebhooks(c.target);
  if (c.out.json) return c.out.doc(answer);
  table(c.out, ["WEBHOOK", "URL", "EVENTS", "CREATED"], answer.webhooks.map((w) => [w.webhook_id, w.url, w.events.join(","), w.created_at]));
}

/** The signing secret comes on stdin, never as a flag (it would sit in shell history and `ps`). */
export async function webhooksAdd({ args: a, format }: Invocation): Promise<void> {
  const events = str(a.events).split(",").map((e) => e.trim()).filter(Boolean);
  const c = await setup(a, format);
  if (c.deps.stdinTTY) c.deps.stderr("signing secret, at least 16 characters (then Enter, Ctrl-D): ");
  const secret = (await c.deps.readStdin()).trim();
  if (secret === "") throw usageError("pipe the webhook's signing secret on stdin (at least 16 characters)");
  const answer = await addWebhook(c.target, { url: str(a.url), events, secret });
  if (c.out.json) return c.out.doc(answer);
  c.out.line(answer.webhook_id);
}

export async function webhooksRemove({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await removeWebhook(c.target, str(a.id));
  if (c.out.json) return c.out.doc(answer);
  c.out.success(`webhook ${answer.webhook_id} removed`);
}
