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
