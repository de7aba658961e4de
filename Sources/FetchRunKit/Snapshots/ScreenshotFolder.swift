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

    /// The largest PNG kept: a larger one is left out by the renderer, and refused here.
    package static let maximumBytes = 4 << 20

    /// What went wrong keeping a screenshot.
    package struct WriteError: Error, CustomStringConvertible {
        package var description: String
    }

    /// Writes `png` as `name` (folders made private to the user) and removes the source's
    /// oldest past ``keepPerSource``. A state folder is anyone's to edit: a folder on the way
    /// that is a symbolic link, or a link or hard link at the name, is refused, not written
    /// through.
    package func save(_ png: Data, as name: String) throws {
        guard Self.isName(name) else { throw WriteError(description: "'\(TerminalText.safe(name))' is not a screenshot's name") }
        let file = path + "/" + name
        let folder = (file as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for directory in [path, folder] where !Self.isFolder(directory) {
            throw WriteError(description: "\(directory) is not a folder (a symbolic link?), which fetchrun does not write through")
        }
        // Written under a temporary name, then renamed: the dashboard never serves half a file.
        let temporary = folder + "/.\(UUID().uuidString).tmp-\(getpid())-png"
        let descriptor: Int32
        do {
            descriptor = try SafeFile.openForWriting(temporary, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        } catch {
            throw WriteError(description: "\(temporary): \(error)")
        }
        do {
            try FileHandle(fileDescriptor: descriptor, closeOnDealloc: true).write(contentsOf: png)
        } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, file) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw WriteError(description: "\(file): \(reason)")
        }
        let kept = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".png") }
        // Names start with the time in milliseconds: their numeric order is their age.
        let oldestFirst = kept.sorted { (Int64($0.prefix { $0 != "-" }) ?? 0) < (Int64($1.prefix { $0 != "-" }) ?? 0) }
        for old in oldestFirst.dropLast(Self.keepPerSource) {
            try? FileManager.default.removeItem(atPath: folder + "/" + old)
        }
    }

    /// The PNG kept as `name`, when `name` is one this folder could have written: a source's
    /// name (no `/`, not starting with `.`), `/`, digits, `-`, letters and digits, `.png`. No
    /// symbolic link is followed, at the name or on the way.
    package func read(_ name: String) -> Data? {
        guard Self.isName(name), Self.isFolder(path), Self.isFolder(path + "/" + name.prefix { $0 != "/" }) else { return nil }
        return try? SafeFile.read(path + "/" + name, maxBytes: Self.maximumBytes)
    }

    /// Whether `path` is a folder itself, not a link to one.
    private static func isFolder(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    package static func isName(_ name: String) -> Bool {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[0].hasPrefix("."), parts[1].hasSuffix(".png") else { return false }
        let stem = parts[1].dropLast(4).split(separator: "-", omittingEmptySubsequences: false)
        return stem.count == 2 && !stem[0].isEmpty && stem[0].allSatisfy(\.isASCII) && stem[0].allSatisfy(\.isNumber)
            && !stem[1].isEmpty && stem[1].allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber) }
    }
}
