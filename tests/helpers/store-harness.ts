/**
 * Test harnesses for the Store conformance suite: a fresh SQLite file or a fresh PostgreSQL schema per test,
 * a raw row counter to see tables shrink, and record fixtures with unique ids.
 */
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { META_TABLE, migrations, type Dialect } from "../../src/store/migrations.ts";
import { openPostgresStore } from "../../src/store/postgres.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import type { AgentRecord, GrantRecord, SessionRecord, Store, TokenRecord } from "../../src/store/types.ts";

export interface Harness {
  /** Opens another Store on the same database (a second instance, or a reopen after close). */
  open(): Promise<Store>;
  /** PostgreSQL: the schema this harness's stores live in. */
  schema?: string;
  /** Rows in `table`, counted over a separate connection. */
  count(table: string): Promise<number>;
  /** Runs one statement over a separate connection and returns its rows. */
  query(sql: string): Promise<Record<string, unknown>[]>;
  /** Runs statements (`;`-separated) over a separate connection, in one transaction. */
  exec(sql: string): Promise<void>;
  dispose(): Promise<void>;
}

export const T0 = 1_700_000_000_000;

/** The PostgreSQL the tests use; ATH_TEST_POSTGRES_URL points elsewhere, or "" leaves PostgreSQL out. */
export const PG_URL = process.env.ATH_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export function sqliteHarness(): Harness {
  const dir = mkdtempSync(join(tmpdir(), "ath-store-"));
  const path = join(dir, "ath.db");
  const opened = tracker();
  return {
    open: async () => opened.add(openSqliteStore(path)),
    async count(table) {
      const db = new Database(path, { readonly: true });
      try {
        return db.query<{ n: number }, []>(`SELECT count(*) AS n FROM ${table}`).get()?.n ?? -1;
      } finally {
        db.close();
      }
    },
    async query(sql) {
      const db = new Database(path, { create: true });
      try {
        return db.query<Record<string, unknown>, []>(sql).all();
      } finally {
        db.close();
      }
    },
    async exec(sql) {
      const db = new Database(path, { create: true });
      try {
        db.transaction(() => db.exec(sql))();
      } finally {
        db.close();
      }
    },
    async dispose() {
      await opened.closeAll();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function postgresHarness(url: string): Harness {
  const schema = `ath_test_${crypto.randomUUID().replaceAll("-", "")}`;
  const admin = new SQL(url, { max: 1 });
  const opened = tracker();
  return {
    schema,
    open: async () => opened.add(await openPostgresStore(url, { schema, max: 8 })),
    async count(table) {
      const [row] = await admin.unsafe(`SELECT count(*)::int AS n FROM "${schema}".${table}`);
      return Number(row.n);
    },
    async query(sql) {
      return admin.begin(async (tx) => {
        await tx.unsafe(`SET LOCAL search_path TO "${schema}"`);
        return [...(await tx.unsafe(sql))] as Record<string, unknown>[];
      });
    },
    async exec(sql) {
      await admin.begin(async (tx) => {
        await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS "${schema}"; SET LOCAL search_path TO "${schema}"`);
        await tx.unsafe(sql);
      });
    },
    async dispose() {
      await opened.closeAll();
      await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.close();
    },
  };
}

/**
 * A database as an older ath left it: the first `version` migrations applied and `rows` written by that schema; the
 * harness's `open` migrates it to this build's schema (the upgrade under test).
 */
export async function harnessAt(make: () => Harness, dialect: Dialect, version: number, rows: string[]): Promise<Harness> {
  const h = make();
  await h.exec([META_TABLE, ...migrations(dialect).slice(0, version), `INSERT INTO meta (key, value) VALUES ('schema_version', '${version}')`, ...rows].join(";\n"));
  return h;
}

let seq = 0;
const uid = (prefix: string) => `${prefix}_${++seq}_${crypto.randomUUID().slice(0, 8)}`;

export function agentFixture(over: Partial<AgentRecord> = {}): AgentRecord {
  return {
    client_id: uid("ath_cl"),
    client_secret_hash: "a".repeat(64),
    agent_id: `https://agents.example/${uid("agent")}`,
    developer: { name: "Dev", id: "dev-1", contact: "dev@example.com" },
    purpose: "tests",
    redirect_uris: ["http://127.0.0.1/callback"],
    status: "approved",
    approvals: [{ provider_id: "github", approved_scopes: ["repo"], denied_scopes: ["admin"], denial_reason: "policy" }],
    approval_expires: T0 + 86_400_000,
    created_at: T0,
    ...over,
  };
}

export function sessionFixture(agent: AgentRecord, over: Partial<SessionRecord> = {}): SessionRecord {
  return {
    session_id: uid("ath_sess"),
    handle: uid("h"),
    client_id: agent.client_id,
    agent_id: agent.agent_id,
    provider_id: "github",
    requested_scopes: ["repo", "read:user"],
    agent_state: "agent-state-0123456789",
    user_redirect_uri: null,
    resource: null,
    pkce_verifier_sealed: "sealed-verifier",
    code_challenge: "challenge",
    upstream_state: uid("st"),
    status: "pending",
    binding_hash: null,
    code_hash: null,
    user_id: null,
    consented_scopes: null,
    grant_id: null,
    created_at: T0,
    expires_at: T0 + 600_000,
    ...over,
  };
}

export function tokenFixture(agent: AgentRecord, over: Partial<TokenRecord> = {}): TokenRecord {
  return {
    token_hash: uid("tokhash"),
    token_id: uid("ath_tkid"),
    client_id: agent.client_id,
    agent_id: agent.agent_id,
    user_id: "user-1",
    provider_id: "github",
    scopes: ["repo"],
    grant_id: null,
    created_at: T0,
    expires_at: T0 + 3_600_000,
    revoked_at: null,
    ...over,
  };
}

export function grantFixture(over: Partial<GrantRecord> = {}): GrantRecord {
  return {
    grant_id: uid("grant"),
    provider_id: "github",
    user_id: "user-1",
    agent_id: "https://agents.example/a",
    access_token_sealed: "sealed-access-0",
    refresh_token_sealed: "sealed-refresh-0",
    expires_at: T0 + 3_600_000,
    scope: ["repo"],
    status: "live",
    version: 0,
    refresh_owner: null,
    refresh_lease_until: null,
    created_at: T0,
    updated_at: T0,
    ...over,
  };
}

// internal

function tracker() {
  const live = new Set<Store>();
  return {
    add(store: Store): Store {
      const close = store.close.bind(store);
      const wrapped: Store = {
        ...store,
        close: async () => {
          live.delete(wrapped);
          await close();
        },
      };
      live.add(wrapped);
      return wrapped;
    },
    async closeAll() {
      await Promise.all([...live].map((s) => s.close()));
    },
  };
}
