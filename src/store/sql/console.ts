/** The admin console's sign-in sessions (DESIGN §9): looked up by the hash of the id the browser's cookie holds. */
import type { Store } from "../types.ts";
import type { Driver } from "./driver.ts";

export function consoleQueries(db: Driver): Pick<Store, "createConsoleSession" | "getConsoleSession" | "deleteConsoleSession"> {
  return {
    async createConsoleSession(s) {
      await db.run("DELETE FROM console_sessions WHERE expires_at <= ?", [s.created_at]);
      await db.run("INSERT INTO console_sessions (id_hash, created_at, expires_at) VALUES (?, ?, ?)", [s.id_hash, s.created_at, s.expires_at]);
    },
    async getConsoleSession(idHash, now) {
      const [row] = await db.all("SELECT * FROM console_sessions WHERE id_hash = ? AND expires_at > ?", [idHash, now]);
      return row ? { id_hash: String(row.id_hash), created_at: Number(row.created_at), expires_at: Number(row.expires_at) } : null;
    },
    async deleteConsoleSession(idHash) {
      await db.run("DELETE FROM console_sessions WHERE id_hash = ?", [idHash]);
    },
  };
}
