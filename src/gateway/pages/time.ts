/** How pages state an expiry: relative ("in 9 minutes") for people, plus the absolute UTC time. */

/** "in 9 minutes", "in less than a minute", "in 2 hours"; "already" when past. Rounds down: never overpromise. */
export function relativeExpiry(expiresAt: Date, now: Date): string {
  const seconds = Math.floor((expiresAt.getTime() - now.getTime()) / 1000);
  if (seconds <= 0) return "already";
  if (seconds < 60) return "in less than a minute";
  const minutes = Math.floor(seconds / 60);
  if (minutes < 120) return `in ${minutes} minute${minutes === 1 ? "" : "s"}`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `in ${hours} hours`;
  return `in ${Math.floor(hours / 24)} days`;
}

/** "2025-06-01 14:09 UTC" */
export function utcTime(d: Date): string {
  return `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** The expiry phrase as HTML, its absolute time in a <time> that never wraps (phones). */
export function expiryHtml(expiresAt: Date, now: Date): string {
  const rel = relativeExpiry(expiresAt, now);
  const at = `<time class="nowrap" datetime="${expiresAt.toISOString()}">${utcTime(expiresAt)}</time>`;
  return rel === "already" ? `expired at ${at}` : `expires ${rel} (${at})`;
}

/** "expires in 9 minutes (2025-06-01 14:09 UTC)" or "expired (…)". */
export function expiryPhrase(expiresAt: Date, now: Date): string {
  const rel = relativeExpiry(expiresAt, now);
  return rel === "already" ? `expired at ${utcTime(expiresAt)}` : `expires ${rel} (${utcTime(expiresAt)})`;
}
