/** The pages' stylesheet: the one of every HTML page ath shows, in src/text/style.ts (the CLI's loopback page uses it too). */
export { STYLESHEET } from "../../text/style.ts";
