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
} from "./layout.ts";
export { renderConsentPage, type ConsentView } from "./consent.ts";
export { renderLandingPage, type LandingView } from "./landing.ts";
export {
  renderCodeResultPage,
  renderConnectedPage,
  renderDeniedPage,
  renderErrorPage,
  type CodeResultView,
  type ErrorView,
} from "./results.ts";
export { expiryPhrase, relativeExpiry, utcTime } from "./time.ts";
