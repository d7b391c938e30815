/**
 * The one stylesheet of every HTML page ath shows: the gateway's pages, the sandbox provider's, and the CLI's
 * loopback page after `authorize --wait` — in src/text/, the pure helpers both sides use. Colours
 * meet WCAG contrast in light and dark mode (tests/browser/pages-contrast.test.ts measures them). It is inlined and
 * allowed by its SHA-256 in the CSP, so it must stay a constant: no interpolation.
 */
export const STYLESHEET = `
:root{color-scheme:light dark;--bg:#f3f4f6;--card:#fff;--fg:#111827;--muted:#4b5563;--line:#d1d5db;
--accent:#1d4ed8;--accent-fg:#fff;--link:#1d4ed8;--claim:#fffbeb;--claim-line:#f59e0b;--claim-fg:#78350f;--ok:#047857;--bad:#b91c1c;
--code:#f3f4f6}
@media (prefers-color-scheme:dark){:root{--bg:#0b0f17;--card:#151b26;--fg:#e5e7eb;--muted:#9ca3af;--line:#374151;
--accent:#2563eb;--accent-fg:#fff;--link:#93c5fd;--claim:#2a2111;--claim-line:#b45309;--claim-fg:#fcd34d;--ok:#34d399;--bad:#f87171;
--code:#0b0f17}}
*{box-sizing:border-box}
a{color:var(--link)}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,sans-serif;padding:24px 16px}
.card{max-width:34rem;margin:0 auto;background:var(--card);border:1px solid var(--line);border-radius:14px;
padding:24px;box-shadow:0 1px 2px rgba(0,0,0,.06),0 8px 24px rgba(0,0,0,.06)}
@media (max-width:480px){body{padding:12px 10px}.card{padding:18px}}
@media (min-width:600px) and (min-height:700px){body{padding-top:6vh}}
.brand{margin:0 0 12px;font-size:.8rem;font-weight:600;letter-spacing:.06em;text-transform:uppercase;color:var(--muted)}
h1{font-size:1.35rem;line-height:1.3;margin:0 0 8px}
h2{font-size:.8rem;letter-spacing:.05em;text-transform:uppercase;color:var(--muted);margin:20px 0 8px}
p{margin:0 0 12px}
.lead{color:var(--muted)}
.status-ok{color:var(--ok)}
.status-bad{color:var(--bad)}
ul.scopes{list-style:none;margin:0;padding:0;border:1px solid var(--line);border-radius:10px}
ul.scopes li{padding:10px 12px;border-top:1px solid var(--line)}
ul.scopes li:first-child{border-top:0}
.scope-name{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9rem;font-weight:600;
overflow-wrap:anywhere}
.scope-desc{display:block;color:var(--muted);font-size:.92rem}
.identity{margin:0 0 4px}
.claim{background:var(--claim);border:1px solid var(--claim-line);border-radius:10px;padding:12px 14px}
.claim-label{margin:0 0 8px;font-size:.85rem;font-weight:700;color:var(--claim-fg)}
dl{margin:0;display:grid;grid-template-columns:max-content 1fr;gap:4px 12px}
dt{font-weight:600;color:var(--muted);font-size:.92rem}
dd{margin:0;min-width:0;overflow-wrap:anywhere;white-space:pre-wrap}
@media (max-width:420px){dl{grid-template-columns:1fr}dd{margin-bottom:6px}}
.expiry{font-size:.92rem;color:var(--muted);margin-top:16px}
.actions{display:flex;gap:12px;margin-top:20px}
.actions button{flex:1}
button{font:inherit;font-weight:600;padding:12px 16px;border-radius:10px;cursor:pointer;min-height:48px;
border:1px solid var(--line);background:var(--card);color:var(--fg)}
button.primary{background:var(--accent);border-color:var(--accent);color:var(--accent-fg)}
button:focus-visible,input:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
label{display:block;font-weight:600;margin:16px 0 6px}
input[type=text]{font:inherit;width:100%;padding:10px 12px;border:1px solid var(--line);border-radius:10px;
background:var(--card);color:var(--fg)}
.sandbox code{font:inherit;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre,code.block{display:block;margin:0 0 12px;padding:12px;background:var(--code);border:1px solid var(--line);
border-radius:10px;font:.92rem/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;
overflow-wrap:anywhere;user-select:all;-webkit-user-select:all}
.hint{font-size:.92rem;color:var(--muted)}
.nowrap{white-space:nowrap}
code.id{display:block;overflow-wrap:anywhere;word-break:break-all;font:.85rem/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.error-code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem;color:var(--muted)}
.notice{border-left:4px solid var(--bad);padding:8px 12px;background:var(--claim);margin:12px 0}
.card.wide{max-width:76rem}
nav.console{display:flex;flex-wrap:wrap;gap:6px 18px;align-items:center;margin:0 0 18px;padding-bottom:12px;
border-bottom:1px solid var(--line)}
nav.console a{color:var(--link);font-weight:600;text-decoration:none}
nav.console a[aria-current=page]{color:var(--fg);text-decoration:underline;text-underline-offset:4px}
nav.console form{margin-left:auto}
button.small{min-height:36px;padding:6px 12px;font-size:.9rem}
button.danger{border-color:var(--bad);color:var(--bad)}
.table-wrap{overflow-x:auto}
table.list{width:100%;border-collapse:collapse;font-size:.92rem}
table.list th{text-align:left;font-size:.75rem;letter-spacing:.05em;text-transform:uppercase;color:var(--muted);
padding:6px 8px;border-bottom:1px solid var(--line)}
table.list td{padding:8px;border-bottom:1px solid var(--line);vertical-align:top;overflow-wrap:anywhere}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem}
.row-actions{display:flex;flex-wrap:wrap;gap:6px;margin:0}
form.filters{display:grid;grid-template-columns:repeat(auto-fill,minmax(9rem,1fr));gap:8px 12px;align-items:end;
margin:0 0 16px}
form.filters label{margin:0 0 4px;font-size:.85rem}
input[type=password],select{font:inherit;width:100%;padding:10px 12px;border:1px solid var(--line);border-radius:10px;
background:var(--card);color:var(--fg)}
textarea{font:.9rem/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;width:100%;padding:10px 12px;
border:1px solid var(--line);border-radius:10px;background:var(--card);color:var(--fg);resize:vertical}
textarea:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.counts{display:grid;grid-template-columns:repeat(auto-fill,minmax(9rem,1fr));gap:12px;margin:0 0 8px}
.count{display:block;border:1px solid var(--line);border-radius:10px;padding:10px 12px;color:var(--muted);font-size:.9rem;
text-decoration:none}
.count b{display:block;font-size:1.6rem;color:var(--fg)}
.badge{display:inline-block;padding:1px 8px;border-radius:999px;font-size:.8rem;font-weight:700;border:1px solid var(--line);
white-space:nowrap;overflow-wrap:normal}
.badge.pending{background:var(--claim);border-color:var(--claim-line);color:var(--claim-fg)}
.badge.approved,.badge.active{color:var(--ok)}
.badge.denied,.badge.suspended,.badge.revoked{color:var(--bad)}
.flash{border-left:4px solid var(--ok);padding:8px 12px;margin:0 0 14px;background:var(--code)}
.pager{margin-top:14px}
.pager a{color:var(--link);font-weight:600}
@media (max-width:700px){table.list thead{display:none}table.list tr{display:block;border:1px solid var(--line);
border-radius:10px;margin:0 0 10px;padding:6px 4px}table.list td{display:block;position:relative;border:0;
padding:4px 8px 4px 7.25rem;min-height:2rem}table.list td::before{content:attr(data-label);position:absolute;left:8px;
top:6px;width:6.5rem;font-weight:600;color:var(--muted);font-size:.8rem}nav.console form{margin-left:0}}
.sandbox{max-width:34rem;margin:0 auto 12px;padding:10px 14px;border-radius:10px;font-weight:700;font-size:.9rem;
color:#422006;border:2px solid #a16207;
background:repeating-linear-gradient(135deg,#fde047 0 14px,#facc15 14px 28px)}
`;
