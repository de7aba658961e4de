import Foundation

/// Names for downloaded files: taken from the URL or `Content-Disposition`, made safe to
/// create inside the download folder, and made unique there.
package enum FileNames {
    /// The longest name kept, in UTF-8 bytes: room for `.part` and a `-99` suffix within
    /// the 255 bytes Linux file systems allow.
    static let maxBytes = 200

    /// A name that can only ever denote a file directly inside a folder: the last path
    /// component of `candidate` (`/` and `\` both count), without control characters, without
    /// leading dots (no `.`, `..` or hidden files), never ending in `.part` (fetchrun's partial
    /// files), at most ``maxBytes`` long (5 more for a `-file` after a `.part`). `fallback` when
    /// nothing usable is left.
    package static func sanitised(_ candidate: String, fallback: String = "download") -> String {
        let lastComponent = candidate.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var name = String(String.UnicodeScalarView(lastComponent.unicodeScalars.filter { scalar in
            !(scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value) || scalar == "\u{FEFF}")
        }))
        name = name.trimmingCharacters(in: .whitespaces)
        while name.hasPrefix(".") { name.removeFirst() }
        if name.utf8.count > maxBytes { name = truncated(name) }
        // After cutting to length, which can leave a `.part` ending that the whole name hid
        // behind a long extension: such a name would pass for another download's partial file.
        if name.hasSuffix(".part") { name += "-file" }
        return name.isEmpty ? fallback : name
    }

    /// The file name a URL suggests: its path's last segment, percent-decoded, sanitised.
    package static func fromURL(_ url: String) -> String {
        let withoutQuery = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
        let withoutFragment = withoutQuery.split(separator: "#", maxSplits: 1).first.map(String.init) ?? withoutQuery
        let path = withoutFragment.range(of: "://").map { String(withoutFragment[$0.upperBound...].drop { $0 != "/" }) } ?? withoutFragment
        let segment = path.split(separator: "/").last.map(String.init) ?? ""
        return sanitised(segment.removingPercentEncoding ?? segment)
    }

    /// The file name in a `Content-Disposition` header (`filename*=UTF-8''…` preferred over
    /// `filename=`), sanitised; `nil` when it names none.
    package static func fromContentDisposition(_ header: String) -> String? {
        var plain: String?
        var extended: String?
        for parameter in splitParameters(header).dropFirst() {
            guard let equals = parameter.firstIndex(of: "=") else { continue }
            let key = parameter[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            var value = parameter[parameter.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if key == "filename*" {
                // charset'language'percent-encoded
                let pieces = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
                if pieces.count == 3 { extended = String(pieces[2]).removingPercentEncoding }
            } else if key == "filename" {
                if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                    value = String(value.dropFirst().dropLast()).replacingOccurrences(of: "\\\"", with: "\"")
                }
                plain = value
            }
        }
        guard let name = extended ?? plain, !name.isEmpty else { return nil }
        return sanitised(name)
    }

    /// `name` if no file by that name exists in `directory` and `isTaken` does not claim it;
    /// else `name-2.ext`, `name-3.ext`, …
    package static func unique(_ name: String, in directory: String, isTaken: (String) -> Bool = { _ in false }) -> String {
        var counters: [String: Int] = [:]
        return unique(name, in: directory, isTaken: isTaken, counters: &counters)
    }

    /// ``unique(_:in:isTaken:)`` for many names in a row, where each name found stays taken:
    /// `counters` keeps the number each name reached. Many podcasts call every episode
    /// `audio.mp3`, and a feed may list 10,000 items of 32 enclosures: counting up from 2 for
    /// each would make n²/2 tries.
    package static func unique(_ name: String, in directory: String, isTaken: (String) -> Bool, counters: inout [String: Int]) -> String {
        let (stem, ext) = split(name)
        var candidate = name
        var counter = counters[name] ?? 2
        while isTaken(candidate) || exists(candidate, in: directory) || exists(candidate + ".part", in: directory) {
            candidate = "\(stem)-\(counter)\(ext)"
            counter += 1
        }
        counters[name] = counter
        return candidate
    }

    /// A regular file (not a link, not a folder) of that name in `directory`.
    static func isRegularFile(_ name: String, in directory: String) -> Bool {
        var info = stat()
        return lstat((directory as NSString).appendingPathComponent(name), &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    static func exists(_ name: String, in directory: String) -> Bool {
        var info = stat()
        return lstat((directory as NSString).appendingPathComponent(name), &info) == 0
    }

    /// `episode.mp3` → (`episode`, `.mp3`); `archive` → (`archive`, ``).
    static func split(_ name: String) -> (stem: String, ext: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        return (String(name[..<dot]), String(name[dot...]))
    }

    private static func truncated(_ name: String) -> String {
        let (stem, ext) = split(name)
        let keptExt = ext.utf8.count <= 16 ? ext : ""
        var result = ""
        for character in stem {
            guard result.utf8.count + character.utf8.count + keptExt.utf8.count <= maxBytes else { break }
            result.append(character)
        }
        return result + keptExt
    }

    /// Splits a header on `;` outside quoted strings.
    private static func splitParameters(_ header: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in header {
            if escaped { current.append(character); escaped = false; continue }
            if character == "\\" && quoted { escaped = true; current.append(character); continue }
            if character == "\"" { quoted.toggle() }
            if character == ";" && !quoted {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        parts.append(current)
        return parts
    }
}
