/// Sizes and rates as config files write them: `1GiB`, `500MB`, `64k`, `2MB/s`, `1048576`.
///
/// `KB`, `MB`, `GB` are powers of 1000; `KiB`, `MiB`, `GiB` and the bare `k`, `M`, `G` (as
/// curl's `--limit-rate` reads them) powers of 1024. A plain number is bytes.
package enum ByteSizeText {
    package struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        package var description: String
    }

    private static let units: [(suffix: String, bytes: Double)] = [
        ("kib", 0x1p10), ("mib", 0x1p20), ("gib", 0x1p30), ("tib", 0x1p40),
        ("kb", 1e3), ("mb", 1e6), ("gb", 1e9), ("tb", 1e12),
        ("k", 0x1p10), ("m", 0x1p20), ("g", 0x1p30), ("t", 0x1p40), ("b", 1), ("", 1),
    ]

    /// Parses a size; with `rate`, a trailing `/s` is allowed (and meant).
    package static func parse(_ text: String, rate: Bool = false) throws(ParseError) -> Int64 {
        var trimmed = Substring(text.trimmingCharacters(in: .whitespaces).lowercased())
        if rate, trimmed.hasSuffix("/s") { trimmed = trimmed.dropLast(2) }
        let number = trimmed.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
        let unit = trimmed.dropFirst(number.count).trimmingCharacters(in: .whitespaces)
        guard !number.isEmpty, let value = Double(number) else {
            throw ParseError(description: "write it like 500MB, 1GiB or 1048576 (bytes)\(rate ? ", optionally with /s" : "")")
        }
        guard let scale = units.first(where: { $0.suffix == unit })?.bytes else {
            throw ParseError(description: "unknown unit '\(unit)'; units are B, KB, MB, GB (×1000) and KiB, MiB, GiB or k, M, G (×1024)")
        }
        let bytes = (value * scale).rounded()
        guard bytes >= 1 else { throw ParseError(description: "must be at least 1 byte") }
        guard bytes <= 1e15 else { throw ParseError(description: "larger than a petabyte") }
        return Int64(bytes)
    }

    /// `1.5 GiB`, `200 MiB`, `12 KiB`, `900 B`: for reports and progress lines.
    package static func format(_ bytes: Int64) -> String {
        let value = Double(bytes)
        for (unit, scale) in [("GiB", 0x1p30), ("MiB", 0x1p20), ("KiB", 0x1p10)] where value >= scale {
            let scaled = value / scale
            return scaled >= 100 ? "\(Int(scaled.rounded())) \(unit)" : "\((scaled * 10).rounded() / 10) \(unit)"
        }
        return "\(bytes) B"
    }
}
