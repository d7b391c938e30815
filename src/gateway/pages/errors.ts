/** The HTML error pages of the browser-facing routes (consent, callback): what happened and what to do. */
import { AthError, ERRORS, type ErrorCode } from "../../protocol/index.ts";
import { htmlResponse, renderErrorPage } from "./index.ts";

const PAGES: Partial<Record<ErrorCode, { title: string; message: string; hint: string }>> = {
  SESSION_NOT_FOUND: {
    title: "This link is no longer valid",
    message: "This authorization request was not found, or it was already completed.",
    hint: "Go back to the agent and start the authorization again.",
  },
  SESSION_EXPIRED: {
    title: "This request has expired",
    message: "Authorization requests are valid for a few minutes only.",
    hint: "Go back to the agent and start the authorization again.",
  },
  STATE_MISMATCH: {
    title: "Finish this in the browser where you opened the link",
    message: "For your safety, an approval can only be completed in the browser that first opened the agent's link.",
    hint: "Ask the agent for a new link and open it in this browser.",
  },
  APPROVAL_REQUIRED: {
    title: "You cannot decide this request",
    message: "Only the person who gave this agent access can approve its requests.",
    hint: "Open the link in the browser where you approved the agent's access to this account. Links you did not expect are best ignored.",
  },
  OAUTH_ERROR: {
    title: "The provider could not complete the sign-in",
    message: "The gateway could not exchange the authorization with the provider.",
    hint: "Try again in a moment. If it keeps happening, tell the gateway operator.",
  },
  SERVICE_UNAVAILABLE: {
    title: "The gateway cannot record your answer right now",
    message: "Its storage is failing, so nothing was changed.",
    hint: "Try again in a moment. If it keeps happening, tell the gateway operator.",
  },
};

/**
 * The page for an error of a browser-facing route. A message the handler wrote itself is shown; a code's default
 * message gives way to the page's own words for it.
 */
export function errorPage(err: AthError): Response {
  const page = PAGES[err.code];
  const custom = err.message !== ERRORS[err.code].message;
  return htmlResponse(
    renderErrorPage({
      status: err.status,
      code: err.code,
      title: page?.title ?? ERRORS[err.code].message,
      message: custom ? err.message : (page?.message ?? err.message),
      ...(page ? { hint: page.hint } : {}),
    }),
    { status: err.status, ...(err.headers ? { headers: err.headers } : {}) },
  );
}
