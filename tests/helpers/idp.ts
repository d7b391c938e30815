/**
 * A local identity provider for DESIGN §23's tests: a signing stub with a JWKS — an enterprise IdP issuing ID-JAGs
 * (`typ: oauth-id-jag+jwt`), or a workload issuer (SPIFFE-style JWT-SVIDs). It serves its JWKS on loopback (a real
 * Bun.serve, so the gateway fetches it through its SSRF-safe path) and counts every fetch; it can rotate to a key the
 * gateway has not seen (a new `kid`), sign with a key outside its JWKS (a forgery), or craft any header and claims.
 */
import { exportJWK, generateKeyPair, SignJWT, type JWK } from "jose";
import { randomString } from "./net.ts";

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

export interface SignOptions {
  /** Claims merged over the defaults; a value of `undefined` removes the claim. */
  claims?: Record<string, unknown>;
  /** Header members merged over the defaults (`alg`, `typ`, `kid`). */
  header?: Record<string, unknown>;
  /** Sign with a key that is not in the JWKS (keeping the header's kid): a forgery. */
  forged?: boolean;
  /** `alg: none`, unsigned. */
  unsigned?: boolean;
}

export class TestIdp {
  /** How many times the JWKS was fetched. */
  fetches = 0;
  private readonly published: SigningKey[] = [];
  private current!: SigningKey;
  private server: ReturnType<typeof Bun.serve> | undefined;
  issuer = "";

  private constructor(private readonly alg: "RS256" | "ES256") {}

  /** A new IdP on a loopback port: `issuer` is its origin, its JWKS at `{issuer}/jwks`. */
  static async start(o: { alg?: "RS256" | "ES256"; cacheControl?: string } = {}): Promise<TestIdp> {
    const idp = new TestIdp(o.alg ?? "RS256");
    idp.current = await idp.newKey();
    idp.published.push(idp.current);
    idp.server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) => {
        if (new URL(req.url).pathname !== "/jwks") return new Response("not found", { status: 404 });
        idp.fetches++;
        return Response.json({ keys: idp.published.map((k) => k.jwk) }, { headers: o.cacheControl ? { "cache-control": o.cacheControl } : {} });
      },
    });
    idp.issuer = `http://127.0.0.1:${idp.server.port}`;
    return idp;
  }

  get jwksUri(): string {
    return `${this.issuer}/jwks`;
  }

  /** The public keys, for an entry with an inline `jwks`. */
  jwks(): { keys: JWK[] } {
    return { keys: this.published.map((k) => k.jwk) };
  }

  /** Starts signing with a new key; `publish: false` keeps it out of the JWKS until `publishCurrent`. */
  async rotate(o: { publish?: boolean } = {}): Promise<string> {
    this.current = await this.newKey();
    if (o.publish !== false) this.published.push(this.current);
    return this.current.kid;
  }

  publishCurrent(): void {
    if (!this.published.includes(this.current)) this.published.push(this.current);
  }

  /** An ID-JAG for `client_id`, person `sub`, `resource`, `scope`, audience `aud` (ath's issuer), 5 minutes. */
  idJag(c: { aud: string; client_id: string; sub?: string; resource: string; scope?: string }, o: SignOptions = {}): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: this.issuer, sub: c.sub ?? "alice@corp.example", aud: c.aud, client_id: c.client_id, resource: c.resource, ...(c.scope ? { scope: c.scope } : {}), iat: now, exp: now + 300, jti: randomString(16) };
    return this.sign(claims, { typ: "oauth-id-jag+jwt" }, o);
  }

  /** A workload JWT (a JWT-SVID) for `sub`, audience `aud`, 5 minutes, with a jti. */
  workloadJwt(c: { sub: string; aud: string }, o: SignOptions = {}): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return this.sign({ iss: this.issuer, sub: c.sub, aud: c.aud, iat: now, exp: now + 300, jti: randomString(16) }, { typ: "JWT" }, o);
  }

  async stop(): Promise<void> {
    await this.server?.stop(true);
  }

  // internal

  private async sign(defaults: Record<string, unknown>, headerDefaults: Record<string, unknown>, o: SignOptions): Promise<string> {
    const claims = { ...defaults };
    for (const [k, v] of Object.entries(o.claims ?? {})) {
      if (v === undefined) delete claims[k];
      else claims[k] = v;
    }
    const header = { alg: this.alg, kid: this.current.kid, ...headerDefaults, ...o.header };
    if (o.unsigned) return `${b64({ ...header, alg: "none" })}.${b64(claims)}.`;
    const key = o.forged ? (await this.newKey()).privateKey : this.current.privateKey;
    return new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign(key);
  }

  private async newKey(): Promise<SigningKey> {
    const { privateKey, publicKey } = await generateKeyPair(this.alg, { extractable: true });
    const kid = `k-${randomString(8)}`;
    return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: this.alg, use: "sig" } };
  }
}

function b64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}
