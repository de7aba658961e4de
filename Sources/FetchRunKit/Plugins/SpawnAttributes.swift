import Foundation

/// `posix_spawn` attributes for a child that must not inherit fetchrun's own signal set-up:
/// `watch` and `transfer` ignore SIGINT, SIGTERM and SIGHUP (they arrive through Dispatch), and
/// a child would keep ignoring them. Default dispositions for those and SIGPIPE/SIGQUIT, an
/// empty mask, and whatever `flags` adds (a process group, a session).
func withSpawnAttributes<T>(flags: Int32, _ body: (inout posix_spawnattr_t) throws -> T) rethrows -> T {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    posix_spawnattr_setflags(&attributes, Int16(flags | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for number in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT] { sigaddset(&defaults, number) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    return try body(&attributes)
}

/// Adds a close action for every descriptor open in this process above stderr, except `keep`:
/// a child gets its stdin, stdout and stderr and nothing else fetchrun had open, close-on-exec
/// or not. Otherwise a descriptor fetchrun inherited (a pipe its caller waits on) would pass to
/// a plugin and on to any process the plugin leaves behind, holding the caller for as long as
/// that process lives. (Swift's Glibc module lacks posix_spawn_file_actions_addclosefrom_np.)
func closeInheritedDescriptors(in actions: inout posix_spawn_file_actions_t, keep: Set<Int32> = []) {
    for descriptor in openDescriptors() where descriptor > 2 && !keep.contains(descriptor) {
        posix_spawn_file_actions_addclose(&actions, descriptor)
    }
}

/// The descriptors open in this process now, from `/proc/self/fd` (the listing's own
/// descriptor left out).
func openDescriptors() -> [Int32] {
    guard let directory = opendir("/proc/self/fd") else { return [] }
    let own = dirfd(directory)
    var descriptors: [Int32] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if let descriptor = Int32(name), descriptor != own { descriptors.append(descriptor) }
    }
    closedir(directory)
    return descriptors
}
