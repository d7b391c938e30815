/** The gateway's HTML pages: consent, result and error pages, with their security headers. */
export {
  SECURITY_HEADERS,
  STYLE_HASH,
  contentSecurityPolicy,
  escapeHtml,
  formActionSources,
  htmlResponse,
  renderPage,
  type HtmlResponseInit,
  type PageShell,
} from "./pages/layout.ts";
export { renderConsentPage, type ConsentView } from "./pages/consent.ts";
export {
  renderCodeResultPage,
  renderDeniedPage,
  renderErrorPage,
  type CodeResultView,
  type ErrorView,
} from "./pages/results.ts";
export { expiryPhrase, relativeExpiry, utcTime } from "./pages/time.ts";
