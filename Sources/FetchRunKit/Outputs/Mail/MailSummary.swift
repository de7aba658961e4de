import Foundation

/// An item's summary as a mail's HTML part may carry it: the feed's markup read by libxml2's
/// HTML parser and written again from an allow-list, so that whatever a feed sends comes out
/// inert.
///
/// - Elements: text structure (`p`, lists, tables, quotes, headings, emphasis, code, `br`,
///   `hr`) are kept without their attributes but the few below; `script`, `style`, `iframe`,
///   `object`, `form` and the other active or invisible elements go with everything inside
///   them; any other element is unwrapped (its content kept).
/// - Attributes: `href` on `a` and `src` on `img` only as absolute `http:`/`https:` URLs
///   (`mailto:` for links), relative ones resolved against the item's link first; `alt`,
///   `title`, table spans. No `style`, `class`, `id` or event handler ever passes.
/// - Images: left out unless the output asks for them (`images: true`): a remote image tells
///   the sender that the mail was read. An image that is left out leaves its `alt` text.
/// - Bounds: the parser's own (nodes and depth, ``HTMLDocument``); elements nested deeper
///   than ``maximumDepth`` are unwrapped, and the text is the item's, already capped.
package enum MailSummary {
    /// Elements kept as elements.
    static let keptElements: Set<String> = [
        "a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "dd", "del", "dfn", "div", "dl", "dt", "em",
        "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p",
        "pre", "q", "s", "samp", "small", "span", "strong", "sub", "sup", "table", "tbody", "td", "tfoot", "th", "thead",
        "time", "tr", "u", "ul", "var",
    ]
    /// Elements dropped with all they hold: code, styles, embedded documents, forms and their
    /// controls, and what a reader never sees (`head`, `template`). Others that are not kept —
    /// `embed`, `input`, `meta`, `base`, which the parser may leave open around what follows —
    /// are unwrapped like any unknown element, so that the text after them stays.
    static let droppedElements: Set<String> = [
        "script", "style", "iframe", "frameset", "object", "applet", "form", "button", "select", "textarea", "option",
        "noscript", "template", "svg", "math", "head", "title", "audio", "video", "canvas", "portal", "dialog", "noembed",
        "noframes", "xmp", "plaintext",
    ]
    /// Elements without content: written without a closing tag.
    static let voidElements: Set<String> = ["br", "hr", "img"]
    /// The attributes kept, per element, besides the URL ones.
    static let keptAttributes: [String: Set<String>] = [
        "a": ["title"], "abbr": ["title"], "img": ["alt", "title", "width", "height"], "td": ["colspan", "rowspan"],
        "th": ["colspan", "rowspan"], "ol": ["start"], "time": ["datetime"],
    ]
    /// Inline styles for the elements whose look matters in a mail client that drops `<style>`.
    static let styles: [String: String] = [
        "a": "color:#0b57d0;text-decoration:underline",
        "img": "max-width:100%;height:auto;border:0",
        "blockquote": "margin:8px 0;padding:0 0 0 12px;border-left:3px solid #c4c9d0",
        "pre": "white-space:pre-wrap;word-break:break-word;font-size:13px",
        "table": "border-collapse:collapse;max-width:100%",
        "td": "border:1px solid #d0d7de;padding:4px 6px", "th": "border:1px solid #d0d7de;padding:4px 6px",
    ]
    /// How deep kept elements nest; deeper ones are unwrapped.
    static let maximumDepth = 32

    /// The summary as sanitised HTML.
    /// - Parameters:
    ///   - summary: the item's summary: HTML, or plain text (no tag in it), whose line breaks
    ///     are kept.
    ///   - baseURL: what relative links resolve against (the item's link); without one they
    ///     are dropped.
    ///   - images: keep `img` elements with an `http(s)` source.
    package static func html(_ summary: String, baseURL: String?, images: Bool) -> String {
        guard looksLikeMarkup(summary) else {
            return summary.split(separator: "\n", omittingEmptySubsequences: false).map { MarkupText.escaped(String($0)) }.joined(separator: "<br>")
        }
        // Wrapped so that a fragment parses as a body's content; a summary of markup the parser
        // cannot read at all shows as its text.
        guard let parsed = try? HTMLDocument.parse(Data(summary.utf8), url: baseURL, charset: "utf-8", nodeLimit: 200_000) else {
            return MarkupText.escaped(ItemDraft.stripTags(summary))
        }
        return write(parsed.document, images: images)
    }

    /// Whether `text` has a tag in it: `<` before an ASCII letter, `/` or `!`. "a < b" and
    /// "<мир>" are text.
    static func looksLikeMarkup(_ text: String) -> Bool {
        var afterOpen = false
        for byte in text.utf8 {
            if afterOpen, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "!") { return true }
            afterOpen = byte == UInt8(ascii: "<")
        }
        return false
    }

    private static func write(_ document: HTMLDocument, images: Bool) -> String {
        let nodes = document.nodes
        var output = ""
        // The elements written and still open: their name and the index where their subtree ends.
        var open: [(name: String, end: Int)] = []
        var index = 1
        while index < nodes.count {
            while let last = open.last, index >= last.end {
                output += "</\(last.name)>"
                open.removeLast()
            }
            let node = nodes[index]
            guard node.isElement else {
                output += MarkupText.escaped(node.text)
                index += 1
                continue
            }
            if droppedElements.contains(node.name) {
                index = node.end
                continue
            }
            index += 1
            guard keptElements.contains(node.name), open.count < maximumDepth else { continue }
            switch node.name {
            case "img":
                let source = images ? MarkupText.webLink(node.attribute("src").map { ItemDraft.resolve(trimmed($0), against: document.baseURL) }) : nil
                guard let source else {
                    if let alt = node.attribute("alt"), !alt.isEmpty { output += MarkupText.escaped("[\(alt)]") }
                    continue
                }
                output += "<img src=\"\(MarkupText.escaped(source))\"" + attributes(of: node) + ">"
                continue
            case "a":
                let target = node.attribute("href").flatMap { MarkupText.webLink(ItemDraft.resolve(trimmed($0), against: document.baseURL), mailto: true) }
                guard let target else { continue } // a link to nowhere safe: its text stays
                output += "<a href=\"\(MarkupText.escaped(target))\"" + attributes(of: node) + ">"
            default:
                output += "<\(node.name)" + attributes(of: node) + ">"
            }
            if voidElements.contains(node.name) {
                index = node.end
            } else {
                open.append((node.name, node.end))
            }
        }
        for element in open.reversed() { output += "</\(element.name)>" }
        return output
    }

    /// A URL attribute without the spaces around it, which browsers ignore too.
    private static func trimmed(_ text: String) -> String {
        text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The kept attributes of `node`, and its inline style, each ` name="value"`.
    private static func attributes(of node: HTMLDocument.Node) -> String {
        var text = ""
        for name in keptAttributes[node.name] ?? [] {
            guard let value = node.attribute(name) else { continue }
            // Numbers stay numbers: a span or a width is no place for text.
            if ["colspan", "rowspan", "width", "height", "start"].contains(name), !(1...4).contains(value.count) || !value.allSatisfy(\.isASCII) || !value.allSatisfy(\.isNumber) { continue }
            text += " \(name)=\"\(MarkupText.escaped(String(value.prefix(500))))\""
        }
        if let style = styles[node.name] { text += " style=\"\(style)\"" }
        return text
    }
}
