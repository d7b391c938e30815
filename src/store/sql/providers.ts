/** Providers: the config as JSON text, the client secret sealed beside it. */
import { toProvider } from "../rows.ts";
import type { Store } from "../types.ts";
import { type Driver, one } from "./driver.ts";

export function providerQueries(db: Driver): Pick<Store, "upsertProvider" | "getProvider" | "listProviders" | "deleteProvider"> {
  return {
    async upsertProvider(p) {
      await db.run(
        `INSERT INTO providers (provider_id, config, client_secret_sealed, source, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (provider_id) DO UPDATE SET config = excluded.config,
           client_secret_sealed = excluded.client_secret_sealed, source = excluded.source, updated_at = excluded.updated_at`,
        [p.provider_id, JSON.stringify(p.config), p.client_secret_sealed, p.source, p.updated_at],
      );
    },
    async getProvider(providerId) {
      return one(db, "SELECT * FROM providers WHERE provider_id = ?", [providerId], toProvider);
    },
    async listProviders() {
      return (await db.all("SELECT * FROM providers ORDER BY provider_id")).map(toProvider);
    },
    async deleteProvider(providerId) {
      return (await db.run("DELETE FROM providers WHERE provider_id = ?", [providerId])) === 1;
    },
  };
}
