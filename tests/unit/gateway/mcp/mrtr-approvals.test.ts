/**
 * Approvals as multi-round-trip requests on the 2026-07-28 wire (DESIGN §21), in process in front of the reference MCP
 * server (the person's part — the approval page in a browser — is tests/browser/mcp-wire-2026.test.ts; here a decision
 * is made through the domain): an approval-held call answers `input_required` with ath's URL elicitation and its sealed
 * `ath1.` requestState, nothing sent; the retry before a decision gets the same round back; approved, it is sent
 * exactly once, whatever number of retries race; a tampered, foreign, expired, used or changed state is refused with
 * the pinned JSON-RPC errors, nothing sent. The upstream's own multi-round-trip passes through, its state kept inside
 * ath's round.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { decide, findApproval } from "../../../../src/gateway/domain/approvals.ts";
import { mcpGrant, mcpWorld, toolCall, type McpGrant, type McpWorld } from "../../../helpers/mcp-in-process.ts";

const URL_ELICITATION = { elicitation: { url: {} } };
let w: McpWorld;
let alice: McpGrant;

beforeEach(async () => {
  w = await mcpWorld({
    over: {
      approval_rules: [
        { match: ["MCP tools/call test_x_mcp_header"], approver: "user", ttl: 300 },
        { match: ["MCP tools/call test_input_required_result_request_state"], approver: "user", ttl: 300 },
      ],
    },
  });
  alice = await mcpGrant(w.g);
});
afterEach(() => w.close());

const call = (state?: string, args: Record<string, unknown> = { region: "us" }, o: { id?: number; grant?: McpGrant; inputs?: Record<string, unknown> } = {}) =>
  toolCall(w.g, (o.grant ?? alice).token, "test_x_mcp_header", args, {
    id: o.id ?? 1,
    capabilities: URL_ELICITATION,
    headers: typeof args.region === "string" ? { "mcp-param-region": args.region } : {},
    params: state === undefined ? {} : { requestState: state, inputResponses: { ath_approval: { action: "accept" }, ...o.inputs } },
  });
const reached = () => w.upstream.surface.seen.filter((s) => s.tool === "test_x_mcp_header").length;
const approve = async (id: string, how: "approve" | "deny" = "approve") => decide(w.g.gw, (await findApproval(w.g.gw, id))!, how, "user:alice");

describe("an approval-held call on the 2026 wire", () => {
  test("answers input_required: ath's URL elicitation to the approval page (elicitationId = the approval id) and an ath1. requestState; nothing is sent", async () => {
    const r = await call();
    expect(r.status).toBe(200);
    const round = r.json.result;
    expect(round.resultType).toBe("input_required");
    const ask = round.inputRequests.ath_approval;
    expect(ask.method).toBe("elicitation/create");
    expect(ask.params.mode).toBe("url");
    expect(ask.params.elicitationId).toMatch(/^ath_apr_/);
    expect(ask.params.url).toBe(`https://gateway.test/ath/approvals/${ask.params.elicitationId}`);
    expect(round.requestState).toStartWith("ath1.");
    expect(reached()).toBe(0);
  });

  test("a retry before the person decides gets the same round back — the same approval, the same state — and no new approval", async () => {
    const first = (await call()).json.result;
    const again = (await call(first.requestState)).json.result;
    expect(again).toEqual(first);
    const fresh = (await call(undefined, { region: "us" }, { id: 9 })).json.result;
    expect(fresh.inputRequests.ath_approval.params.elicitationId).toBe(first.inputRequests.ath_approval.params.elicitationId);
    expect(reached()).toBe(0);
  });

  test("approved, the retry runs exactly once: ten concurrent retries with one state make one upstream call; the others, and any replay, are request_state_used", async () => {
    const round = (await call()).json.result;
    await approve(round.inputRequests.ath_approval.params.elicitationId);
    const retries = await Promise.all(Array.from({ length: 10 }, (_, i) => call(round.requestState, { region: "us" }, { id: 100 + i })));
    const ran = retries.filter((r) => r.json.result?.content?.[0]?.text === "region=us");
    const used = retries.filter((r) => r.json.error?.data?.reason === "request_state_used");
    expect([ran.length, used.length]).toEqual([1, 9]);
    for (const u of used) expect([u.status, u.json.error.code, u.json.error.data.ath_error]).toEqual([200, -32602, "INVALID_REQUEST"]);
    expect(reached()).toBe(1);
    const replay = await call(round.requestState, { region: "us" }, { id: 200 });
    expect(replay.json.error?.data?.reason).toBe("request_state_used");
    expect(reached()).toBe(1);
  });

  test("a tampered, foreign or expired state, or params that changed, are refused with the pinned errors; nothing is sent", async () => {
    const round = (await call()).json.result;
    await approve(round.inputRequests.ath_approval.params.elicitationId);
    const reason = async (r: Promise<Awaited<ReturnType<typeof call>>>) => {
      const got = await r;
      return [got.json.error?.code, got.json.error?.data?.reason];
    };
    const s: string = round.requestState;
    expect(await reason(call(s + "x"))).toEqual([-32602, "request_state_invalid"]);
    expect(await reason(call(`${s.slice(0, 20)}${s[20] === "A" ? "B" : "A"}${s.slice(21)}`))).toEqual([-32602, "request_state_invalid"]);
    expect(await reason(call("ath1.v1.notsealed.atall"))).toEqual([-32602, "request_state_invalid"]);
    const bob = await mcpGrant(w.g, { clientId: alice.clientId }); // the same client, another person
    expect(await reason(call(s, { region: "us" }, { grant: bob }))).toEqual([-32602, "request_state_invalid"]);
    const other = await mcpGrant(w.g, { browser: alice.browser }); // the same person, another client
    expect(await reason(call(s, { region: "us" }, { grant: other }))).toEqual([-32602, "request_state_invalid"]);
    expect(await reason(call(s, { region: "eu" }))).toEqual([-32602, "request_changed"]);
    expect(await reason(call(s, { region: "us", level: 1 }))).toEqual([-32602, "request_changed"]);
    expect(reached()).toBe(0);
    w.g.clock.advance(301);
    expect(await reason(call(s))).toEqual([-32602, "request_state_invalid"]);
    expect(reached()).toBe(0);
  });

  test("denied, the retry is APPROVAL_DENIED and never sent", async () => {
    const round = (await call()).json.result;
    await approve(round.inputRequests.ath_approval.params.elicitationId, "deny");
    const r = await call(round.requestState);
    expect([r.json.error?.code, r.json.error?.data?.ath_error]).toEqual([-32001, "APPROVAL_DENIED"]);
    expect(reached()).toBe(0);
  });

  test("a client that declared no URL elicitation gets the 2025 wire's JSON-RPC error, and the same call sent again after the approval runs once", async () => {
    const held = await toolCall(w.g, alice.token, "test_x_mcp_header", { region: "us" }, { headers: { "mcp-param-region": "us" } });
    expect([held.json.error?.code, held.json.error?.data?.ath_error]).toEqual([-32001, "APPROVAL_REQUIRED"]);
    await approve(held.json.error.data.approval_id);
    const again = () => toolCall(w.g, alice.token, "test_x_mcp_header", { region: "us" }, { id: 5, headers: { "mcp-param-region": "us" } });
    expect((await again()).json.result?.content?.[0]?.text).toBe("region=us");
    expect((await again()).json.error?.data?.ath_error).toBe("APPROVAL_REQUIRED");
    expect(reached()).toBe(1);
  });
});

describe("the upstream's own multi-round-trip", () => {
  test("passes through untouched; a retry carrying the upstream's state that needs an approval keeps that state inside ath's, and the upstream gets it back", async () => {
    const tool = "test_input_required_result_request_state";
    const send = (params: Record<string, unknown>) => toolCall(w.g, alice.token, tool, {}, { capabilities: { elicitation: { form: {}, url: {} } }, params });
    const held = (await send({})).json.result;
    await approve(held.inputRequests.ath_approval.params.elicitationId);
    // the upstream's own round: its key, its state, as it sent them
    const own = (await send({ requestState: held.requestState, inputResponses: { ath_approval: { action: "accept" } } })).json.result;
    expect(own.resultType).toBe("input_required");
    expect(Object.keys(own.inputRequests)).toEqual(["confirm"]);
    expect(own.requestState).not.toStartWith("ath1.");
    // answering it is a new call of the tool: a new approval, ath's round wrapping the upstream's state
    const answer = { confirm: { action: "accept", content: { ok: true } } };
    const again = (await send({ requestState: own.requestState, inputResponses: answer })).json.result;
    expect(again.inputRequests.ath_approval).toBeDefined();
    expect(again.requestState).toStartWith("ath1.");
    await approve(again.inputRequests.ath_approval.params.elicitationId);
    const done = (await send({ requestState: again.requestState, inputResponses: { ...answer, ath_approval: { action: "accept" } } })).json;
    expect(done.result?.content?.[0]?.text).toStartWith("state-ok");
    const seen = w.upstream.surface.seen.filter((s) => s.tool === tool);
    expect(seen.length).toBe(2);
  });
});
