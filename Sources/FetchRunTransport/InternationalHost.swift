import FetchRunCore
/// Host names in other scripts (`bücher.example`), made ASCII for libcurl.
///
/// libcurl converts such names with libidn2 only when the process's locale says how its bytes
/// are encoded, which a program that embeds fetchrun may not have set (curl's own tool calls
/// `setlocale`). So the HTTP layer converts them itself, before curl sees the URL: each label
/// that is not ASCII is lower-cased and written as `xn--` + its Punycode (RFC 3492), as IDNA
/// does for the names people type.
package enum InternationalHost {
    /// The URL with its host's non-ASCII labels in Punycode; other URLs unchanged.
    package static func asciiURL(_ url: String) -> String {
        guard !url.utf8.allSatisfy({ $0 < 0x80 }), let authority = HTTPText.authority(of: url) else { return url }
        let authorityEnd = authority.upperBound
        let hostStart = url[authority].lastIndex(of: "@").map { url.index(after: $0) } ?? authority.lowerBound
        // The port, if any, follows the last ':' (IPv6 literals in brackets are ASCII anyway).
        let hostEnd = url[hostStart..<authorityEnd].lastIndex(of: ":") ?? authorityEnd
        let host = url[hostStart..<hostEnd]
        guard !host.utf8.allSatisfy({ $0 < 0x80 }) else { return url }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false).map { label -> String in
            guard !label.utf8.allSatisfy({ $0 < 0x80 }) else { return String(label) }
            return punycode(label.lowercased()).map { "xn--" + $0 } ?? String(label)
        }
        return String(url[..<hostStart]) + labels.joined(separator: ".") + String(url[hostEnd...])
    }

    /// RFC 3492's encoder; `nil` when the label is too long to be a host name label anyway.
    static func punycode(_ label: String) -> String? {
        let base = 36, tMin = 1, tMax = 26
        let input = label.unicodeScalars.map { Int($0.value) }
        guard input.count <= 63 else { return nil }
        var output = input.filter { $0 < 0x80 }.map { Character(Unicode.Scalar(UInt8($0))) }
        let basicCount = output.count
        if basicCount > 0 { output.append("-") }

        func digit(_ value: Int) -> Character {
            Character(Unicode.Scalar(UInt8(value < 26 ? value + 97 : value + 22)))
        }
        func adapt(_ delta: Int, _ count: Int, _ first: Bool) -> Int {
            var delta = first ? delta / 700 : delta / 2
            delta += delta / count
            var k = 0
            while delta > ((base - tMin) * tMax) / 2 {
                delta /= base - tMin
                k += base
            }
            return k + (base - tMin + 1) * delta / (delta + 38)
        }

        var n = 128, delta = 0, bias = 72, handled = basicCount
        while handled < input.count {
            let next = input.filter { $0 >= n }.min()!
            delta += (next - n) * (handled + 1)
            n = next
            for code in input {
                if code < n { delta += 1 }
                guard code == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = k <= bias ? tMin : k >= bias + tMax ? tMax : k - bias
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta, handled + 1, handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return String(output)
    }
}
