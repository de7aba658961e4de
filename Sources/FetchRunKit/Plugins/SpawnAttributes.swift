import CLinux
import Foundation

/// `posix_spawn` attributes for a child that must not inherit fetchrun's own signal set-up:
/// `watch` and `transfer` ignore SIGINT, SIGTERM and SIGHUP (they arrive through Dispatch), and
/// a child would keep ignoring them. Default dispositions for those and SIGPIPE/SIGQUIT, an
/// empty mask, and whatever `flags` adds (a process group, a session).
package func withSpawnAttributes<T>(flags: Int32, _ body: (inout posix_spawnattr_t) throws -> T) rethrows -> T {
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

/// Makes the child close every descriptor above stderr: it gets its stdin, stdout and stderr
/// (set up by the actions added before this one) and nothing else fetchrun had open,
/// close-on-exec or not. Otherwise a descriptor fetchrun inherited (a pipe its caller waits
/// on) would pass to a plugin and on to any process the plugin leaves behind, holding the
/// caller for as long as that process lives. `closefrom` in the child rather than a list made
/// beforehand: a file another task opens between the listing and the spawn would slip through
/// (and a script being written while open then fails to start with "Text file busy").
func closeInheritedDescriptors(in actions: inout posix_spawn_file_actions_t) {
    fetchrun_spawn_addclosefrom(&actions, 3)
}
