/// Text made safe for XML and HTML, in an element or in an attribute (quoted with `"` or
/// `'`): the markup characters escaped, and what XML 1.0 cannot hold at all — C0 controls
/// other than tab, line feed and carriage return, U+FFFE and U+FFFF — left out, so that a feed
/// title carrying an escape sequence or a NUL cannot make a document unreadable.
package enum MarkupText {
    package static func escaped(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            case "\t", "\n", "\r": result += "&#\(scalar.value);"
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF { continue }
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}

extension MarkupText {
    /// `text` as a link target a page or a mail may carry: an absolute `http:` or `https:` URL
    /// (and `mailto:` when `mailto` is set) of at most 4 KiB, with no space or control character
    /// anywhere; `nil` for anything else — `javascript:`, `data:`, relative paths, a scheme
    /// hidden behind a tab — which the caller shows as text instead. Escaping is still the
    /// caller's: this only decides whether it is a link.
    package static func webLink(_ text: String?, mailto: Bool = false) -> String? {
        guard let text, text.utf8.count <= 4_096 else { return nil }
        let lowered = text.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") || (mailto && lowered.hasPrefix("mailto:")) else { return nil }
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || (0x80...0x9F).contains($0.value) }) else { return nil }
        return text
    }
}
