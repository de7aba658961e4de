import CLibXML2
import Foundation

/// The character encoding of an HTML page, decided as the HTML standard's encoding sniffing
/// decides it in a browser, so that fetchrun reads a page's text as its readers see it:
///
/// 1. a byte-order mark (UTF-8, UTF-16LE, UTF-16BE) wins over everything;
/// 2. then the `charset` of the HTTP `Content-Type`;
/// 3. then a `<meta charset>` or `<meta http-equiv="Content-Type" content="…;charset=…">` within
///    the first 1,024 bytes (a `utf-16` there means UTF-8: the bytes were read as ASCII to find it);
/// 4. when nothing is declared, UTF-8 if the bytes are valid UTF-8, else windows-1252.
///
/// Labels are matched as the Encoding Standard matches them: `iso-8859-1`, `latin1` and
/// `us-ascii` all name windows-1252. A label libxml2 has no converter for is passed over, as a
/// browser passes over a label it does not know.
package struct HTMLEncoding: Sendable, Equatable {
    /// The encoding's name as libxml2 knows it.
    package var name: String
    /// The length of the byte-order mark the bytes start with (0 without one): libxml2 is given
    /// the bytes after it.
    package var byteOrderMarkLength: Int
    /// What decided it.
    package var origin: Origin

    package enum Origin: String, Sendable {
        case byteOrderMark = "byte-order mark"
        case http = "HTTP charset"
        case meta = "<meta> charset"
        case validUTF8 = "valid UTF-8"
        case fallback = "windows-1252 fallback"
    }

    /// How far into the page a `<meta>` declaration counts (the standard's prescan).
    package static let prescanLength = 1024

    /// The encoding of `bytes`, given the HTTP header's `charset` (nil without one).
    package static func sniff(_ bytes: UnsafeRawBufferPointer, httpCharset: String?) -> HTMLEncoding {
        if let bom = byteOrderMark(bytes) { return bom }
        if let label = httpCharset, let name = supported(label, fromMeta: false) {
            return HTMLEncoding(name: name, byteOrderMarkLength: 0, origin: .http)
        }
        if let label = prescan(UnsafeRawBufferPointer(rebasing: bytes.prefix(prescanLength))), let name = supported(label, fromMeta: true) {
            return HTMLEncoding(name: name, byteOrderMarkLength: 0, origin: .meta)
        }
        return isUTF8(bytes)
            ? HTMLEncoding(name: "UTF-8", byteOrderMarkLength: 0, origin: .validUTF8)
            : HTMLEncoding(name: "windows-1252", byteOrderMarkLength: 0, origin: .fallback)
    }

    /// `sniff` over `Data`.
    package static func sniff(_ data: Data, httpCharset: String?) -> HTMLEncoding {
        data.withUnsafeBytes { sniff($0, httpCharset: httpCharset) }
    }

    private static func byteOrderMark(_ bytes: UnsafeRawBufferPointer) -> HTMLEncoding? {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
            return HTMLEncoding(name: "UTF-8", byteOrderMarkLength: 3, origin: .byteOrderMark)
        }
        if bytes.count >= 2, bytes[0] == 0xFE, bytes[1] == 0xFF {
            return HTMLEncoding(name: "UTF-16BE", byteOrderMarkLength: 2, origin: .byteOrderMark)
        }
        if bytes.count >= 2, bytes[0] == 0xFF, bytes[1] == 0xFE {
            return HTMLEncoding(name: "UTF-16LE", byteOrderMarkLength: 2, origin: .byteOrderMark)
        }
        return nil
    }

    /// Labels the Encoding Standard gives another encoding's name than libxml2 would.
    private static let windows1252Labels: Set<String> = [
        "ansi_x3.4-1968", "ascii", "cp1252", "cp819", "csisolatin1", "ibm819", "iso-8859-1", "iso-ir-100",
        "iso8859-1", "iso88591", "iso_8859-1", "iso_8859-1:1987", "l1", "latin1", "us-ascii", "windows-1252", "x-cp1252",
    ]
    private static let utf8Labels: Set<String> = ["unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8", "x-unicode20utf8"]

    /// The encoding a label names, or nil when it names none libxml2 can convert.
    package static func supported(_ label: String, fromMeta: Bool) -> String? {
        let label = label.trimmingCharacters(in: CharacterSet(charactersIn: " \t\n\r\u{0C}\"'")).lowercased()
        guard !label.isEmpty, label.utf8.count <= 40, label.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        if utf8Labels.contains(label) { return "UTF-8" }
        if windows1252Labels.contains(label) { return "windows-1252" }
        if label.hasPrefix("utf-16") || label == "unicode" || label == "ucs-2" {
            // A `<meta>` was found by reading the bytes as ASCII, so they are not UTF-16.
            if fromMeta { return "UTF-8" }
            return label == "utf-16be" || label == "unicodefffe" ? "UTF-16BE" : "UTF-16LE"
        }
        if label == "x-user-defined" { return fromMeta ? "windows-1252" : nil }
        guard let handler = xmlFindCharEncodingHandler(label) else { return nil }
        xmlCharEncCloseFunc(handler)
        return label
    }

    /// Whether the bytes are UTF-8; an incomplete character at the very end (a body cut by
    /// `max_bytes`) does not count against them.
    package static func isUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = bytes.count
        while index < count {
            let lead = bytes[index]
            if lead < 0x80 { index += 1; continue }
            let length: Int
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0...0xEF: length = 3
            case 0xF0...0xF4: length = 4
            default: return false
            }
            for offset in 1..<length {
                guard index + offset < count else { return true } // cut at the end
                let byte = bytes[index + offset]
                guard byte & 0xC0 == 0x80 else { return false }
                if offset == 1 {
                    // Overlong forms, surrogates and code points past U+10FFFF.
                    if lead == 0xE0 && byte < 0xA0 { return false }
                    if lead == 0xED && byte > 0x9F { return false }
                    if lead == 0xF0 && byte < 0x90 { return false }
                    if lead == 0xF4 && byte > 0x8F { return false }
                }
            }
            index += length
        }
        return true
    }

    // MARK: The prescan

    /// The charset a `<meta>` in `bytes` declares: the standard's prescan, which skips comments
    /// and other tags and reads a `<meta>`'s attributes as a browser does.
    package static func prescan(_ bytes: UnsafeRawBufferPointer) -> String? {
        var scanner = Prescanner(bytes: bytes)
        return scanner.run()
    }

    private struct Prescanner {
        let bytes: UnsafeRawBufferPointer
        var position = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        private func byte(_ offset: Int = 0) -> UInt8? {
            position + offset < bytes.count ? bytes[position + offset] : nil
        }

        private static func lower(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte }
        private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D || byte == 0x20 }
        private static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }

        private func starts(with text: String) -> Bool {
            for (offset, expected) in text.utf8.enumerated() {
                guard let actual = byte(offset), Self.lower(actual) == expected else { return false }
            }
            return true
        }

        mutating func run() -> String? {
            while position < bytes.count {
                if starts(with: "<!--") {
                    // Up to the end of the comment; "-->" may share its dashes with the opening.
                    position += 2
                    while position < bytes.count, !starts(with: "-->") { position += 1 }
                    position += 3
                } else if starts(with: "<meta"), let after = byte(5), Self.isSpace(after) || after == 0x2F {
                    position += 5
                    if let charset = meta() { return charset }
                } else if byte() == 0x3C, let next = byte(1), Self.isLetter(next) || (next == 0x2F && byte(2).map(Self.isLetter) == true) {
                    // Another tag: past its name and attributes, so that a value holding "<meta" is not read as one.
                    position += next == 0x2F ? 2 : 1
                    while let current = byte(), !Self.isSpace(current), current != 0x2F, current != 0x3E { position += 1 }
                    while attribute() != nil {}
                } else if byte() == 0x3C, let next = byte(1), next == 0x21 || next == 0x2F || next == 0x3F {
                    while let current = byte(), current != 0x3E { position += 1 }
                    position += 1
                } else {
                    position += 1
                }
            }
            return nil
        }

        /// A `<meta>`'s attributes, from after its name: the charset it declares, if any.
        private mutating func meta() -> String? {
            var seen: Set<String> = []
            var gotPragma = false
            var needPragma: Bool?
            var charset: String?
            while let (name, value) = attribute() {
                guard seen.insert(name).inserted else { continue }
                switch name {
                case "http-equiv":
                    if value.lowercased() == "content-type" { gotPragma = true }
                case "content":
                    if charset == nil, let declared = HTMLEncoding.charset(inContent: value) {
                        charset = declared
                        needPragma = true
                    }
                case "charset":
                    charset = value
                    needPragma = false
                default:
                    break
                }
            }
            guard let charset, let needPragma else { return nil }
            return needPragma && !gotPragma ? nil : charset
        }

        /// The next attribute of a tag (name lower-cased), or nil at the tag's end.
        private mutating func attribute() -> (String, String)? {
            while let current = byte(), Self.isSpace(current) || current == 0x2F { position += 1 }
            guard let first = byte(), first != 0x3E else {
                position += 1
                return nil
            }
            var name: [UInt8] = []
            var value: [UInt8] = []
            // The name: up to `=`, a space, `/` or `>`.
            while let current = byte() {
                if current == 0x3D, !name.isEmpty { break }
                if Self.isSpace(current) || current == 0x2F || current == 0x3E { break }
                name.append(Self.lower(current))
                position += 1
            }
            while let current = byte(), Self.isSpace(current) { position += 1 }
            guard byte() == 0x3D else { return (String(decoding: name, as: UTF8.self), "") }
            position += 1
            while let current = byte(), Self.isSpace(current) { position += 1 }
            guard let opening = byte() else { return nil }
            if opening == 0x22 || opening == 0x27 {
                position += 1
                while let current = byte(), current != opening {
                    value.append(Self.lower(current))
                    position += 1
                }
                position += 1
            } else {
                while let current = byte(), !Self.isSpace(current), current != 0x3E {
                    value.append(Self.lower(current))
                    position += 1
                }
            }
            return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
        }
    }

    /// The charset in a `content` attribute's `text/html; charset=…` (the standard's
    /// "extracting a character encoding from a meta element").
    package static func charset(inContent content: String) -> String? {
        let lowered = Array(content.lowercased().utf8)
        var index = 0
        while index + 7 <= lowered.count {
            guard lowered[index..<(index + 7)].elementsEqual("charset".utf8) else {
                index += 1
                continue
            }
            var position = index + 7
            while position < lowered.count, lowered[position] == 0x20 || lowered[position] == 0x09 { position += 1 }
            guard position < lowered.count, lowered[position] == 0x3D else {
                index += 7
                continue
            }
            position += 1
            while position < lowered.count, lowered[position] == 0x20 || lowered[position] == 0x09 { position += 1 }
            guard position < lowered.count else { return nil }
            let quote = lowered[position]
            if quote == 0x22 || quote == 0x27 {
                guard let end = lowered[(position + 1)...].firstIndex(of: quote) else { return nil }
                return String(decoding: lowered[(position + 1)..<end], as: UTF8.self)
            }
            let end = lowered[position...].firstIndex(where: { $0 == 0x3B || $0 == 0x20 || $0 == 0x09 }) ?? lowered.count
            return end > position ? String(decoding: lowered[position..<end], as: UTF8.self) : nil
        }
        return nil
    }
}
