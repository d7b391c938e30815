/**
 * The rows of MCP's two wires at the front door (DESIGN §21): what ath keeps of a session it holds itself, the upstream
 * sessions it holds for stateless clients (one per provider, person and client; a replacement never deletes a newer
 * one), and the answers a client posts to requests ath pushed — each set once, taken once.
 */
import type { McpStore } from "../mcp-types.ts";
import { num, str, strOrNull } from "../rows.ts";
import { type Driver, one } from "./driver.ts";

/** Upstream sessions unused this long are dropped when another is recorded; inputs never answered, after a day. */
const UPSTREAM_KEEP_MS = 7 * 24 * 3600 * 1000;
const INPUT_KEEP_MS = 24 * 3600 * 1000;

type WireQueries = Pick<
  McpStore,
  | "updateMcpSessionHeld"
  | "deleteMcpSession"
  | "getMcpUpstreamSession"
  | "putMcpUpstreamSession"
  | "dropMcpUpstreamSession"
  | "openMcpSessionInput"
  | "answerMcpSessionInput"
  | "takeMcpSessionInput"
>;

export function mcpWireQueries(db: Driver): WireQueries {
  return {
    async updateMcpSessionHeld(key, held) {
      return (await db.run("UPDATE mcp_sessions SET held = ? WHERE session_key = ? AND held IS NOT NULL", [held, key])) === 1;
    },
    async deleteMcpSession(key) {
      await db.run("DELETE FROM mcp_sessions WHERE session_key = ?", [key]);
    },
    getMcpUpstreamSession: (key, now) =>
      one(db, "UPDATE mcp_upstream_sessions SET used_at = ? WHERE session_key = ? RETURNING *", [now, key], (r) => ({
        session_key: str(r.session_key),
        session_sealed: str(r.session_sealed),
        opened: str(r.opened),
        created_at: num(r.created_at),
        used_at: num(r.used_at),
      })),
    async putMcpUpstreamSession(s) {
      await db.run("DELETE FROM mcp_upstream_sessions WHERE used_at < ?", [s.used_at - UPSTREAM_KEEP_MS]);
      await db.run(
        `INSERT INTO mcp_upstream_sessions (session_key, session_sealed, opened, created_at, used_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (session_key) DO UPDATE SET session_sealed = excluded.session_sealed, opened = excluded.opened, created_at = excluded.created_at, used_at = excluded.used_at`,
        [s.session_key, s.session_sealed, s.opened, s.created_at, s.used_at],
      );
    },
    async dropMcpUpstreamSession(key, sealed) {
      await db.run("DELETE FROM mcp_upstream_sessions WHERE session_key = ? AND session_sealed = ?", [key, sealed]);
    },
    async openMcpSessionInput(key, now) {
      await db.run("DELETE FROM mcp_session_inputs WHERE created_at < ?", [now - INPUT_KEEP_MS]);
      await db.run("INSERT INTO mcp_session_inputs (input_key, answer_sealed, created_at) VALUES (?, NULL, ?) ON CONFLICT (input_key) DO NOTHING", [key, now]);
    },
    async answerMcpSessionInput(key, answer) {
      return (await db.run("UPDATE mcp_session_inputs SET answer_sealed = ? WHERE input_key = ? AND answer_sealed IS NULL", [answer, key])) === 1;
    },
    takeMcpSessionInput: (key) =>
      one(db, "DELETE FROM mcp_session_inputs WHERE input_key = ? AND answer_sealed IS NOT NULL RETURNING answer_sealed", [key], (r) => strOrNull(r.answer_sealed)).then((v) => v ?? null),
  };
}
