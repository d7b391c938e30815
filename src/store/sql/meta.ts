/** The meta table: schema version, the generated admin token's hash, … */
import type { Store } from "../types.ts";
import { type Driver, one } from "./driver.ts";

export function metaQueries(db: Driver): Pick<Store, "getMeta" | "setMeta" | "setMetaIfAbsent"> {
  return {
    async getMeta(key) {
      return one(db, "SELECT value FROM meta WHERE key = ?", [key], (r) => String(r.value));
    },
    async setMeta(key, value) {
      await db.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [key, value]);
    },
    async setMetaIfAbsent(key, value) {
      await db.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", [key, value]);
      return (await one(db, "SELECT value FROM meta WHERE key = ?", [key], (r) => String(r.value)))!;
    },
  };
}
