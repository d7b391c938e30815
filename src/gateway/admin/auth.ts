/**
 * The admin token (`X-ATH-User-Token`): compared as hashes in constant time; given by the operator or generated once
 * at first start, when only its hash is kept.
 */
import { AthError, HEADERS } from "../../protocol/index.ts";
import type { Store } from "../../store/types.ts";
import type { Call, Gateway } from "../context.ts";
import { constantTimeEqual, hashSecret, mintSecret } from "../crypto/secrets.ts";
import { bearerToken } from "../http/request.ts";
import { WRONG_ADMIN_TOKENS, WrongSecrets } from "../ops/wrong-secrets.ts";

/** Whether the request carries the admin token, as `X-ATH-User-Token` (the admin API's header). */
export function isAdmin(gw: Gateway, req: Request): boolean {
  return isAdminToken(gw, req.headers.get(HEADERS.adminToken));
}

/** Whether `presented` is the admin token (hashes compared in constant time): the header's check, and the console's sign-in. */
export function isAdminToken(gw: Gateway, presented: string | null): boolean {
  return matches(presented, gw.opts.adminTokenHash);
}

/**
 * The guard of `auth: "admin"` routes: 401 UNAUTHORIZED unless the admin token is presented; an IP that sent 10 wrong
 * ones in the current 60 s window gets 429 until it ends, whatever it sends (DESIGN §14).
 */
export function requireAdmin({ gw, req, ip }: Call): void {
  const wrong = wrongAdminTokens(gw);
  const now = gw.now();
  wrong.check(ip, now);
  if (isAdmin(gw, req)) return;
  if (req.headers.get(HEADERS.adminToken)) wrong.wrong(ip, now);
  throw new AthError("UNAUTHORIZED");
}

/**
 * The guard of machine-facing operator endpoints (`auth: "introspection"`): the introspection token as a bearer, or
 * the admin token as a bearer or as `X-ATH-User-Token` (DESIGN §7).
 */
export function requireIntrospector({ gw, req }: Call): void {
  requireAdminOr(gw, req, gw.opts.introspectionTokenHash, "introspection");
}

/**
 * The guard of GET /metrics (`auth: "metrics"`, DESIGN §10): nothing under --metrics-public; else the admin token or
 * `--metrics-token` as a bearer (or the admin token as `X-ATH-User-Token`).
 */
export function requireMetricsReader({ gw, req }: Call): void {
  if (gw.opts.metricsPublic) return;
  requireAdminOr(gw, req, gw.opts.metricsTokenHash, "metrics");
}

/** The admin token (as a bearer or X-ATH-User-Token), or a role's own token (`roleHash`) as a bearer; else 401. */
function requireAdminOr(gw: Gateway, req: Request, roleHash: string | null, role: string): void {
  const bearer = bearerToken(req);
  const ok = isAdmin(gw, req) || matches(bearer, gw.opts.adminTokenHash) || (roleHash !== null && matches(bearer, roleHash));
  if (!ok) throw new AthError("UNAUTHORIZED", `A valid ${role} or admin token is required`, undefined, { headers: { "www-authenticate": 'Bearer realm="ath"' } });
}

/**
 * The admin token's hash: the operator's token when given (its hash is stored, so giving one once resets a lost
 * token for later starts too); else the one stored at an earlier start; else a new token, whose hash is stored and
 * which is returned once (`generated`) to be shown — it is never shown again. Called only once the gateway listens,
 * so a start that fails before it keeps nothing that was never shown.
 */
export async function adminTokenHash(store: Store, given: string | undefined): Promise<{ hash: string; generated: string | null }> {
  if (given) {
    await store.setMeta(ADMIN_HASH_KEY, hashSecret(given));
    return { hash: hashSecret(given), generated: null };
  }
  const stored = await store.getMeta(ADMIN_HASH_KEY);
  if (stored) return { hash: stored, generated: null };
  const token = mintSecret("ath_admin_");
  await store.setMeta(ADMIN_HASH_KEY, hashSecret(token));
  return { hash: hashSecret(token), generated: token };
}

// internal

const ADMIN_HASH_KEY = "admin_token_hash";

const wrongByGateway = new WeakMap<Gateway, WrongSecrets>();
function wrongAdminTokens(gw: Gateway): WrongSecrets {
  let w = wrongByGateway.get(gw);
  if (!w) wrongByGateway.set(gw, (w = new WrongSecrets(WRONG_ADMIN_TOKENS, "admin token")));
  return w;
}

/** A presented secret against a stored hash, in constant time. */
function matches(presented: string | null, hash: string): boolean {
  return presented !== null && presented !== "" && constantTimeEqual(hashSecret(presented), hash);
}
