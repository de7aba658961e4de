import Foundation

/// Where `screenshot: true` keeps its PNGs: `screenshots/<source>/<time>-<change>.png` in the
/// state folder, named by the history record they go with (``ChangeRecord/screenshot``).
/// The newest ``keepPerSource`` of a source are kept.
package struct ScreenshotFolder: Sendable {
    package var path: String
    package static let keepPerSource = 50

    package init(stateDirectory: String) {
        path = stateDirectory + "/screenshots"
    }

    /// The name, relative to the folder, of the screenshot of `record` of `source` (a source
    /// name is already safe in a path: no `/`, no `..`).
    package static func name(source: String, record: ChangeRecord) -> String {
        let stamp = Int64((record.at.timeIntervalSince1970 * 1000).rounded())
        let id = String(record.id.unicodeScalars.filter { ("a"..."z").contains($0) || ("0"..."9").contains($0) }.suffix(12).map(Character.init))
        return "\(source)/\(stamp)-\(id).png"
    }

    /// Writes `png` as `name` (folders made private to the user) and removes the source's
    /// oldest past ``keepPerSource``.
    package func save(_ png: Data, as name: String) throws {
        let file = path + "/" + name
        let folder = (file as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try png.write(to: URL(fileURLWithPath: file), options: .atomic)
        let kept = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".png") }
        // Names start with the time in milliseconds: their numeric order is their age.
        let oldestFirst = kept.sorted { (Int64($0.prefix { $0 != "-" }) ?? 0) < (Int64($1.prefix { $0 != "-" }) ?? 0) }
        for old in oldestFirst.dropLast(Self.keepPerSource) {
            try? FileManager.default.removeItem(atPath: folder + "/" + old)
        }
    }

    /// The PNG kept as `name`, when `name` is one this folder could have written: a source's
    /// name (no `/`, not starting with `.`), `/`, digits, `-`, letters and digits, `.png`.
    package func read(_ name: String) -> Data? {
        guard Self.isName(name) else { return nil }
        return FileManager.default.contents(atPath: path + "/" + name)
    }

    package static func isName(_ name: String) -> Bool {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[0].hasPrefix("."), parts[1].hasSuffix(".png") else { return false }
        let stem = parts[1].dropLast(4).split(separator: "-", omittingEmptySubsequences: false)
        return stem.count == 2 && !stem[0].isEmpty && stem[0].allSatisfy(\.isASCII) && stem[0].allSatisfy(\.isNumber)
            && !stem[1].isEmpty && stem[1].allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber) }
    }
}
