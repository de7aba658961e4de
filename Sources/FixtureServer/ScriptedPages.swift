import Foundation

/// `/js/<name>`: pages whose content a script builds — absent from the HTML served — and pages
/// that misbehave in a browser, for `render: browser`.
///
/// | name | the page |
/// |---|---|
/// | `list` | a list of `?items=` (5) stories, "Story k (v)", `?v=` marks a version, and `#price` with `?price=` (1299), all added by a script after 50 ms |
/// | `never-settles` | the list, and a request that never ends: the network never goes idle |
/// | `navigates` | moves on to `list?v=moved` 50 ms after it loads |
/// | `popup` | opens `list?v=popup` in a new window, and lists its own |
/// | `alert` | `alert()`s, then adds `#after` |
/// | `loop` | a script that never ends |
/// | `oom` | allocates until the tab dies |
/// | `hostile` | writes control characters, tries `file:///etc/passwd` and the DevTools port of `?devtools=`, and says what it reached in `#reached` |
/// | `images` | the list, an image, a font and a video (`/files/asset-*`), to be blocked |
/// | `headers` | a server-made page showing the `X-Token` and `User-Agent` it was sent and the cookie `session`, and a script from the other origin `?other=` (a port) |
/// | `status` | the list, answered with `?code=` (404) |
/// | `visits` | "visit N" in `#visits`, N counted in a cookie and in localStorage by a script: 1 in a fresh browser context |
enum ScriptedPages {
    static func response(_ name: String, _ request: FixtureServer.Request, port: UInt16) -> FixtureServer.Response {
        let html = [("Content-Type", "text/html; charset=utf-8")]
        let version = request.query["v"].map(safe) ?? "1"
        let items = min(Int(request.query["items"] ?? "") ?? 5, 1000)
        let price = Int(request.query["price"] ?? "") ?? 1299
        let list = listScript(items: items, version: version, price: price)
        func page(_ body: String, head: String = "") -> FixtureServer.Response {
            .full(status: 200, headers: html, body: Array("<!DOCTYPE html><html><head><meta charset=utf-8><title>Scripted \(safe(name))</title>\(head)</head><body>\(body)</body></html>".utf8))
        }
        switch name {
        case "list":
            return page("<h1>News</h1><ul id=\"list\"></ul><p id=\"price\"></p><script>\(list)</script>")
        case "status":
            let code = Int(request.query["code"] ?? "") ?? 404
            return .full(status: code, headers: html, body: Array("<html><body><ul id=\"list\"></ul><script>\(list)</script></body></html>".utf8))
        case "never-settles":
            return page("<ul id=\"list\"></ul><p id=\"price\"></p><script>\(list) fetch('/hang').catch(() => {});</script>")
        case "navigates":
            return page("<p>moving on</p><script>window.addEventListener('load', () => setTimeout(() => { location.href = '/js/list?v=moved'; }, 50));</script>")
        case "popup":
            return page("<ul id=\"list\"></ul><p id=\"price\"></p><script>window.open('/js/list?v=popup', '_blank'); \(list)</script>")
        case "alert":
            return page("<p>before</p><script>alert('Hello \\u0007 from the page'); confirm('Sure?'); document.body.insertAdjacentHTML('beforeend', '<p id=\"after\">after the alert</p>');</script>")
        case "loop":
            return page("<p id=\"before\">before the loop</p><script>setTimeout(() => { for (;;) {} }, 10);</script>")
        case "oom":
            return page("<p>growing</p><script>const kept = []; for (;;) { kept.push(new Array(1 << 24).fill(kept.length + 0.5)); }</script>")
        case "hostile":
            let devtools = request.query["devtools"].flatMap { UInt16($0) }.map(String.init) ?? "0"
            let script = """
            const out = document.getElementById('out');
            out.textContent = 'bell\\u0007 escape\\u001b[31m red\\u001b[0m line\\rreturn';
            const reached = [];
            const say = () => { document.getElementById('reached').textContent = reached.length ? reached.join(',') : 'nothing'; };
            say();
            fetch('file:///etc/passwd').then(() => { reached.push('file'); say(); }).catch(() => {});
            if (\(devtools) > 0) {
              fetch('http://127.0.0.1:\(devtools)/json/version').then(r => r.text()).then(() => { reached.push('devtools-http'); say(); }).catch(() => {});
              try { const ws = new WebSocket('ws://127.0.0.1:\(devtools)/devtools/browser'); ws.onopen = () => { reached.push('devtools-ws'); say(); }; } catch (e) {}
            }
            """
            return page("<p id=\"out\"></p><p id=\"reached\"></p><iframe src=\"file:///etc/passwd\"></iframe><script>\(script)</script>")
        case "images":
            let head = "<style>@font-face { font-family: F; src: url(/files/asset-font.woff2); } body { font-family: F; }</style>"
            return page("<img src=\"/files/asset-image.png\"><video src=\"/files/asset-video.mp4\" autoplay muted></video><ul id=\"list\"></ul><p id=\"price\"></p><script>\(list)</script>", head: head)
        case "headers":
            let token = request.headers["x-token"].map(safe) ?? "none"
            let agent = request.headers["user-agent"].map(safe) ?? "none"
            let cookie = (request.headers["cookie"] ?? "").split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix("session=") }.map { safe(String($0.dropFirst(8))) } ?? "none"
            let other = request.query["other"].flatMap { UInt16($0) }.map { "<script src=\"http://localhost:\($0)/js/other-origin.js\"></script>" } ?? ""
            return page("<p id=\"token\">\(token)</p><p id=\"agent\">\(agent)</p><p id=\"cookie\">\(cookie)</p>\(other)")
        case "visits":
            let script = """
            const cookie = Number((document.cookie.match(/visits=(\\d+)/) || [0, 0])[1]) + 1;
            const stored = Number(localStorage.getItem('visits') || 0) + 1;
            document.cookie = 'visits=' + cookie + '; path=/';
            localStorage.setItem('visits', String(stored));
            document.getElementById('visits').textContent = 'visit ' + cookie + ', stored ' + stored;
            """
            return page("<p id=\"visits\"></p><script>\(script)</script>")
        case "other-origin.js":
            return .full(status: 200, headers: [("Content-Type", "text/javascript")], body: Array("/* another origin */".utf8))
        default:
            return .full(status: 404, headers: [("Content-Type", "text/plain")], body: Array("no such scripted page".utf8))
        }
    }

    /// Builds the list and the price 50 ms after the script runs.
    private static func listScript(items: Int, version: String, price: Int) -> String {
        """
        setTimeout(() => {
          const list = document.getElementById('list');
          for (let k = 1; k <= \(items); k++) { const li = document.createElement('li'); li.textContent = 'Story ' + k + ' (\(version))'; list.appendChild(li); }
          const price = document.getElementById('price');
          if (price) price.textContent = (\(price)).toLocaleString('de-DE') + ',00 €';
        }, 50);
        """
    }

    /// Letters, digits, spaces and `-_.` only: what a query puts into a page or script.
    private static func safe(_ text: String) -> String {
        String(text.unicodeScalars.filter { $0.properties.isAlphabetic || ("0"..."9").contains($0) || " -_./;()".unicodeScalars.contains($0) }.prefix(200).map(Character.init))
    }
}
