import Foundation

extension HTMLDocument {
    /// Elements that stand on lines of their own in text.
    static let blockElements: Set<String> = [
        "address", "article", "aside", "blockquote", "dd", "details", "dialog", "div", "dl", "dt", "fieldset",
        "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li",
        "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead",
        "tr", "ul", "body", "html", "caption", "option", "legend",
    ]

    /// What a reader never sees: left out of text and HTML alike (unless selected themselves).
    static let unseenElements: Set<String> = ["script", "style", "noscript", "template", "head"]

    /// Elements without content or end tag.
    static let voidElements: Set<String> = ["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"]

    /// The element's children's indexes, in order.
    func children(of index: Int) -> [Int] {
        var result: [Int] = []
        var child = index + 1
        while child < nodes[index].end {
            result.append(child)
            child = nodes[child].end
        }
        return result
    }

    /// The element as a reader sees it: block elements on lines of their own, runs of
    /// whitespace as one space, a link as `text <url>` (resolved against the page), images by
    /// their `alt`. `excluded` elements are left out with what they hold. Rendering stops once
    /// `maximumBytes` are written, or 64 times as many nodes visited: a 50 MB page is not
    /// turned whole into text to keep its start. Without `showsLinks` a link is its text alone.
    package func text(of root: Int, excluding excluded: Set<Int> = [], maximumBytes: Int = .max, showsLinks: Bool = true) -> String {
        var renderer = TextRenderer(document: self, excluded: excluded, root: root, budget: maximumBytes, showsLinks: showsLinks)
        renderer.visit(root)
        renderer.flush()
        return renderer.lines.joined(separator: "\n")
    }

    /// An HTML fragment (a feed's summary, a message's HTML) as a reader sees it, with the
    /// rules of ``text(of:excluding:maximumBytes:)``; the text as written when libxml2 cannot
    /// read it. The fragment is a Swift string, so its bytes are UTF-8 whatever a `<meta>` in it says.
    package static func text(ofFragment html: String, maximumBytes: Int = 256 * 1024) -> String {
        guard let page = try? parse(Data(html.utf8), url: nil, charset: "utf-8").document,
              let body = page.nodes.firstIndex(where: { $0.name == "body" }) else { return html }
        return page.text(of: body, maximumBytes: maximumBytes)
    }

    /// The element on one line, as a field of an item reads it: ``text(of:excluding:maximumBytes:showsLinks:)``'s
    /// lines joined, its links as their text (the URL belongs in the item's `link`).
    package func line(of root: Int, excluding excluded: Set<Int> = [], maximumBytes: Int = .max) -> String {
        text(of: root, excluding: excluded, maximumBytes: maximumBytes, showsLinks: false).split(separator: "\n").joined(separator: " ")
    }

    /// The element's HTML, one line per block element, so a line diff shows what changed;
    /// attributes in their order, text and values escaped; stops past `maximumBytes`.
    package func html(of root: Int, excluding excluded: Set<Int> = [], maximumBytes: Int = .max) -> String {
        var lines: [String] = []
        var line = ""
        var written = 0
        func flush() {
            let trimmed = ChangeTracker.collapsingSpaces(Substring(line))
            if !trimmed.isEmpty { lines.append(trimmed) }
            written += trimmed.utf8.count + 1
            line = ""
        }
        func visit(_ index: Int) {
            guard written < maximumBytes else { return }
            let node = nodes[index]
            guard node.isElement else {
                line += Self.escaped(node.text, quotes: false)
                return
            }
            guard !excluded.contains(index), index == root || !Self.unseenElements.contains(node.name) else { return }
            if index == 0 {
                for child in children(of: index) { visit(child) }
                return
            }
            let block = Self.blockElements.contains(node.name)
            if block { flush() }
            line += "<" + node.name + node.attributes.map { " \($0.name)=\"\(Self.escaped($0.value, quotes: true))\"" }.joined() + ">"
            if Self.voidElements.contains(node.name) {
                if block { flush() }
                return
            }
            for child in children(of: index) { visit(child) }
            line += "</\(node.name)>"
            if block { flush() }
        }
        visit(root)
        flush()
        return lines.joined(separator: "\n")
    }

    static func escaped(_ text: String, quotes: Bool) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"" where quotes: result += "&quot;"
            default: result.append(character)
            }
        }
        return result
    }
}

/// Builds the text of an element, line by line. Recursion is bounded by the document's depth
/// (``HTMLDocument/maximumDepth``); the work by the budget: once `budget` bytes of text are
/// made, or 64 times as many nodes visited (elements without text cost too), it stops.
private struct TextRenderer {
    let document: HTMLDocument
    let excluded: Set<Int>
    let root: Int
    let budget: Int
    let visitLimit: Int
    let showsLinks: Bool
    var written = 0
    var visits = 0
    var lines: [String] = []
    var line = ChangeTracker.CollapsedLine()

    init(document: HTMLDocument, excluded: Set<Int>, root: Int, budget: Int, showsLinks: Bool) {
        self.document = document
        self.showsLinks = showsLinks
        self.excluded = excluded
        self.root = root
        self.budget = budget
        let (visits, overflow) = budget.multipliedReportingOverflow(by: 64)
        visitLimit = overflow ? .max : visits
    }

    mutating func flush() {
        if !line.text.isEmpty { lines.append(line.text) }
        written += line.text.utf8.count + 1
        line = ChangeTracker.CollapsedLine()
    }

    var exhausted: Bool {
        written + line.text.utf8.count >= budget || visits >= visitLimit
    }

    mutating func visit(_ index: Int) {
        guard !exhausted else { return }
        visits += 1
        let node = document.nodes[index]
        guard node.isElement else {
            // A text node may hold megabytes: only what the budget has room for (in characters,
            // each at least a byte).
            line.append(node.text.prefix(budget - written - line.text.utf8.count))
            return
        }
        guard !excluded.contains(index), index == root || !HTMLDocument.unseenElements.contains(node.name) else { return }
        switch node.name {
        case "br":
            flush()
            return
        case "img":
            if let alt = node.attribute("alt"), !alt.isEmpty { line.append(" " + alt + " ") }
            return
        default:
            break
        }
        let block = HTMLDocument.blockElements.contains(node.name)
        if block { flush() }
        // Child by child rather than ``HTMLDocument/children(of:)``: a million children are not
        // listed for the few read before the budget runs out.
        var child = index + 1
        while child < node.end, !exhausted {
            visit(child)
            child = document.nodes[child].end
        }
        if showsLinks, node.name == "a", let href = node.attribute("href")?.trimmingCharacters(in: .whitespacesAndNewlines), Self.isShown(href) {
            line.append(" <" + ItemDraft.resolve(href, against: document.baseURL) + ">")
        }
        if block { flush() }
    }

    /// Links worth showing: not an anchor on the same page, not a script.
    private static func isShown(_ href: String) -> Bool {
        !href.isEmpty && !href.hasPrefix("#") && !href.lowercased().hasPrefix("javascript:")
    }
}
