/** The HTML error pages of the browser-facing routes (consent, callback): what happened and what to do. */
import { ERRORS, type ErrorCode } from "../../protocol/index.ts";
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
    title: "This browser cannot complete the request",
    message: "The request was started in another browser, or its state does not match.",
    hint: "Open the authorization link from the agent in this browser and try again.",
  },
  OAUTH_ERROR: {
    title: "The provider could not complete the sign-in",
    message: "The gateway could not exchange the authorization with the provider.",
    hint: "Try again in a moment. If it keeps happening, tell the gateway operator.",
  },
};

export function errorPage(code: ErrorCode, message?: string): Response {
  const page = PAGES[code];
  const status = ERRORS[code].status;
  return htmlResponse(
    renderErrorPage({
      status,
      code,
      title: page?.title ?? ERRORS[code].message,
      message: message ?? page?.message ?? ERRORS[code].message,
      ...(page ? { hint: page.hint } : {}),
    }),
    { status },
  );
}
