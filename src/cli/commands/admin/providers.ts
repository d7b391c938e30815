/** `ath admin providers list|get|add|set|remove`. */
import { addProvider, getProvider, listProviders, removeProvider, setProvider } from "../../../agent/flows/admin.ts";
import type { Invocation } from "../../kit/flags.ts";
import { readEntry, setup, show, str, table, type Args } from "./common.ts";

export async function providersList({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await listProviders(c.target);
  if (c.out.json) return c.out.doc(answer);
  const rows = answer.providers.map((p) => [p.provider_id, str(p.display_name), p.source, (p.available_scopes ?? []).join(",")]);
  table(c.out, ["PROVIDER", "NAME", "SOURCE", "SCOPES"], rows);
}

export async function providersGet({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  show(c.out, await getProvider(c.target, str(a.id)));
}

export async function providersAdd({ args: a, format }: Invocation): Promise<void> {
  const body = await readEntry(str(a.file));
  const c = await setup(a, format);
  const answer = await addProvider(c.target, body);
  if (c.out.json) return c.out.doc(answer);
  c.out.success(`provider ${answer.provider_id} added`);
}

export async function providersSet({ args: a, format }: Invocation): Promise<void> {
  const body = await readEntry(str(a.file));
  const c = await setup(a, format);
  const answer = await setProvider(c.target, str(a.id), body);
  if (c.out.json) return c.out.doc(answer);
  c.out.success(`provider ${answer.provider_id} saved`);
}

export async function providersRemove({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await removeProvider(c.target, str(a.id));
  if (c.out.json) return c.out.doc(answer);
  c.out.success(`provider ${str(a.id)} removed`);
}
