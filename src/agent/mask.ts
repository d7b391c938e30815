/** How the agent's secrets are shown: masked but recognisable (`ath_tk_abcd…`, as gh's displayToken keeps `gho_`). */

/** Masks a secret, keeping its ATH prefix and four characters. */
export function mask(secret: string): string {
  const prefix = SECRET_PREFIXES.find((p) => secret.startsWith(p)) ?? "";
  return `${prefix}${secret.slice(prefix.length, prefix.length + 4)}…`;
}

/** `secret` itself when `show` (`--show-secrets`), else masked. */
export function reveal(secret: string, show: boolean): string {
  return show ? secret : mask(secret);
}

// internal

const SECRET_PREFIXES = ["ath_secret_", "ath_tk_", "ath_code_"];
