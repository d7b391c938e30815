/**
 * The guards of operator routes: the admin API (the admin token as `X-ATH-User-Token` or a bearer), introspection and
 * /metrics. What the admin token is, and how it is compared, is domain/admin-token.ts.
 */
import { AthError, HEADERS } from "../../protocol/index.ts";
import type { Call, Gateway } from "../context.ts";
import { matchesHash, sentAdminToken } from "../domain/admin-token.ts";
import { bearerToken } from "../http/request.ts";
import { WRONG_ADMIN_TOKENS, WrongSecrets } from "../ops/wrong-secrets.ts";

/**
 * The guard of `auth: "admin"` routes: the admin token as `X-ATH-User-Token` or as a bearer (as /metrics takes it);
 * else 401 UNAUTHORIZED naming both ways. An IP that sent 10 wrong ones in the current 60 s window gets 429 until it
 * ends, whatever it sends (DESIGN §14).
 */
export function requireAdmin({ gw, req, ip }: Call): void {
  const wrong = wrongAdminTokens(gw);
  const now = gw.now();
  wrong.check(ip, now);
  if (sentAdminToken(gw, req) || matchesHash(bearerToken(req), gw.opts.adminTokenHash)) return;
  if (req.headers.get(HEADERS.adminToken) || bearerToken(req)) wrong.wrong(ip, now);
  throw new AthError("UNAUTHORIZED", `A valid admin token is required: send it as \`Authorization: Bearer <admin token>\` or \`${ADMIN_HEADER}: <admin token>\``, undefined, {
    headers: { "www-authenticate": 'Bearer realm="ath"' },
  });
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
  const ok = sentAdminToken(gw, req) || matchesHash(bearer, gw.opts.adminTokenHash) || (roleHash !== null && matchesHash(bearer, roleHash));
  if (!ok) throw new AthError("UNAUTHORIZED", `A valid ${role} or admin token is required`, undefined, { headers: { "www-authenticate": 'Bearer realm="ath"' } });
}

// internal

/** HEADERS.adminToken as a person types it. */
const ADMIN_HEADER = "X-ATH-User-Token";

const wrongByGateway = new WeakMap<Gateway, WrongSecrets>();
function wrongAdminTokens(gw: Gateway): WrongSecrets {
  let w = wrongByGateway.get(gw);
  if (!w) wrongByGateway.set(gw, (w = new WrongSecrets(WRONG_ADMIN_TOKENS, "admin token")));
  return w;
}

