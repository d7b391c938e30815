/**
 * DPoP (RFC 9449) bound to the agent's registered ES256 key, in process (DESIGN §17): a token request with a proof by
 * that key gets `token_type: "DPoP"` and `cnf.jkt` at introspection; another key's proof is 400 `dpop_key_mismatch`
 * and issues nothing; a bound token is accepted only as `Authorization: DPoP` with a fresh proof of this request —
 * every defect of a proof is 401 TOKEN_INVALID with `WWW-Authenticate: DPoP error="invalid_dpop_proof"`, the bound
 * token as Bearer `error="invalid_token"`; `require_dpop` refuses bearer tokens (proxy) and proof-less token requests.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { SignJWT } from "jose";
import { accessTokenHash, signDpopProof } from "../../../../src/agent/dpop.ts";
import { loadKey } from "../../../../src/agent/keys.ts";
import { DiscoveryDocument, TokenResponse } from "../../../../src/protocol/index.ts";
import { authorize, call, consent, registeredAgent, type ClientCredentials } from "../../../helpers/agent.ts";
import { attest, makeAgent, type TestAgent } from "../../../helpers/attestations.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { ADMIN_TOKEN, BASE, INTROSPECTION_TOKEN, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

const TOKEN_URL = `${BASE}/ath/token`;
const API_URL = `${BASE}/ath/proxy/mail/v1/messages`;

let g: InProcess;
let p: ScriptedProvider;
let agent: TestAgent;
/** The agent's key as a private JWK (`d` included), to put where only its public half belongs. */
let privateJwk: JsonWebKey;
let client: ClientCredentials;
beforeEach(async () => {
  ({ g, p } = await scriptedGateway((p) => ({ mail: p.config(), strict: p.config({ require_dpop: true }) })));
  ({ agent, privateJwk } = await agentKeepingPrivateJwk());
  ({ client } = await registeredAgent(g, { agent, providers: [{ provider_id: "mail", scopes: ["mail:read"] }, { provider_id: "strict", scopes: ["mail:read"] }] }));
});
afterEach(() => g.close());

async function consented(provider_id = "mail") {
  const a = await authorize(g, agent, client, { provider_id, scopes: ["mail:read"] });
  const c = await consent(String(a.json.authorization_url), { browser: g.browser() });
  return { code: c.code!, ath_session_id: String(a.json.ath_session_id) };
}

async function tokenRequest(form: Record<string, string>, proof?: string) {
  return call(TOKEN_URL, {
    form: { ...client, agent_attestation: await attest(agent, TOKEN_URL), ...form },
    headers: proof === undefined ? {} : { dpop: proof },
    fetch: g.fetch,
  });
}

const proofFor = (method: string, url: string, accessToken?: string, key = agent.key) => signDpopProof(key, { method, url, ...(accessToken ? { accessToken } : {}) });

async function boundToken(provider_id = "mail"): Promise<TokenResponse> {
  const r = await tokenRequest({ grant_type: "authorization_code", ...(await consented(provider_id)) }, await proofFor("POST", TOKEN_URL));
  if (r.status !== 200) throw new Error(r.text);
  return TokenResponse.parse(r.json);
}

const proxied = (authorization: string, proof?: string, url = API_URL) =>
  call(url, { headers: { authorization, ...(proof === undefined ? {} : { dpop: proof }) }, fetch: g.fetch });

/** A proof with any header/claims over valid defaults (for this request, with `ath` of `token`). */
async function craftProof(token: string, o: { header?: Record<string, unknown>; claims?: Record<string, unknown>; key?: TestAgent["key"] } = {}) {
  const key = o.key ?? agent.key;
  const claims: Record<string, unknown> = { jti: crypto.randomUUID(), htm: "GET", htu: API_URL, iat: Math.floor(g.clock.now() / 1000), ath: await accessTokenHash(token), ...o.claims };
  return new SignJWT(claims).setProtectedHeader({ typ: "dpop+jwt", alg: "ES256", jwk: key.publicJwk, ...o.header }).sign(key.privateKey);
}

/** An agent whose private key the test can export (the agent side's own keys never can be). */
async function agentKeepingPrivateJwk(): Promise<{ agent: TestAgent; privateJwk: JsonWebKey }> {
  const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey("pkcs8", pair.privateKey)).toString("base64");
  const key = await loadKey(`-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join("\n")}\n-----END PRIVATE KEY-----\n`);
  return { agent: { key, agentId: key.didKey }, privateJwk: await crypto.subtle.exportKey("jwk", pair.privateKey) };
}

function expectProofRefused(r: Awaited<ReturnType<typeof proxied>>) {
  expectError(r, "TOKEN_INVALID", { reason: "invalid_dpop_proof" });
  expect(r.headers.get("www-authenticate")).toContain('error="invalid_dpop_proof"');
  expect(r.headers.get("www-authenticate")).toStartWith("DPoP ");
}

describe("DPoP at the token endpoint", () => {
  test("a proof by the registered key binds the token: token_type DPoP, cnf.jkt at introspection; discovery names ES256", async () => {
    const t = await boundToken();
    expect(t.token_type).toBe("DPoP");
    expect(t.refresh_token).toStartWith("ath_rt_");
    const i = await call(`${BASE}/ath/introspect`, { form: { token: t.access_token }, headers: { authorization: `Bearer ${INTROSPECTION_TOKEN}` }, fetch: g.fetch });
    expect(i.json).toMatchObject({ active: true, token_type: "DPoP", cnf: { jkt: agent.key.thumbprint } });
    const d = DiscoveryDocument.parse((await call(`${BASE}/.well-known/ath.json`, { fetch: g.fetch })).json);
    expect(d.dpop_signing_alg_values_supported).toEqual(["ES256"]);
  });

  test("another key's proof is 400 dpop_key_mismatch and issues nothing; a bad proof is 400 invalid_dpop_proof; the session stays usable", async () => {
    const s = await consented();
    const other = await makeAgent();
    expectError(await tokenRequest({ grant_type: "authorization_code", ...s }, await proofFor("POST", TOKEN_URL, undefined, other.key)), "INVALID_REQUEST", { reason: "dpop_key_mismatch" });
    expectError(await tokenRequest({ grant_type: "authorization_code", ...s }, await proofFor("POST", `${BASE}/ath/other`)), "INVALID_REQUEST", { reason: "invalid_dpop_proof" });
    expectError(await tokenRequest({ grant_type: "authorization_code", ...s }, await proofFor("GET", TOKEN_URL)), "INVALID_REQUEST", { reason: "invalid_dpop_proof" });
    expect(await g.audited("token.issued")).toBe(0);
    const r = await tokenRequest({ grant_type: "authorization_code", ...s }, await proofFor("POST", TOKEN_URL));
    expect(r.json.token_type).toBe("DPoP");
  });

  test("a refresh of a bound family needs a proof (400 dpop_required) and gives a DPoP token again", async () => {
    const t = await boundToken();
    expectError(await tokenRequest({ grant_type: "refresh_token", refresh_token: t.refresh_token! }), "INVALID_REQUEST", { reason: "dpop_required" });
    const r = await tokenRequest({ grant_type: "refresh_token", refresh_token: t.refresh_token! }, await proofFor("POST", TOKEN_URL));
    expect(r.status).toBe(200);
    expect(r.json.token_type).toBe("DPoP");
  });

  test("a provider's require_dpop refuses a token request without a proof (400 dpop_required); bearer stays fine elsewhere", async () => {
    expectError(await tokenRequest({ grant_type: "authorization_code", ...(await consented("strict")) }), "INVALID_REQUEST", { reason: "dpop_required" });
    const bearer = await tokenRequest({ grant_type: "authorization_code", ...(await consented("mail")) });
    expect(bearer.json.token_type).toBe("Bearer");
    expect((await proxied(`Bearer ${bearer.json.access_token}`)).status).toBe(200);
  });
});

describe("DPoP at the proxy", () => {
  test("the bound token with a fresh proof of this request works; the same proof again is a replay", async () => {
    const t = await boundToken();
    const proof = await proofFor("GET", `${API_URL}?page=2`, t.access_token);
    const r = await proxied(`DPoP ${t.access_token}`, proof, `${API_URL}?page=2`);
    expect(r.status).toBe(200);
    // the upstream gets its own token, never the agent's token or proof
    expect(p.api.at(-1)?.bearer).not.toBe(t.access_token);
    expect(p.api.at(-1)?.headers.dpop).toBeUndefined();
    expectProofRefused(await proxied(`DPoP ${t.access_token}`, proof, `${API_URL}?page=2`));
  });

  test("the bound token sent as Bearer is 401 TOKEN_INVALID with WWW-Authenticate: DPoP error=\"invalid_token\"", async () => {
    const t = await boundToken();
    const r = await proxied(`Bearer ${t.access_token}`);
    expectError(r, "TOKEN_INVALID");
    expect(r.headers.get("www-authenticate")).toBe('DPoP algs="ES256", error="invalid_token"');
  });

  test("a stolen bound token is useless without the key: the thief's own proof is refused", async () => {
    const t = await boundToken();
    const thief = await makeAgent();
    expectProofRefused(await proxied(`DPoP ${t.access_token}`, await proofFor("GET", API_URL, t.access_token, thief.key)));
    expectProofRefused(await proxied(`DPoP ${t.access_token}`));
  });

  test("every proof defect is refused: htm, htu, iat ± 60 s, ath, typ, alg (none, HS256), a private jwk, no jti, a bad signature", async () => {
    const t = await boundToken();
    const now = Math.floor(g.clock.now() / 1000);
    const other = await makeAgent();
    const good = await craftProof(t.access_token);
    const [header, claims, signature] = good.split(".") as [string, string, string];
    // the signature's middle byte flipped (its last characters may only carry padding bits)
    const at = signature.length >> 1;
    const flipped = `${header}.${claims}.${signature.slice(0, at)}${signature[at] === "A" ? "B" : "A"}${signature.slice(at + 1)}`;
    // HMAC keyed with the public key the header names: the algorithm confusion an ES256-only check must refuse
    const hs256 = await new SignJWT(JSON.parse(Buffer.from(claims, "base64url").toString()))
      .setProtectedHeader({ typ: "dpop+jwt", alg: "HS256", jwk: agent.key.publicJwk })
      .sign(new TextEncoder().encode(JSON.stringify(agent.key.publicJwk)));
    const none = `${Buffer.from(JSON.stringify({ typ: "dpop+jwt", alg: "none", jwk: agent.key.publicJwk })).toString("base64url")}.${claims}.`;
    const defects = [
      await craftProof(t.access_token, { claims: { htm: "POST" } }),
      await craftProof(t.access_token, { claims: { htu: `${BASE}/ath/proxy/mail/v1/other` } }),
      await craftProof(t.access_token, { claims: { iat: now - 61 } }),
      await craftProof(t.access_token, { claims: { iat: now + 61 } }),
      await craftProof(t.access_token, { claims: { ath: await accessTokenHash("ath_tk_another") } }),
      await craftProof(t.access_token, { claims: { ath: undefined } }),
      await craftProof(t.access_token, { header: { typ: "JWT" } }),
      await craftProof(t.access_token, { claims: { jti: undefined } }),
      await craftProof(t.access_token, { header: { jwk: other.key.publicJwk } }), // signed by one key, naming another
      await craftProof(t.access_token, { header: { jwk: { ...agent.key.publicJwk, d: privateJwk.d } } }), // by the bound key, naming it with its private part
      flipped,
      hs256,
      none,
      "not.a.proof",
    ];
    for (const proof of defects) expectProofRefused(await proxied(`DPoP ${t.access_token}`, proof));
    // the same claims, soundly signed, go: each proof above was refused for its own defect
    expect((await proxied(`DPoP ${t.access_token}`, good)).status).toBe(200);
  });

  test("require_dpop set on a provider refuses its bearer tokens at the proxy: 401 with WWW-Authenticate: DPoP algs=\"ES256\"", async () => {
    const bearer = TokenResponse.parse((await tokenRequest({ grant_type: "authorization_code", ...(await consented("mail")) })).json);
    expect((await proxied(`Bearer ${bearer.access_token}`)).status).toBe(200);
    const current = await call(`${BASE}/ath/admin/providers/mail`, { headers: { "x-ath-user-token": ADMIN_TOKEN }, fetch: g.fetch });
    const { provider_id: _id, client_secret: _secret, ...config } = current.json as Record<string, unknown>;
    const put = await call(`${BASE}/ath/admin/providers/mail`, {
      method: "PUT",
      json: { ...config, client_secret: p.clientSecret, require_dpop: true },
      headers: { "x-ath-user-token": ADMIN_TOKEN },
      fetch: g.fetch,
    });
    expect(put.status).toBe(200);
    const r = await proxied(`Bearer ${bearer.access_token}`);
    expectError(r, "TOKEN_INVALID", { reason: "dpop_required" });
    expect(r.headers.get("www-authenticate")).toBe('DPoP algs="ES256"');
  });
});

describe("DPoP at the approval poll (GET /ath/approvals/{id})", () => {
  test("the bound token is checked as at the proxy: as Bearer 401 invalid_token; with a proof of this poll it is let in (an unknown approval: 404)", async () => {
    const t = await boundToken();
    const POLL_URL = `${BASE}/ath/approvals/ath_apr_unknown`;
    const asBearer = await proxied(`Bearer ${t.access_token}`, undefined, POLL_URL);
    expectError(asBearer, "TOKEN_INVALID");
    expect(asBearer.headers.get("www-authenticate")).toBe('DPoP algs="ES256", error="invalid_token"');
    expectProofRefused(await proxied(`DPoP ${t.access_token}`, await proofFor("GET", API_URL, t.access_token), POLL_URL));
    expectError(await proxied(`DPoP ${t.access_token}`, await proofFor("GET", POLL_URL, t.access_token), POLL_URL), "NOT_FOUND");
  });
});

describe("--require-dpop", () => {
  test("gateway-wide: a token request without a proof is 400 dpop_required, with one it is a DPoP token", async () => {
    const strict = await scriptedGateway((p) => ({ mail: p.config() }), { requireDpop: true });
    try {
      const { agent: a, client: c } = await registeredAgent(strict.g, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
      const auth = await authorize(strict.g, a, c, { provider_id: "mail", scopes: ["mail:read"] });
      const s = await consent(String(auth.json.authorization_url), { browser: strict.g.browser() });
      const send = async (proof?: string) =>
        call(TOKEN_URL, {
          form: { grant_type: "authorization_code", ...c, agent_attestation: await attest(a, TOKEN_URL), code: s.code!, ath_session_id: String(auth.json.ath_session_id) },
          headers: proof === undefined ? {} : { dpop: proof },
          fetch: strict.g.fetch,
        });
      expectError(await send(), "INVALID_REQUEST", { reason: "dpop_required" });
      const r = await send(await signDpopProof(a.key, { method: "POST", url: TOKEN_URL }));
      expect(r.json.token_type).toBe("DPoP");
    } finally {
      await strict.g.close();
    }
  });
});
