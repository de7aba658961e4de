import Foundation

/// Appends sources to a config file's text and changes nothing else: comments, order, quoting
/// and blank lines stay as they were. What `import`, `add` and `init` write with.
///
/// The new entries go at the end of the `sources:` block list (or a new `sources:` at the end
/// of the file when there is none), indented like the entries already there. Values are
/// written as double-quoted YAML strings with `$` doubled, so that text from a subscription
/// list or a web page can never be read as a `${VAR}` and send a secret somewhere.
package enum ConfigEditor {
    /// A source to append: its name, type, then its other keys in order, then keys whose value
    /// is a map of texts (a page's or JSON API's `items:`).
    package struct NewSource: Sendable, Equatable {
        package var name: String
        package var type: String
        package var fields: [(key: String, value: String)]
        package var maps: [(key: String, entries: [(key: String, value: String)])]
        package var tags: [String]

        package init(name: String, type: String, fields: [(key: String, value: String)] = [], maps: [(key: String, entries: [(key: String, value: String)])] = [], tags: [String] = []) {
            self.name = name
            self.type = type
            self.fields = fields
            self.maps = maps
            self.tags = tags
        }

        package static func == (lhs: NewSource, rhs: NewSource) -> Bool {
            func flat(_ source: NewSource) -> [String] {
                source.fields.flatMap { [$0.key, $0.value] } + source.maps.flatMap { map in [map.key] + map.entries.flatMap { [$0.key, $0.value] } }
            }
            return lhs.name == rhs.name && lhs.type == rhs.type && lhs.tags == rhs.tags && flat(lhs) == flat(rhs)
        }
    }

    package struct EditError: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// `text` with `sources` appended to its `sources:` list.
    /// - Throws: ``EditError`` when `sources:` is written in flow style (`[...]`) with entries,
    ///   which cannot be appended to without rewriting it.
    package static func appending(_ sources: [NewSource], to text: String) throws(EditError) -> String {
        guard !sources.isEmpty else { return text }
        var lines = text.components(separatedBy: "\n")
        // A final newline leaves an empty last element; it is put back at the end.
        let endedWithNewline = lines.last == ""
        if endedWithNewline { lines.removeLast() }

        guard let header = lines.firstIndex(where: isSourcesKey) else {
            let block = ["sources:"] + sources.flatMap { Self.lines(for: $0, indent: 2) }
            let separator = lines.isEmpty || lines.last?.trimmingCharacters(in: .whitespaces).isEmpty == true ? [] : [""]
            return (lines + separator + block).joined(separator: "\n") + "\n"
        }
        let rest = value(ofKeyLine: lines[header])
        if rest.hasPrefix("[") {
            guard rest.replacingOccurrences(of: " ", with: "").hasPrefix("[]") else {
                throw EditError(description: "'sources:' is written as a flow list ([...]); write it as a block list (one '- name: …' entry per source) to append to it")
            }
            lines[header] = "sources:"
        } else if !rest.isEmpty, !rest.hasPrefix("#") {
            throw EditError(description: "'sources:' is not followed by a list")
        }
        // The block runs while lines are blank, comments, indented, or entries at column 0.
        var last = header
        var indent: Int?
        var index = header + 1
        while index < lines.count {
            let line = lines[index]
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            let leading = line.prefix { $0 == " " }.count
            // Blank lines and comments at the margin may introduce what follows the list;
            // an indented comment belongs to the entry above it.
            if trimmed.isEmpty || trimmed.hasPrefix("#") {
                if !trimmed.isEmpty, leading > 0 { last = index }
                index += 1
                continue
            }
            guard leading > 0 || line.hasPrefix("-") else { break }
            if indent == nil, trimmed.hasPrefix("-") { indent = leading }
            last = index
            index += 1
        }
        let added = sources.flatMap { self.lines(for: $0, indent: indent ?? 2) }
        lines.insert(contentsOf: added, at: last + 1)
        return lines.joined(separator: "\n") + "\n"
    }

    /// The YAML lines of one entry, its dash at `indent`.
    package static func lines(for source: NewSource, indent: Int) -> [String] {
        let dash = String(repeating: " ", count: indent)
        let body = String(repeating: " ", count: indent + 2)
        var lines = ["\(dash)- name: \(plainOrQuoted(source.name))", "\(body)type: \(plainOrQuoted(source.type))"]
        for field in source.fields { lines.append("\(body)\(field.key): \(quoted(field.value))") }
        for map in source.maps {
            lines.append("\(body)\(map.key):")
            for entry in map.entries { lines.append("\(body)  \(entry.key): \(quoted(entry.value))") }
        }
        if !source.tags.isEmpty { lines.append("\(body)tags: [\(source.tags.map(quoted).joined(separator: ", "))]") }
        return lines
    }

    /// `text` as it is when YAML can only read it back as that string — letters, digits, `-`,
    /// `_` and `.`, starting with a letter, and no word YAML takes for a null, a boolean or a
    /// number (`null`, `yes`, `off`, `.inf`…) —; otherwise ``quoted(_:)``. Names read from an
    /// OPML file (`Null`, `~`, `1e3`, `0x10`, `@home`) come back as the same names.
    package static func plainOrQuoted(_ text: String) -> String {
        let keywords: Set<String> = ["null", "true", "false", "yes", "no", "on", "off", "y", "n"]
        let plain = text.utf8.first.map { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0 | 0x20) } == true
            && text.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
            }
            && !keywords.contains(text.lowercased())
        return plain ? text : quoted(text)
    }

    /// A double-quoted YAML string: `"` and `\` escaped, control characters as escapes, and
    /// a `$` before `{` or `$` doubled so that fetchrun's `${VAR}` expansion reads the text
    /// back as written (any other `$`, as in a JSONPath's `$.name`, already reads as itself).
    package static func quoted(_ text: String) -> String {
        var result = "\""
        let scalars = Array(text.unicodeScalars)
        for (index, scalar) in scalars.enumerated() {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "$" where index + 1 < scalars.count && (scalars[index + 1] == "{" || scalars[index + 1] == "$"): result += "$$"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || (0x80..<0xA0).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029 {
                    result += String(format: "\\u%04X", scalar.value)
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }

    /// A source name made from a title (else the URL's host), lower-case, as the config
    /// requires (``ConfigLoader/namePattern``), and not in `taken` (`-2`, `-3`… appended).
    package static func sourceName(title: String?, url: String, taken: Set<String>) -> String {
        var number = 2
        return firstFree(nameBase(title: title, url: url), numberedFrom: &number, taken: taken)
    }

    /// Names for many new sources at once (an import), each as ``sourceName(title:url:taken:)``
    /// would give it. The next number of each name is remembered: ten thousand feeds of one
    /// title cost ten thousand lookups, not the fifty million of counting up from 2 each time.
    package struct SourceNames {
        private var taken: Set<String>
        private var nextNumber: [String: Int] = [:]

        package init(taken: Set<String>) {
            self.taken = taken
        }

        /// A name for a source of `title` (else `url`'s host), taken from then on.
        package mutating func name(title: String?, url: String) -> String {
            let base = ConfigEditor.nameBase(title: title, url: url)
            var number = nextNumber[base] ?? 2
            let name = ConfigEditor.firstFree(base, numberedFrom: &number, taken: taken)
            // Every number below `number` gives a name that is taken, and stays taken.
            nextNumber[base] = number
            taken.insert(name)
            return name
        }
    }

    private static func nameBase(title: String?, url: String) -> String {
        var base = slug(title ?? "")
        if base.isEmpty { base = slug(URLComponents(string: url)?.host ?? "") }
        return base.isEmpty ? "feed" : base
    }

    /// `base` if it is free, else the first of `base-<number>`, `base-<number + 1>`… that is.
    private static func firstFree(_ base: String, numberedFrom number: inout Int, taken: Set<String>) -> String {
        var name = base
        while taken.contains(name) {
            let suffix = "-\(number)"
            name = String(base.prefix(64 - suffix.count)) + suffix
            number += 1
        }
        return name
    }

    /// Lower-case letters and digits, other runs as one `-`, at most 64 characters; accents
    /// are folded (`Café` → `cafe`) rather than dropped.
    static func slug(_ text: String) -> String {
        let folded = text.folding(options: [.diacriticInsensitive, .caseInsensitive], locale: Locale(identifier: "en_US_POSIX")).lowercased()
        var result = ""
        var pendingDash = false
        for scalar in folded.unicodeScalars {
            if ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) {
                if pendingDash, !result.isEmpty { result += "-" }
                pendingDash = false
                result.unicodeScalars.append(scalar)
                if result.count >= 64 { break }
            } else {
                pendingDash = true
            }
        }
        while result.hasSuffix("-") { result.removeLast() }
        return result
    }

    /// Replaces the config file at `path` with `text` atomically, keeping its permissions
    /// (a new file gets 0644). A link in the config's place is refused: the edit would
    /// replace the link, not the file it points to.
    package static func write(_ text: String, to path: String) throws(EditError) {
        var info = stat()
        var mode: mode_t = 0o644
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFREG else {
                let target = (info.st_mode & S_IFMT == S_IFLNK ? realpath(path, nil) : nil).map { pointer in
                    defer { free(pointer) }
                    return " (--config \(String(cString: pointer)) edits the file it points to)"
                } ?? ""
                throw EditError(description: "\(path) is \(SafeFile.describe(info.st_mode & S_IFMT)), not a file: fetchrun does not write through it\(target)")
            }
            mode = info.st_mode & 0o7777
        }
        do {
            try AtomicFile.write(Data(text.utf8), to: path, mode: mode)
        } catch {
            throw EditError(description: "\(error)")
        }
    }

    private static func isSourcesKey(_ line: String) -> Bool {
        guard line.hasPrefix("sources") else { return false }
        let after = line.dropFirst("sources".count).drop { $0 == " " }
        return after.hasPrefix(":")
    }

    private static func value(ofKeyLine line: String) -> String {
        guard let colon = line.firstIndex(of: ":") else { return "" }
        return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
}
