import Foundation

/// HTML character references in feed text: `&#8217;`, `&#x2019;`, `&rsquo;`, `&nbsp;`.
///
/// Feeds often escape HTML twice, so a title arrives from the XML parser as `AT&amp;T` or
/// `It&#8217;s`; and named HTML entities appear undeclared in XML, where the parser leaves
/// them as references. Both are decoded here, with the common HTML names.
enum HTMLEntities {
    static let named: [String: Character] = [
        "amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": "\u{A0}",
        "iexcl": "¡", "cent": "¢", "pound": "£", "curren": "¤", "yen": "¥", "brvbar": "¦", "sect": "§",
        "uml": "¨", "copy": "©", "ordf": "ª", "laquo": "«", "not": "¬", "shy": "\u{AD}", "reg": "®",
        "macr": "¯", "deg": "°", "plusmn": "±", "sup2": "²", "sup3": "³", "acute": "´", "micro": "µ",
        "para": "¶", "middot": "·", "cedil": "¸", "sup1": "¹", "ordm": "º", "raquo": "»", "frac14": "¼",
        "frac12": "½", "frac34": "¾", "iquest": "¿", "Agrave": "À", "Aacute": "Á", "Acirc": "Â",
        "Atilde": "Ã", "Auml": "Ä", "Aring": "Å", "AElig": "Æ", "Ccedil": "Ç", "Egrave": "È",
        "Eacute": "É", "Ecirc": "Ê", "Euml": "Ë", "Igrave": "Ì", "Iacute": "Í", "Icirc": "Î", "Iuml": "Ï",
        "ETH": "Ð", "Ntilde": "Ñ", "Ograve": "Ò", "Oacute": "Ó", "Ocirc": "Ô", "Otilde": "Õ", "Ouml": "Ö",
        "times": "×", "Oslash": "Ø", "Ugrave": "Ù", "Uacute": "Ú", "Ucirc": "Û", "Uuml": "Ü", "Yacute": "Ý",
        "THORN": "Þ", "szlig": "ß", "agrave": "à", "aacute": "á", "acirc": "â", "atilde": "ã", "auml": "ä",
        "aring": "å", "aelig": "æ", "ccedil": "ç", "egrave": "è", "eacute": "é", "ecirc": "ê", "euml": "ë",
        "igrave": "ì", "iacute": "í", "icirc": "î", "iuml": "ï", "eth": "ð", "ntilde": "ñ", "ograve": "ò",
        "oacute": "ó", "ocirc": "ô", "otilde": "õ", "ouml": "ö", "divide": "÷", "oslash": "ø", "ugrave": "ù",
        "uacute": "ú", "ucirc": "û", "uuml": "ü", "yacute": "ý", "thorn": "þ", "yuml": "ÿ",
        "OElig": "Œ", "oelig": "œ", "Scaron": "Š", "scaron": "š", "Yuml": "Ÿ", "fnof": "ƒ", "circ": "ˆ",
        "tilde": "˜", "ensp": "\u{2002}", "emsp": "\u{2003}", "thinsp": "\u{2009}", "zwnj": "\u{200C}",
        "zwj": "\u{200D}", "lrm": "\u{200E}", "rlm": "\u{200F}", "ndash": "–", "mdash": "—", "lsquo": "‘",
        "rsquo": "’", "sbquo": "‚", "ldquo": "“", "rdquo": "”", "bdquo": "„", "dagger": "†", "Dagger": "‡",
        "bull": "•", "hellip": "…", "permil": "‰", "prime": "′", "Prime": "″", "lsaquo": "‹", "rsaquo": "›",
        "oline": "‾", "frasl": "⁄", "euro": "€", "trade": "™", "larr": "←", "uarr": "↑", "rarr": "→",
        "darr": "↓", "harr": "↔", "minus": "−", "le": "≤", "ge": "≥", "ne": "≠", "asymp": "≈", "infin": "∞",
        "Alpha": "Α", "Beta": "Β", "Gamma": "Γ", "Delta": "Δ", "alpha": "α", "beta": "β", "gamma": "γ",
        "delta": "δ", "pi": "π", "mu": "μ", "sigma": "σ", "omega": "ω", "Omega": "Ω",
    ]

    /// Replaces character references; unknown names stay as written.
    static func decode(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count)
        var index = text.startIndex
        while let ampersand = text[index...].firstIndex(of: "&") {
            result += text[index..<ampersand]
            let afterAmpersand = text.index(after: ampersand)
            guard let semicolon = text[afterAmpersand...].prefix(12).firstIndex(of: ";"),
                  let character = character(for: text[afterAmpersand..<semicolon]) else {
                result.append("&")
                index = afterAmpersand
                continue
            }
            result.append(character)
            index = text.index(after: semicolon)
        }
        result += text[index...]
        return result
    }

    /// `#8217`, `#x2019` or a name, without `&` and `;`.
    static func character(for reference: Substring) -> Character? {
        if reference.hasPrefix("#") {
            let digits = reference.dropFirst()
            let value = digits.first == "x" || digits.first == "X" ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits)
            // Control characters and unpaired surrogates are not text.
            guard let value, value >= 0x20 || value == 0x9 || value == 0xA, let scalar = Unicode.Scalar(value) else { return nil }
            return Character(scalar)
        }
        return named[String(reference)]
    }
}

/// Turns undeclared HTML entity references (`&nbsp;`, `&eacute;`) into numeric ones before
/// libxml2 sees the document.
///
/// XML knows only five named entities; feeds use the HTML ones anyway, and to libxml2 each is
/// a well-formedness error ("Entity 'nbsp' not defined") that recovery would drop. A numeric reference means the
/// same character and is always well-formed. Names outside the HTML table are left alone, so a
/// document's own entities are still never substituted.
enum HTMLEntityRewriter {
    private static let xmlPredefined: [[UInt8]] = ["amp", "lt", "gt", "quot", "apos"].map { Array($0.utf8) }

    /// The length of `&lt;`, `&gt;`, `&amp;`, `&quot;` or `&apos;` at `ampersand`, if one is there.
    private static func xmlPredefinedLength(_ bytes: UnsafeBufferPointer<UInt8>, after ampersand: Int) -> Int? {
        let rest = bytes.count - ampersand
        guard rest >= 4 else { return nil }
        let a = bytes[ampersand + 1], b = bytes[ampersand + 2], c = bytes[ampersand + 3]
        if (a == UInt8(ascii: "l") || a == UInt8(ascii: "g")) && b == UInt8(ascii: "t") && c == UInt8(ascii: ";") { return 4 }
        guard rest >= 5 else { return nil }
        let d = bytes[ampersand + 4]
        if a == UInt8(ascii: "a") && b == UInt8(ascii: "m") && c == UInt8(ascii: "p") && d == UInt8(ascii: ";") { return 5 }
        return nil
    }

    private static func isXMLPredefined(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        name.count <= 4 && xmlPredefined.contains { $0.elementsEqual(name) }
    }

    /// The rewritten document, or `nil` when there was nothing to rewrite (or it is UTF-16,
    /// where the bytes are not ASCII-compatible).
    static func rewrite(_ data: Data) -> Data? {
        if data.starts(with: [0xFE, 0xFF]) || data.starts(with: [0xFF, 0xFE]) { return nil }
        return data.withUnsafeBytes { buffer -> Data? in
            let bytes = buffer.bindMemory(to: UInt8.self)
            var output: Data?
            var copiedUpTo = 0
            var index = 0
            while index < bytes.count {
                guard let found = memchr(bytes.baseAddress! + index, Int32(UInt8(ascii: "&")), bytes.count - index) else { break }
                let ampersand = bytes.baseAddress!.distance(to: found.assumingMemoryBound(to: UInt8.self))
                index = ampersand + 1
                // Escaped markup (`&lt;p&gt;`) makes the XML names by far the commonest: skip them first.
                if let skip = xmlPredefinedLength(bytes, after: ampersand) {
                    index = ampersand + skip
                    continue
                }
                var end = ampersand + 1
                while end < bytes.count, end - ampersand <= 10, isNameByte(bytes[end]) { end += 1 }
                guard end < bytes.count, bytes[end] == UInt8(ascii: ";"), end > ampersand + 1 else { continue }
                let nameBytes = UnsafeBufferPointer(rebasing: bytes[(ampersand + 1)..<end])
                // The five XML names are by far the commonest: skip them without making a String.
                guard !isXMLPredefined(nameBytes) else { continue }
                let name = String(decoding: nameBytes, as: UTF8.self)
                guard let character = HTMLEntities.named[name] else { continue }
                if output == nil { output = Data(capacity: bytes.count + 64) }
                output!.append(UnsafeBufferPointer(rebasing: bytes[copiedUpTo..<ampersand]))
                output!.append(contentsOf: Array("&#\(character.unicodeScalars.first!.value);".utf8))
                copiedUpTo = end + 1
                index = end + 1
            }
            guard var output else { return nil }
            output.append(UnsafeBufferPointer(rebasing: bytes[copiedUpTo...]))
            return output
        }
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
