/** The agent's `user_redirect_uri` against its registered `redirect_uris`. */

/**
 * Schema: "the implementor MUST validate user_redirect_uri against this list using exact-match comparison"; if the
 * agent registered none, any user_redirect_uri is refused. RFC 8252 §7.3: a loopback IP redirect URI
 * (`http://127.0.0.1/…`, `http://[::1]/…`) matches whatever port the native app listens on at request time.
 */
export function matchRedirectUri(registered: readonly string[] | null, given: string | undefined): boolean {
  if (given === undefined) return true;
  if (!registered || registered.length === 0) return false;
  if (registered.includes(given)) return true;
  const g = loopback(given);
  if (!g) return false;
  return registered.some((r) => {
    const l = loopback(r);
    return l !== null && l.hostname === g.hostname && l.pathname === g.pathname && l.search === g.search && g.hash === "";
  });
}

// internal

function loopback(uri: string): URL | null {
  if (!URL.canParse(uri)) return null;
  const u = new URL(uri);
  const isLoopback = u.hostname === "127.0.0.1" || u.hostname === "[::1]";
  return u.protocol === "http:" && isLoopback && u.username === "" && u.password === "" ? u : null;
}
