/**
 * The MCP front door's rows (DESIGN §18) on SQLite and PostgreSQL: a client round-trips and records its first
 * completed authorization; a code is spent once among racers on two store instances, and not after its expiry; the
 * approval an MCP resend spends is found by (client, user, provider, digest), approved first. (Its refresh tokens are
 * the agents': conformance.test.ts.)
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { ApprovalRecord, Store } from "../../../src/store/types.ts";
import { type Harness, PG_URL, T0, postgresHarness, sqliteHarness } from "../../helpers/store-harness.ts";

suite("SQLite", sqliteHarness);
if (PG_URL) suite("PostgreSQL", () => postgresHarness(PG_URL));

function suite(name: string, makeHarness: () => Harness) {
  describe(`MCP front door rows — ${name}`, () => {
    let h: Harness;
    let a: Store;
    let b: Store;
    beforeEach(async () => {
      h = makeHarness();
      a = await h.open();
      b = await h.open();
    });
    afterEach(() => h.dispose());

    test("a registered client round-trips; an unknown one is null; its first completed authorization is recorded once", async () => {
      const metadata = { client_name: "VS Code", redirect_uris: ["http://127.0.0.1/cb"], grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "none" as const };
      await a.createMcpClient({ client_id: "mcp_one", client_secret_hash: null, metadata, created_at: T0, authorized_at: null });
      expect(await b.getMcpClient("mcp_one")).toEqual({ client_id: "mcp_one", client_secret_hash: null, metadata, created_at: T0, authorized_at: null });
      expect(await b.getMcpClient("mcp_two")).toBeNull();
      await Promise.all([a.markMcpClientAuthorized("mcp_one", T0 + 10), b.markMcpClientAuthorized("mcp_one", T0 + 10)]);
      await b.markMcpClientAuthorized("mcp_one", T0 + 20);
      expect((await a.getMcpClient("mcp_one"))?.authorized_at).toBe(T0 + 10);
    });

    test("a code is set once and spent once among racers, never after it expires", async () => {
      const request = { session_id: "ath_sess_1", client_id: "mcp_one", agent_client_id: "mcp_one", redirect_uri: "http://127.0.0.1/cb", state: "s", code_challenge: "c".repeat(43), resource: "https://gw/mcp/x", code_hash: null, created_at: T0, expires_at: T0 + 600_000 };
      await a.createMcpAuthorization(request);
      expect(await a.setMcpAuthorizationCode("ath_sess_1", "hash1", T0 + 600_000)).toBe(true);
      expect(await b.setMcpAuthorizationCode("ath_sess_1", "hash2", T0 + 600_000)).toBe(false);
      const spent = await Promise.all([a, b, a, b].map((s) => s.consumeMcpCode("hash1", T0 + 1000)));
      expect(spent.filter((r) => r !== null).map((r) => r!.session_id)).toEqual(["ath_sess_1"]);
      await a.createMcpAuthorization({ ...request, session_id: "ath_sess_2" });
      await a.setMcpAuthorizationCode("ath_sess_2", "hash3", T0 + 5000);
      expect(await b.consumeMcpCode("hash3", T0 + 5000)).toBeNull();
    });

    test("a session is kept by key with its client and person, replaced when the session is opened again", async () => {
      const row = { session_key: "k1", client_id: "mcp_one", user_id: "alice", url_elicitation: true, held: null, created_at: T0 };
      await a.recordMcpSession(row);
      expect(await b.getMcpSession("k1")).toEqual(row);
      await b.recordMcpSession({ ...row, url_elicitation: false, created_at: T0 + 1 });
      expect(await a.getMcpSession("k1")).toEqual({ ...row, url_elicitation: false, created_at: T0 + 1 });
      expect(await a.getMcpSession("k2")).toBeNull();
      // what ath keeps of a session it holds changes only on such a session, and a deleted session is gone
      expect(await a.updateMcpSessionHeld("k1", "{}")).toBe(false);
      await a.recordMcpSession({ ...row, session_key: "k3", held: '{"logLevel":null}' });
      expect(await b.updateMcpSessionHeld("k3", '{"logLevel":"info"}')).toBe(true);
      expect((await a.getMcpSession("k3"))!.held).toBe('{"logLevel":"info"}');
      await b.deleteMcpSession("k3");
      expect(await a.getMcpSession("k3")).toBeNull();
    });

    test("an upstream session ath holds is found by any instance, and dropping an older one keeps a newer", async () => {
      const row = { session_key: "u1", session_sealed: "sealed-1", opened: "{}", created_at: T0, used_at: T0 };
      await a.putMcpUpstreamSession(row);
      expect(await b.getMcpUpstreamSession("u1", T0 + 5)).toEqual({ ...row, used_at: T0 + 5 });
      await b.putMcpUpstreamSession({ ...row, session_sealed: "sealed-2", created_at: T0 + 6, used_at: T0 + 6 });
      await a.dropMcpUpstreamSession("u1", "sealed-1");
      expect((await a.getMcpUpstreamSession("u1", T0 + 7))!.session_sealed).toBe("sealed-2");
      await b.dropMcpUpstreamSession("u1", "sealed-2");
      expect(await a.getMcpUpstreamSession("u1", T0 + 8)).toBeNull();
    });

    test("an input ath awaits is answered once and taken once, on any instance", async () => {
      await a.openMcpSessionInput("i1", T0);
      expect(await b.takeMcpSessionInput("i1")).toBeNull();
      expect(await b.answerMcpSessionInput("i2", "x")).toBe(false);
      const answered = await Promise.all([a, b, a].map((s, n) => s.answerMcpSessionInput("i1", `answer-${n}`)));
      expect(answered.filter(Boolean).length).toBe(1);
      const taken = await Promise.all([a, b].map((s) => s.takeMcpSessionInput("i1")));
      expect(taken.filter((t) => t !== null).length).toBe(1);
      expect(await a.takeMcpSessionInput("i1")).toBeNull();
    });

    test("the approval an MCP resend spends: same client, user, provider and digest, unexpired, approved first", async () => {
      const approval = (id: string, status: ApprovalRecord["status"], over: Partial<ApprovalRecord> = {}): ApprovalRecord => ({
        approval_id: id, client_id: "mcp_one", agent_id: "mcp:mcp_one", user_id: "alice", provider_id: "mail", token_id: "t", approver: "user",
        method: "MCP", path: "/tools/call/send", query: "", digest: "d1", body_sealed: null, headers_sealed: null, body_bytes: 0, content_type: null, status,
        decided_by: null, decided_at: null, used_at: null, created_at: T0, expires_at: T0 + 300_000, ...over,
      });
      await a.createApproval(approval("ath_apr_pending", "pending", { created_at: T0 + 5 }));
      await a.createApproval(approval("ath_apr_approved", "approved"));
      await a.createApproval(approval("ath_apr_other_user", "approved", { user_id: "bob" }));
      await a.createApproval(approval("ath_apr_used", "used", { created_at: T0 + 9 }));
      const m = { client_id: "mcp_one", user_id: "alice", provider_id: "mail", digest: "d1" };
      expect((await b.findMcpApproval(m, T0 + 10))!.approval_id).toBe("ath_apr_approved");
      expect(await b.findMcpApproval({ ...m, digest: "d2" }, T0 + 10)).toBeNull();
      expect(await b.findMcpApproval(m, T0 + 300_000)).toBeNull();
    });
  });
}
