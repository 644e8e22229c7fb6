// kiosk lock, page side: runs in every frame before the page's own scripts (document_start, MAIN world), so
// that what would open a browser menu, dialog, tab or window does nothing, or stays in this tab.
(() => {
  'use strict';
  if (window.__kioskLock) return; // injected twice (manifest and the startup catch-up in background.js)
  Object.defineProperty(window, '__kioskLock', { value: true });
  const w = window;
  // HTML links, and SVG ones (href or the older xlink:href)
  const isLink = (n) => n instanceof Element && n.matches('a, area') &&
    (n.hasAttribute('href') || n.hasAttributeNS('http://www.w3.org/1999/xlink', 'href'));
  const link = (e) => e.composedPath().find(isLink);
  const target = (el) => el.getAttribute('target') || document.querySelector('base[target]')?.getAttribute('target') || '';
  // a target other than _self, _parent, _top or a frame's name opens a new tab or window
  const framed = (win, name) => {
    for (let i = 0; i < win.frames.length; i++) {
      try { if (win.frames[i].name === name) return true; } catch {} // another origin's frame hides its name
      if (framed(win.frames[i], name)) return true;
    }
    return false;
  };
  const elsewhere = (t) => !!t && !['_self', '_parent', '_top'].includes(t.toLowerCase()) && (t.toLowerCase() === '_blank' || !framed(w.top, t));

  // no context menu (right click, long press); --kiosk already shows none on a right click, this covers the rest
  w.addEventListener('contextmenu', (e) => e.preventDefault(), true);
  // no dragging of links or images, and a drop opens nothing (a link dropped where the page takes no drop opens in
  // a new tab, measured: cancelling dragover makes every place take the drop, cancelling drop keeps it unopened)
  w.addEventListener('dragstart', (e) => {
    if (e.composedPath().some((n) => n instanceof Element && n.matches('a[href], img'))) e.preventDefault();
  }, true);
  w.addEventListener('dragover', (e) => e.preventDefault(), true);
  w.addEventListener('drop', (e) => e.preventDefault(), true);

  w.addEventListener('click', (e) => {
    const el = e.composedPath()[0];
    // a click with a modifier (a link, a form's submit button: Shift opens a new window) does nothing here
    if (e.ctrlKey || e.shiftKey || e.metaKey || e.altKey) return e.preventDefault();
    // the file chooser: with AllowFileSelectionDialogs=false chromium shows an info bar instead of it
    if (el instanceof HTMLInputElement && el.type === 'file') return e.preventDefault();
    const a = link(e);
    if (!a) return;
    // downloads are refused by policy, but chromium still says "Download started"
    if (a.hasAttribute('download') || e.ctrlKey || e.shiftKey || e.metaKey || e.altKey) return e.preventDefault();
    if (elsewhere(target(a))) a.setAttribute('target', '_self'); // this tab instead; the page's handlers still run
  }, true);
  // middle click opens links in a new tab
  w.addEventListener('auxclick', (e) => { if (link(e)) e.preventDefault(); }, true);
  // forms aimed at a new tab or window submit in this one
  w.addEventListener('submit', (e) => {
    const s = e.submitter;
    if (s && elsewhere(s.formTarget)) s.formTarget = '_self';
    if (elsewhere(target(e.target))) e.target.setAttribute('target', '_self');
  }, true);
  // no "Leave site?" dialog: this first capture listener keeps the page's own handlers from running
  w.addEventListener('beforeunload', (e) => e.stopImmediatePropagation(), true);

  const go = (url) => {
    try { w.top.location.href = url; } catch { w.location.href = url; }
  };
  const quiet = {
    open(url) { if (url !== undefined && String(url) !== '') go(new URL(String(url), w.location.href).href); return null; },
    alert() {},
    confirm() { return false; },
    prompt() { return null; },
    print() {},
    close() {},
  };
  for (const [k, f] of Object.entries(quiet)) w[k] = f;
  // browser dialogs and windows a click may open: passkeys (WebAuthn), payments, picture in picture
  const refuse = () => Promise.reject(new DOMException('not in this kiosk', 'NotAllowedError'));
  if (w.navigator.credentials) for (const k of ['create', 'get']) w.navigator.credentials[k] = refuse;
  if (w.PaymentRequest) w.PaymentRequest.prototype.show = refuse;
  if (w.documentPictureInPicture) w.documentPictureInPicture.requestWindow = refuse;
  if (w.HTMLVideoElement) w.HTMLVideoElement.prototype.requestPictureInPicture = refuse;
  for (const k of ['showOpenFilePicker', 'showSaveFilePicker', 'showDirectoryPicker']) {
    if (k in w) w[k] = () => Promise.reject(new DOMException('not in this kiosk', 'AbortError'));
  }
  const picker = HTMLInputElement.prototype.showPicker;
  if (picker) {
    HTMLInputElement.prototype.showPicker = function () {
      if (this.type !== 'file') return picker.call(this);
    };
  }
})();
