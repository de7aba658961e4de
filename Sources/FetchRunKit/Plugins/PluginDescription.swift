import CLinux
import Foundation
import Synchronization

/// What `fetchrun-adapter-<type> --describe` prints: the plugin's summary and option schema.
package struct PluginDescription: Sendable, Equatable {
    package var summary: String
    package var options: [AdapterOption]

    /// What asking a plugin found.
    package enum Answer: Sendable, Equatable {
        case described(PluginDescription)
        /// The plugin does not offer a description: its file never mentions `--describe`, or
        /// it did not answer with one in time. Its options are passed through unchecked.
        case none
        /// It answered, but not with a valid schema; the reason says what is wrong.
        case invalid(String)
    }

    /// The longest a plugin may take to describe itself while a config loads, which waits for
    /// it: well under a second. An answer is cached, so it is paid once per plugin version.
    package static let timeout: Duration = .milliseconds(700)

    /// Asks the plugin at `executable` for its description — only when its file mentions
    /// `--describe` (a program that never mentions the flag cannot know it, and would otherwise
    /// be started in its fetch mode by surprise), and only once per version of the file: answers
    /// are cached by path, size, inode and modification time, in memory and in
    /// `$XDG_CACHE_HOME/fetchrun/plugin-descriptions.json` (`~/.cache/…` without it).
    package static func ask(_ executable: String, environment: [String: String] = ProcessInfo.processInfo.environment, timeout: Duration = timeout) -> Answer {
        guard let version = FileVersion(path: executable) else { return .none }
        let cache = PluginDescriptionCache.shared(environment: environment)
        if let cached = cache.answer(for: version) { return cached }
        guard mentionsDescribeFlag(executable) else {
            cache.store(.none, for: version)
            return .none
        }
        let process = PluginProcess(executable: executable, arguments: ["--describe"], input: Data(), outputLimit: 1 << 20)
        guard let result = try? process.runSynchronously(deadline: .now + timeout) else {
            // Not cached: a busy machine may have made it slow this once.
            return .none
        }
        let answer: Answer = result.exitStatus == 0 ? parse(result.stdout) : .none
        cache.store(answer, for: version)
        return answer
    }

    /// Reads a `--describe` answer, saying exactly what is wrong with one that is not a schema.
    package static func parse(_ output: Data) -> Answer {
        guard let value = try? JSONReader.value(of: output) else {
            return .invalid("its --describe output is not JSON")
        }
        return parse(value)
    }

    static func parse(_ value: JSONValue) -> Answer {
        guard case .object(let object) = value else { return .invalid("its --describe output is not a JSON object") }
        var summary = "external adapter"
        switch object["summary"] {
        case nil, .null?: break
        case .string(let text)?: summary = text
        default: return .invalid("'summary' must be a string")
        }
        var options: [AdapterOption] = []
        switch object["options"] {
        case nil, .null?:
            break
        case .array(let list)?:
            for (index, element) in list.enumerated() {
                guard case .object(let option) = element else {
                    return .invalid("option #\(index + 1) in 'options' must be an object like {\"name\": …, \"kind\": …, \"summary\": …}")
                }
                guard let name = option["name"]?.stringValue, !name.isEmpty else {
                    return .invalid("option #\(index + 1) in 'options' needs a 'name' (a non-empty string)")
                }
                for key in ["kind", "summary"] where option[key] != nil && option[key]?.stringValue == nil {
                    return .invalid("option '\(name)': '\(key)' must be a string")
                }
                options.append(AdapterOption(name, kind: option["kind"]?.stringValue ?? "any", default: option["default"]?.scalarText, option["summary"]?.stringValue ?? ""))
            }
        case .object?:
            return .invalid("'options' must be a list of {\"name\", \"kind\", \"default\", \"summary\"} objects, not an object")
        default:
            return .invalid("'options' must be a list of {\"name\", \"kind\", \"default\", \"summary\"} objects")
        }
        return .described(PluginDescription(summary: summary, options: options))
    }

    /// Whether the file holds the bytes `--describe` anywhere; read in 1 MiB blocks that
    /// overlap by the length of the flag, up to 256 MiB.
    static func mentionsDescribeFlag(_ path: String) -> Bool {
        let flag = Array("--describe".utf8)
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var block = [UInt8](repeating: 0, count: 1 << 20)
        var kept = 0
        var total = 0
        while total < 256 << 20 {
            let count = block.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + kept, $0.count - kept) }
            guard count > 0 else { return false }
            total += count
            let filled = kept + count
            let found = block.withUnsafeBytes { buffer in
                fetchrun_memmem(buffer.baseAddress!, filled, flag, flag.count) != nil
            }
            if found { return true }
            kept = min(flag.count - 1, filled)
            block.replaceSubrange(0..<kept, with: block[(filled - kept)..<filled])
        }
        return false
    }
}

/// One version of a file: the same path, size, inode and modification time.
struct FileVersion: Hashable, Sendable {
    var path: String
    var size: Int64
    var inode: UInt64
    var modified: Int64

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.path = path
        size = Int64(info.st_size)
        inode = UInt64(info.st_ino)
        modified = Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec)
    }

    var key: String { "\(path)\u{0}\(size)\u{0}\(inode)\u{0}\(modified)" }
}

/// `--describe` answers by file version, in memory for the process and on disk across runs.
///
/// The file on disk is only a cache: one that cannot be read, or holds anything unexpected,
/// is ignored and written anew; one that cannot be written costs a `--describe` next time.
final class PluginDescriptionCache: Sendable {
    private let file: String?
    private let entries: Locked<[String: PluginDescription.Answer]?>

    private static let instances = Locked<[String: PluginDescriptionCache]>([:])

    /// The cache for the folder `environment` names (one per folder, per process).
    static func shared(environment: [String: String]) -> PluginDescriptionCache {
        let file = cacheFile(environment: environment)
        return instances.withLock { instances in
            if let existing = instances[file ?? ""] { return existing }
            let cache = PluginDescriptionCache(file: file)
            instances[file ?? ""] = cache
            return cache
        }
    }

    static func cacheFile(environment: [String: String]) -> String? {
        if let folder = environment["XDG_CACHE_HOME"], folder.hasPrefix("/") {
            return folder + "/fetchrun/plugin-descriptions.json"
        }
        if let home = environment["HOME"], home.hasPrefix("/") {
            return home + "/.cache/fetchrun/plugin-descriptions.json"
        }
        return nil
    }

    init(file: String?) {
        self.file = file
        entries = Locked(nil)
    }

    func answer(for version: FileVersion) -> PluginDescription.Answer? {
        entries.withLock { entries in
            if entries == nil { entries = load() }
            return entries?[version.key]
        }
    }

    func store(_ answer: PluginDescription.Answer, for version: FileVersion) {
        let snapshot = entries.withLock { entries -> [String: PluginDescription.Answer] in
            if entries == nil { entries = load() }
            // Older versions of the same plugin, and plugins since deleted, are of no further use.
            entries = entries!.filter { key, _ in
                let path = String(key.prefix { $0 != "\u{0}" })
                return path != version.path && FileManager.default.fileExists(atPath: path)
            }
            entries![version.key] = answer
            return entries!
        }
        save(snapshot)
    }

    private func load() -> [String: PluginDescription.Answer] {
        guard let file, let data = try? SafeFile.read(file, maxBytes: 4 << 20),
              case .object(let object)? = try? JSONReader.value(of: data),
              case .object(let stored)? = object["answers"] else { return [:] }
        var entries: [String: PluginDescription.Answer] = [:]
        for (key, value) in stored {
            guard case .object(let entry) = value, let kind = entry["answer"]?.stringValue else { continue }
            switch kind {
            case "none":
                entries[key] = PluginDescription.Answer.none
            case "invalid":
                entries[key] = .invalid(entry["reason"]?.stringValue ?? "invalid --describe answer")
            case "described":
                if let stored = entry["description"], case .described(let description) = PluginDescription.parse(stored) {
                    entries[key] = .described(description)
                }
            default:
                continue
            }
        }
        return entries
    }

    private func save(_ entries: [String: PluginDescription.Answer]) {
        guard let file else { return }
        var json = JSONWriter(capacity: 1024)
        json.beginObject()
        json.key("version"); json.value(1)
        json.key("answers")
        json.beginObject()
        for key in entries.keys.sorted() {
            json.key(key)
            json.beginObject()
            switch entries[key]! {
            case .none:
                json.key("answer"); json.value("none")
            case .invalid(let reason):
                json.key("answer"); json.value("invalid")
                json.key("reason"); json.value(reason)
            case .described(let description):
                json.key("answer"); json.value("described")
                json.key("description")
                json.beginObject()
                json.key("summary"); json.value(description.summary)
                json.key("options")
                json.beginArray()
                for option in description.options {
                    json.beginObject()
                    json.key("name"); json.value(option.name)
                    json.key("kind"); json.value(option.kind)
                    if let value = option.defaultValue { json.key("default"); json.value(value) }
                    json.key("summary"); json.value(option.summary)
                    json.endObject()
                }
                json.endArray()
                json.endObject()
            }
            json.endObject()
        }
        json.endObject()
        json.endObject()
        let folder = (file as NSString).deletingLastPathComponent
        _ = mkdir((folder as NSString).deletingLastPathComponent, 0o700)
        _ = mkdir(folder, 0o700)
        try? AtomicFile.write(Data(json.bytes), to: file)
    }
}
