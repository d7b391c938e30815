/**
 * The errors the CLI reports: the agent's one error type and its helpers, here so that `main.ts` (which maps them
 * to exit codes) reaches only into `cli/`, and the commands take them from one place.
 */
export { athErrorKind, ClientError, notConfigured, oneLine, usageError } from "../../agent/errors.ts";
