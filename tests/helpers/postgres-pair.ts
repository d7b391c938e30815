/**
 * Two `ath serve` processes on one PostgreSQL database (DESIGN §6), for what must hold across instances: a schema of
 * their own (`?schema=`, dropped by `stop`), one master key through ATH_MASTER_KEY, the real oidc-provider and the
 * sample API, and the sample mail provider. Started together: the migrations take turns behind the advisory lock.
 */
import { SQL } from "bun";
import { startGateway, type Gateway } from "./gateway.ts";
import { freePort } from "./net.ts";
import { PG_URL } from "./store-harness.ts";
import { startUpstreamApi, type UpstreamApi } from "./upstream-api.ts";
import { startUpstreamAuth, type UpstreamAuth } from "./upstream-auth.ts";
import { mailProvider } from "./world.ts";

export interface PostgresPair {
  auth: UpstreamAuth;
  api: UpstreamApi;
  a: Gateway;
  b: Gateway;
  /** The schema both instances use. */
  schema: string;
  stop(): Promise<void>;
}

export async function startPostgresPair(
  o: {
    accessTokenTtl?: number;
    extraArgs?: string[];
    mail?: Record<string, unknown>;
    providers?: (auth: UpstreamAuth, api: UpstreamApi) => Promise<Record<string, Record<string, unknown>>>;
  } = {},
): Promise<PostgresPair> {
  const schema = `ath_e2e_${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex")}`;
  const portA = await freePort();
  const auth = await startUpstreamAuth({ redirectUris: [`http://127.0.0.1:${portA}/ath/callback`], accessTokenTtl: o.accessTokenTtl });
  const api = await startUpstreamApi(auth);
  const db = new URL(PG_URL);
  db.searchParams.set("schema", schema);
  const env = { ATH_MASTER_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex") };
  const providers = { mail: mailProvider(auth, api, o.mail), ...(await o.providers?.(auth, api)) };
  const common = { providers, env, extraArgs: ["--db", db.href, ...(o.extraArgs ?? [])] };
  const [a, b] = await Promise.all([startGateway({ ...common, port: portA }), startGateway(common)]);
  return {
    auth,
    api,
    a,
    b,
    schema,
    async stop() {
      await a.cleanup();
      await b.cleanup();
      await api.stop();
      await auth.stop();
      const sql = new SQL(PG_URL);
      try {
        await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await sql.close();
      }
    },
  };
}
