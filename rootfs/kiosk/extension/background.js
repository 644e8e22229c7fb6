// kiosk lock, browser side. Chromium 156 has no policy or switch that stops a page from opening a tab or a
// window (target=_blank, window.open, middle/ctrl/shift-click; a popup with features even gets an address bar),
// so every tab or window but the first is closed as soon as chromium reports it; the http(s) URL a page opened
// it for is loaded in the first tab instead (the URLAllowlist policy still decides what loads). A navigation the
// URLBlocklist policy refuses would leave chromium's "This page is blocked" page on the screen: the tab goes
// back instead (or to the first page it showed).
'use strict';

let keep = null; // the tab that stays: the oldest (chromium numbers tabs in order of creation)
let probed = ''; // the last URL of that tab the sweep looked at

async function keeper() {
  if (keep !== null) return keep;
  const tabs = await chrome.tabs.query({});
  if (tabs.length) keep = tabs.reduce((a, b) => (a.id < b.id ? a : b));
  return keep;
}

function hear() {
  clearInterval(sweep);
}

async function away(tabId, url) {
  try {
    await chrome.tabs.goBack(tabId);
  } catch {
    const { home } = await chrome.storage.session.get('home');
    if (home && home !== url) chrome.tabs.update(tabId, { url: home }).catch(() => {});
  }
}

chrome.tabs.onCreated.addListener(async (tab) => {
  hear();
  const k = await keeper();
  if (k && tab.id !== k.id) chrome.tabs.remove(tab.id).catch(() => {});
});

chrome.windows.onCreated.addListener(async (win) => {
  hear();
  const k = await keeper();
  if (k && win.id !== k.windowId) chrome.windows.remove(win.id).catch(() => {});
});

chrome.tabs.onRemoved.addListener((id) => {
  if (keep && id === keep.id) keep = null;
});

// a page opened it: its URL, which onCreated often does not know yet, goes to the first tab
chrome.webNavigation.onCreatedNavigationTarget.addListener(async (d) => {
  hear();
  const k = await keeper();
  if (k && d.tabId !== k.id && /^https?:/i.test(d.url)) chrome.tabs.update(k.id, { url: d.url }).catch(() => {});
});

chrome.webNavigation.onCommitted.addListener(async (d) => {
  hear();
  if (d.frameId !== 0) return;
  // about:blank, data: and the like in the one tab (a page's own navigation, which no policy blocks): back
  if (!/^(https?|blob):/i.test(d.url)) return away(d.tabId, d.url);
  const { home } = await chrome.storage.session.get('home');
  if (!home) chrome.storage.session.set({ home: d.url });
});

// blocked by the allowlist, or a certificate chromium refuses (its warning page has a "proceed" link; the policy
// SSLErrorOverrideAllowed=false takes the link away, this takes the page away)
chrome.webNavigation.onErrorOccurred.addListener((d) => {
  hear();
  if (d.frameId === 0 && /^net::ERR_(BLOCKED_BY_ADMINISTRATOR|BLOCKED_BY_CLIENT|CERT_|SSL_)/.test(d.error)) away(d.tabId, d.url);
});

// With --single-process chromium delivers no events to this worker (measured on 156): there a sweep four times a
// second does their work (an error page is known by scripting's refusal to run in it), and its API calls keep the
// worker running, as nothing would start it again. It ends at the first event.
const sweep = setInterval(async () => {
  const k = await keeper();
  if (!k) return;
  for (const t of await chrome.tabs.query({})) if (t.id !== k.id) chrome.tabs.remove(t.id).catch(() => {});
  for (const w of await chrome.windows.getAll()) if (w.id !== k.windowId) chrome.windows.remove(w.id).catch(() => {});
  const t = await chrome.tabs.get(k.id).catch(() => null);
  if (!t || t.status !== 'complete' || t.url === probed) return;
  probed = t.url;
  if (!/^(https?|blob):/i.test(t.url)) return away(t.id, t.url); // mailto: and the like, refused by policy
  chrome.scripting.executeScript({ target: { tabId: t.id }, func: () => 0 }).then(
    () => /^https?:/i.test(t.url) && chrome.storage.session.get('home').then((s) => s.home || chrome.storage.session.set({ home: t.url })),
    (e) => /error page/.test(e.message) && away(t.id, t.url),
  );
}, 250);

// An extension API call every 20 s keeps this worker from being stopped after 30 s without events: a new tab
// then waits for no worker start (measured: a tab lived ~400 ms after a minute's idle without this, ~100 with it).
setInterval(() => chrome.runtime.getPlatformInfo(), 20e3);

// The page that was loading while chromium started this worker got no content script: give it one now (content.js
// runs once per page).
chrome.tabs.query({}).then((tabs) => {
  for (const tab of tabs) {
    chrome.scripting
      .executeScript({ target: { tabId: tab.id, allFrames: true }, files: ['content.js'], world: 'MAIN', injectImmediately: true })
      .catch(() => {});
  }
});
