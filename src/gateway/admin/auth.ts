/** The admin token (`X-ATH-User-Token`): compared as hashes in constant time. */
import { AthError, HEADERS } from "../../protocol/index.ts";
import type { Gateway } from "../context.ts";
import { constantTimeEqual, hashSecret } from "../crypto/secrets.ts";

export function isAdmin(gw: Gateway, req: Request): boolean {
  const presented = req.headers.get(HEADERS.adminToken);
  return presented !== null && presented !== "" && constantTimeEqual(hashSecret(presented), gw.opts.adminTokenHash);
}

export function requireAdmin(gw: Gateway, req: Request): void {
  if (!isAdmin(gw, req)) throw new AthError("UNAUTHORIZED");
}
