/** `ath admin login` / `logout`: save or forget the admin token of a gateway (checked with the gateway first). */
import { login as saveLogin, logout as forget } from "../../../agent/flows/admin.ts";
import type { Invocation } from "../../kit/flags.ts";
import { setup, type Args } from "./common.ts";

export async function login({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format, { tokenFromLogin: true });
  await saveLogin(c);
  if (c.out.json) return c.out.doc({ gateway: c.target.base, logged_in: true });
  c.out.success(`admin token saved for ${c.target.base}`);
}

export async function logout({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format, { noToken: true });
  const had = await forget(c);
  if (c.out.json) return c.out.doc({ gateway: c.target.base, logged_out: had });
  c.out.success(had ? `admin token of ${c.target.base} forgotten` : `no admin token was saved for ${c.target.base}`);
}
