/** The gateway's logger on consola: tagged `ath`, and an error logs only its name and message (causes may carry request data). */
import { consola } from "consola";
import type { Logger } from "../context.ts";

export function consoleLogger(): Logger {
  const log = consola.withTag("ath");
  return {
    info: (msg, data) => log.info(msg, data ?? ""),
    warn: (msg, data) => log.warn(msg, data ?? ""),
    error: (msg, err) => log.error(msg, err instanceof Error ? `${err.name}: ${err.message}` : ""),
  };
}
