/**
 * Migration 13 (DESIGN §17, §18): MCP clients' refresh tokens, written by the old schema into mcp_refresh_tokens, move
 * into the one refresh_tokens table on SQLite and PostgreSQL alike — live, spent and revoked rows keep their state, a row
 * from before migration 12 gets its family's end, an orphan (its agent record gone) is dropped, a metadata-document
 * client keeps its URL client_id, the access tokens join their families — and the old table is gone. Registered
 * clients that had started an authorization count as authorized; one that never did is swept. Then, through the
 * gateway's own /oauth/token, a refresh token issued before the upgrade rotates after it, and its spent predecessor
 * presented again kills the family.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { hashSecret } from "../../../src/gateway/crypto/secrets.ts";
import { migrations } from "../../../src/store/migrations.ts";
import type { Store } from "../../../src/store/types.ts";
import { inProcessGateway } from "../../helpers/in-process.ts";
import { ScriptedProvider } from "../../helpers/scripted-provider.ts";
import { type Harness, harnessAt, PG_URL, postgresHarness, sqliteHarness } from "../../helpers/store-harness.ts";

/** The schema version the old rows were written at: the last one with mcp_refresh_tokens. */
const OLD_VERSION = 12;
const NOW = Date.now() - 60_000;
const HOUR = 3_600_000;
const RESOURCE = "https://gateway.test/mcp/mail";
const DOC_CLIENT = "https://app.example/client.json";
/** The plaintexts behind the old rows' hashes: what the MCP client holds. */
const LIVE = "ath_rt_old-live-0123456789";
const SPENT = "ath_rt_old-spent-0123456789";
const REVOKED = "ath_rt_old-revoked-0123456789";

const q = (v: string | number | null) => (v === null ? "NULL" : typeof v === "number" ? String(v) : `'${v}'`);
const agent = (clientId: string) =>
  `INSERT INTO agents (client_id, client_secret_hash, agent_id, developer, status, approvals, approval_expires, created_at)
     VALUES ('${clientId}', 'h', 'mcp:${clientId}', '{"name":"Test MCP Client","id":"127.0.0.1"}', 'approved',
       '[{"provider_id":"mail","approved_scopes":["mail:read","mail:send"],"denied_scopes":[]}]', ${NOW + 100 * 24 * HOUR}, ${NOW - HOUR})`;
const client = (clientId: string) =>
  `INSERT INTO mcp_clients (client_id, client_secret_hash, metadata, created_at) VALUES ('${clientId}', NULL,
     '{"client_name":"Test MCP Client","redirect_uris":["http://127.0.0.1:33418/cb"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}',
     ${NOW - 2 * 24 * HOUR})`;
const token = (hash: string, clientId: string) =>
  `INSERT INTO tokens (token_hash, token_id, client_id, agent_id, user_id, provider_id, scopes, grant_id, created_at, expires_at)
     VALUES ('${hash}', 'ath_tkid_${hash}', '${clientId}', 'mcp:${clientId}', 'alice', 'mail', '["mail:read"]', 'grant-1', ${NOW - HOUR}, ${NOW + HOUR})`;
function mcpRefresh(o: { hash: string; family: string; client?: string; agent?: string; access: string; status: string; spent_at?: number; family_expires_at?: number | null }) {
  const agentId = o.agent ?? "mcp_live";
  return `INSERT INTO mcp_refresh_tokens (refresh_hash, family_id, client_id, agent_client_id, agent_id, user_id, provider_id, resource, scopes,
      grant_id, access_token_hash, status, spent_at, created_at, expires_at, family_expires_at)
    VALUES ('${o.hash}', '${o.family}', '${o.client ?? agentId}', '${agentId}', 'mcp:${agentId}', 'alice', 'mail', '${RESOURCE}', '["mail:read"]',
      'grant-1', '${o.access}', '${o.status}', ${q(o.spent_at ?? null)}, ${NOW - HOUR}, ${NOW + 24 * HOUR}, ${q(o.family_expires_at === undefined ? NOW + 30 * 24 * HOUR : o.family_expires_at)})`;
}

/** What an old gateway (schema 12) wrote: an MCP client's families in every state, and an ATH agent's family. */
const OLD_ROWS = [
  agent("mcp_live"),
  agent("mcp_doc_x"),
  agent("ath_agent"),
  client("mcp_live"),
  client("mcp_never"),
  `INSERT INTO grants (grant_id, provider_id, user_id, agent_id, access_token_sealed, refresh_token_sealed, expires_at, scope, status, version, created_at, updated_at)
     VALUES ('grant-1', 'mail', 'alice', 'mcp:mcp_live', 'sealed', NULL, ${NOW + HOUR}, '["mail:read"]', 'live', 1, ${NOW - HOUR}, ${NOW - HOUR})`,
  token("tok-spent", "mcp_live"),
  token("tok-live", "mcp_live"),
  token("tok-revoked", "mcp_live"),
  mcpRefresh({ hash: hashSecret(SPENT), family: "f1", access: "tok-spent", status: "spent", spent_at: NOW - 30 * 60_000 }),
  mcpRefresh({ hash: hashSecret(LIVE), family: "f1", access: "tok-live", status: "live" }),
  mcpRefresh({ hash: hashSecret(REVOKED), family: "f2", access: "tok-revoked", status: "revoked" }),
  mcpRefresh({ hash: "before-12", family: "f3", access: "tok-x", status: "live", family_expires_at: null }),
  mcpRefresh({ hash: "orphan", family: "f4", agent: "mcp_gone", access: "tok-y", status: "live" }),
  mcpRefresh({ hash: "doc", family: "f5", agent: "mcp_doc_x", client: DOC_CLIENT, access: "tok-z", status: "live" }),
  `INSERT INTO refresh_tokens (refresh_hash, family_id, client_id, agent_id, user_id, provider_id, scopes, grant_id, jkt, family_expires_at, expires_at, created_at)
     VALUES ('agent-rt', 'fam_agent', 'ath_agent', 'mcp:ath_agent', 'bob', 'mail', '["mail:read"]', NULL, 'thumb', ${NOW + 24 * HOUR}, ${NOW + HOUR}, ${NOW - HOUR})`,
];

async function expectMoved(store: Store, oldTableGone: () => Promise<boolean>) {
  const started = Date.now();
  expect(await store.getMeta("schema_version")).toBe(String(migrations("sqlite").length));
  const common = { client_id: "mcp_live", oauth_client_id: "mcp_live", resource: RESOURCE, agent_id: "mcp:mcp_live", user_id: "alice", provider_id: "mail", scopes: ["mail:read"], grant_id: "grant-1", jkt: null };
  expect(await store.getRefreshToken(hashSecret(LIVE))).toEqual({
    ...common, refresh_hash: hashSecret(LIVE), family_id: "f1", family_expires_at: NOW + 30 * 24 * HOUR, expires_at: NOW + 24 * HOUR, created_at: NOW - HOUR, spent_at: null, revoked_at: null,
  });
  expect(await store.getRefreshToken(hashSecret(SPENT))).toMatchObject({ ...common, family_id: "f1", spent_at: NOW - 30 * 60_000, revoked_at: null });
  const revoked = await store.getRefreshToken(hashSecret(REVOKED));
  expect(revoked).toMatchObject({ family_id: "f2", spent_at: null });
  // the old table kept no revocation time: the migration's own (seconds, in SQL) stands in
  expect(revoked!.revoked_at).toBeGreaterThanOrEqual(started - 60_000);
  expect(revoked!.revoked_at).toBeLessThanOrEqual(Date.now());
  expect(await store.getRefreshToken("before-12")).toMatchObject({ family_expires_at: NOW + 24 * HOUR, expires_at: NOW + 24 * HOUR });
  expect(await store.getRefreshToken("orphan")).toBeNull();
  expect(await store.getRefreshToken("doc")).toMatchObject({ client_id: "mcp_doc_x", oauth_client_id: DOC_CLIENT, resource: RESOURCE });
  expect(await store.getRefreshToken("agent-rt")).toMatchObject({ client_id: "ath_agent", oauth_client_id: null, resource: null, jkt: "thumb" });
  for (const [hash, family] of [["tok-spent", "f1"], ["tok-live", "f1"], ["tok-revoked", "f2"]]) expect((await store.getToken(hash!))?.family_id).toBe(family);
  expect(await oldTableGone()).toBe(true);
  // a client that had started an authorization counts as authorized; one that never did is swept past retention
  expect((await store.getMcpClient("mcp_live"))?.authorized_at).toBe(NOW - 2 * 24 * HOUR);
  expect((await store.getMcpClient("mcp_never"))?.authorized_at).toBeNull();
  expect((await store.sweep(Date.now(), 24 * HOUR)).mcp_clients).toBe(1);
  expect(await store.getMcpClient("mcp_never")).toBeNull();
  expect((await store.getMcpClient("mcp_live"))?.client_id).toBe("mcp_live");
}

/** The gateway on the migrated store: the old live token rotates at /oauth/token; the old spent one is reuse. */
async function expectRotates(store: Store) {
  const p = new ScriptedProvider();
  const g = await inProcessGateway({ store, providers: { mail: p.config({ mcp: { url: `${p.origin}/api/mcp` } }) }, hosts: { [p.origin]: p.fetch } });
  try {
    const refresh = (refreshToken: string) =>
      g.fetch("/oauth/token", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: refreshToken, client_id: "mcp_live" }).toString(),
      });
    const rotated = await refresh(LIVE);
    expect(rotated.status).toBe(200);
    const next = (await rotated.json()) as { access_token: string; refresh_token: string; scope: string };
    expect(next).toMatchObject({ token_type: "Bearer", scope: "mail:read" });
    expect(await (await refresh(REVOKED)).json()).toEqual({ error: "invalid_grant", error_description: "the refresh token was revoked" });
    expect(await (await refresh(SPENT)).json()).toEqual({ error: "invalid_grant", error_description: "the refresh token was already used: its whole family is revoked" });
    expect((await g.gw.store.getToken(hashSecret(next.access_token)))?.revoked_at).not.toBeNull();
    expect((await g.gw.store.getToken("tok-live"))?.revoked_at).not.toBeNull();
    expect(await g.audited("refresh.reuse_detected")).toBe(1);
  } finally {
    await g.close();
  }
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe("migration 13: MCP clients' refresh tokens join refresh_tokens", () => {
  test("SQLite: a database at version 12 with MCP refresh families opens with them moved, their state kept, the old table gone", async () => {
    h = await harnessAt(sqliteHarness, "sqlite", OLD_VERSION, OLD_ROWS);
    const store = await h.open();
    await expectMoved(store, async () => (await h!.query("SELECT name FROM sqlite_master WHERE name = 'mcp_refresh_tokens'")).length === 0);
    await expectRotates(store);
  });

  test.skipIf(!PG_URL)("PostgreSQL: a schema at version 12 with MCP refresh families opens with them moved, their state kept, the old table gone", async () => {
    h = await harnessAt(() => postgresHarness(PG_URL), "postgres", OLD_VERSION, OLD_ROWS);
    const store = await h.open();
    await expectMoved(store, async () => (await h!.query("SELECT to_regclass('mcp_refresh_tokens') AS t"))[0]!.t === null);
    await expectRotates(store);
  });
});
