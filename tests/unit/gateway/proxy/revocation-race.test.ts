/**
 * A revocation drops the token, then its upstream grant; another instance hears of the two one after the other. A
 * request that read the token from the cache just before the token's invalidation arrived then finds the grant gone —
 * and must still be told TOKEN_REVOKED (what happened), not TOKEN_EXPIRED (a lapsed grant): the proxy reads the token
 * again past the cache before it answers (proxy/handler.ts, domain/tokens.ts requireNotRevoked).
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { hashSecret } from "../../../../src/gateway/crypto/secrets.ts";
import { openSqliteStore } from "../../../../src/store/index.ts";
import type { Store } from "../../../../src/store/types.ts";
import { fullFlow } from "../../../helpers/agent.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { asError, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";

let g: InProcess;
let raw: Store;
beforeEach(async () => {
  raw = openSqliteStore(":memory:");
  ({ g } = await scriptedGateway((p) => ({ mail: p.config() }), { store: raw }));
});
afterEach(() => g.close());

test("a token revoked elsewhere whose grant this instance already dropped is refused as TOKEN_REVOKED", async () => {
  const flow = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
  const proxy = () => g.fetch("/ath/proxy/mail/v1/messages", { headers: { authorization: `Bearer ${flow.accessToken}` } });
  expect((await proxy()).status).toBe(200); // token and grant now cached
  const token = (await raw.getToken(hashSecret(flow.accessToken)))!;
  // the revocation, as another instance writes it: this instance's cache has not heard of the token's yet …
  await raw.revokeToken(token.token_hash, Date.now());
  expect((await g.gw.store.getToken(token.token_hash))?.revoked_at).toBeNull();
  // … but has of the grant's
  await g.gw.store.deleteGrant(token.grant_id!);
  expectError(await asError(await proxy()), "TOKEN_REVOKED");
});
