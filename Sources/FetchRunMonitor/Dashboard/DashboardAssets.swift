/// The dashboard's stylesheet and script, served from the binary at `/assets/…` — the only
/// places the pages load anything from, so that `default-src 'self'` holds.
enum DashboardAssets {
    /// Light by default, dark when the system prefers it; one column on a phone.
    static let css = """
        :root { --bg: #ffffff; --fg: #1d232a; --muted: #5b6672; --line: #d8dee4; --panel: #f5f7f9; --link: #0a58ca;
          --ok: #176b34; --ok-bg: #dff3e4; --bad: #a4161a; --bad-bg: #fbe3e4; --never: #7a5a00; --never-bg: #fbf1d0;
          --add-bg: #e3f6e8; --del-bg: #fbe6e7; --bar-new: #2f80ed; --bar-none: #8c99a6; --bar-failed: #d64545; --focus: #f0a500;
          color-scheme: light dark; }
        @media (prefers-color-scheme: dark) {
          :root { --bg: #14181c; --fg: #e3e8ed; --muted: #9aa6b2; --line: #2d353d; --panel: #1c2228; --link: #7fb2ff;
            --ok: #7bd88f; --ok-bg: #173522; --bad: #ff8a8a; --bad-bg: #3d1a1c; --never: #f0c95a; --never-bg: #3a3016;
            --add-bg: #173522; --del-bg: #3d1a1c; --bar-new: #5b9dff; --bar-none: #6c7884; --bar-failed: #ff6b6b; }
        }
        * { box-sizing: border-box; }
        body { margin: 0; background: var(--bg); color: var(--fg); font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "Noto Sans", sans-serif; }
        a { color: var(--link); }
        a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, main:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
        .skip { position: absolute; left: -999px; }
        .skip:focus { left: 8px; top: 8px; background: var(--panel); padding: 4px 8px; }
        .hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
        header.top { display: flex; gap: 24px; align-items: baseline; padding: 10px 20px; border-bottom: 1px solid var(--line); background: var(--panel); }
        header.top .brand { font-weight: 700; }
        header.top nav a { margin-right: 14px; text-decoration: none; }
        header.top nav a[aria-current="page"] { font-weight: 700; text-decoration: underline; }
        main { padding: 12px 20px 24px; max-width: 1400px; }
        footer { padding: 8px 20px; color: var(--muted); font-size: 13px; }
        h1 { font-size: 22px; margin: 8px 0 12px; }
        h2 { font-size: 17px; margin: 20px 0 8px; }
        h3 { font-size: 15px; margin: 0 0 4px; }
        .notice { background: var(--panel); border-left: 4px solid var(--link); padding: 6px 10px; }
        .totals { display: flex; flex-wrap: wrap; gap: 12px; margin-bottom: 10px; }
        .totals p { margin: 0; padding: 6px 12px; border: 1px solid var(--line); border-radius: 6px; background: var(--panel); }
        .totals .failing strong { color: var(--bad); }
        .totals .ok strong { color: var(--ok); }
        .filters { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0; }
        input, select, button { font: inherit; color: inherit; background: var(--bg); border: 1px solid var(--line); border-radius: 4px; padding: 3px 8px; }
        button { cursor: pointer; background: var(--panel); }
        .count { color: var(--muted); margin: 4px 0; }
        .scroll { overflow-x: auto; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; vertical-align: top; padding: 5px 8px; border-bottom: 1px solid var(--line); }
        thead th { background: var(--panel); white-space: nowrap; }
        thead th a { color: inherit; }
        th[aria-sort="ascending"] a::after { content: " ▲"; }
        th[aria-sort="descending"] a::after { content: " ▼"; }
        td.number { text-align: right; font-variant-numeric: tabular-nums; }
        tbody th { font-weight: 600; }
        .url { display: block; font-weight: 400; color: var(--muted); font-size: 12px; overflow-wrap: anywhere; }
        .tags { display: block; font-weight: 400; }
        .tag { font-size: 12px; margin-right: 4px; }
        .error { color: var(--bad); overflow-wrap: anywhere; }
        .health { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 13px; font-weight: 600; }
        .health.ok { color: var(--ok); background: var(--ok-bg); }
        .health.failing { color: var(--bad); background: var(--bad-bg); }
        .health.never { color: var(--never); background: var(--never-bg); }
        tr.failing th, tr.failing td { background: var(--bad-bg); }
        .pages { display: flex; gap: 16px; margin: 10px 0; }
        dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 4px 16px; margin: 0; }
        @media (min-width: 1000px) { .settings dl { grid-template-columns: max-content minmax(0, 1fr) max-content minmax(0, 1fr); } }
        dt { color: var(--muted); }
        dd { margin: 0; overflow-wrap: anywhere; }
        .action { display: inline; }
        form.action button { margin-top: 8px; }
        figure { margin: 0; }
        .chart svg { display: block; max-width: 100%; }
        .chart .axis { stroke: var(--line); }
        .chart rect.newData, .key.newData::before { fill: var(--bar-new); background: var(--bar-new); }
        .chart rect.noData, .key.noData::before { fill: var(--bar-none); background: var(--bar-none); }
        .chart rect.failed, .key.failed::before { fill: var(--bar-failed); background: var(--bar-failed); }
        .key::before { content: ""; display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 8px; }
        figcaption { color: var(--muted); font-size: 13px; }
        .record { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin: 10px 0; }
        .record.failing h3 .kind { color: var(--bad); }
        .record.recovered h3 .kind { color: var(--ok); }
        .record p { margin: 4px 0; }
        .summary { color: var(--muted); }
        .shot img { max-width: 100%; max-height: 480px; border: 1px solid var(--line); }
        .note { font-size: 13px; color: var(--muted); }
        table.diff { font: 13px/1.35 ui-monospace, "DejaVu Sans Mono", monospace; }
        table.diff td { border: 0; padding: 0 6px; }
        table.diff pre { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; font: inherit; }
        table.diff .sign { width: 1.5em; color: var(--muted); user-select: none; }
        table.diff tr.add td, table.diff td.add { background: var(--add-bg); }
        table.diff tr.del td, table.diff td.del { background: var(--del-bg); }
        table.diff tr.hunk td, table.diff td.hunk { color: var(--muted); }
        table.diff.split td { width: 50%; }
        .items { padding-left: 20px; }
        @media (max-width: 700px) { main { padding: 8px; } dl { grid-template-columns: 1fr; } }

        """

    /// The tab's icon (without one, browsers ask for `/favicon.ico` and log its 404).
    static let icon = """
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#2f80ed"/><path d="M4 12V4h7M4 8h5" stroke="#fff" stroke-width="2" fill="none"/></svg>

        """

    /// What the pages do with JavaScript on — all of it also works without: the sort links, the
    /// filter form and the pages' links are plain HTTP. With it, the table re-sorts and filters
    /// in place (the same URL fetched and its table swapped in) and refreshes every 10 s. The
    /// fetched page is the server's own, escaped as every page is.
    static let javascript = """
        "use strict";
        (function () {
          const refreshEvery = 10000;
          let busy = false;

          function swap(url, remember) {
            if (busy) { return Promise.resolve(); }
            busy = true;
            return fetch(url, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
              .then(function (response) {
                if (!response.ok) { throw new Error(String(response.status)); }
                return response.text();
              })
              .then(function (text) {
                const fresh = new DOMParser().parseFromString(text, "text/html").getElementById("main");
                const current = document.getElementById("main");
                if (!fresh || !current) { return; }
                const focused = document.activeElement && document.activeElement.id;
                current.replaceWith(document.importNode(fresh, true));
                if (remember) { history.pushState(null, "", url); }
                if (focused) {
                  const again = document.getElementById(focused);
                  if (again) { again.focus(); }
                }
                wire();
              })
              .catch(function () { /* the next refresh tries again; the links still work */ })
              .finally(function () { busy = false; });
          }

          function formURL(form) {
            const query = new URLSearchParams();
            new FormData(form).forEach(function (value, key) { if (value !== "") { query.append(key, value); } });
            const text = query.toString();
            return form.getAttribute("action") + (text ? "?" + text : "");
          }

          function wire() {
            document.querySelectorAll("table.sources thead a, nav.pages a").forEach(function (link) {
              link.addEventListener("click", function (event) {
                event.preventDefault();
                swap(link.getAttribute("href"), true);
              });
            });
            const form = document.querySelector("form.filters");
            if (form) {
              let timer = null;
              form.addEventListener("submit", function (event) {
                event.preventDefault();
                swap(formURL(form), true);
              });
              form.querySelectorAll("select, input[type=checkbox]").forEach(function (field) {
                field.addEventListener("change", function () { swap(formURL(form), true); });
              });
              const text = form.querySelector("input[type=search]");
              if (text) {
                text.addEventListener("input", function () {
                  clearTimeout(timer);
                  timer = setTimeout(function () { swap(formURL(form), true); }, 250);
                });
              }
            }
          }

          window.addEventListener("popstate", function () { swap(location.pathname + location.search, false); });
          document.addEventListener("DOMContentLoaded", function () {
            wire();
            if (document.querySelector("[data-refresh]")) {
              setInterval(function () {
                // Not while someone types into the filter.
                const active = document.activeElement;
                if (document.hidden || (active && active.matches("input, select"))) { return; }
                swap(location.pathname + location.search, false);
              }, refreshEvery);
            }
          });
        })();

        """
}
