import ArgumentParser
import FetchRunKit
import Foundation

extension FetchRun {
    /// Deletes snapshots: the demo app's trash button.
    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Delete snapshots (all, or the named ones) and their recorded state, and say what was removed."
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions

        @Argument(help: "Sources whose snapshots to delete (default: all).", completion: SourceNameCompletion.kind)
        var names: [String] = []

        func run() async throws {
            let directory = try await stateOptions.directory(loading: configOptions)
            // A run in progress would write its snapshots back: wait for it to end instead.
            let lock = try await stateOptions.prepareAndLock(directory)
            let store = directory.snapshots
            let database = try await stateOptions.openDatabase(in: directory)
            let recorded = (try? await database.states()) ?? [:]
            let targets = names.isEmpty ? Array(Set(store.sourceNames()).union(recorded.keys)).sorted() : names
            var removed = 0
            for name in targets {
                do {
                    // A watch may be fetching it: wait for its lease, or that fetch would write
                    // the snapshot back.
                    try await waitForLease(on: name, in: database)
                    // A reset source is never fetched and due at once, for `status` and `run --due`.
                    try await database.forget(name)
                    if try store.remove(source: name) {
                        print("removed \(store.path(for: name))")
                        removed += 1
                    } else if recorded[name] == nil {
                        Console.error("no snapshot for '\(name)'")
                    }
                } catch {
                    Console.error("\(error)")
                    throw ExitStatus.stateDirectoryUnusable
                }
            }
            withExtendedLifetime(lock) {}
            print(removed == 0 ? "nothing to remove in \(store.directory)" : "removed \(removed) snapshot\(removed == 1 ? "" : "s")")
        }

        /// Waits until no other process holds the source's lease (a watch fetching it), up to a minute.
        private func waitForLease(on name: String, in database: StateDatabase) async throws {
            let giveUp = ContinuousClock.now + .seconds(60)
            var told = false
            while case .held(let holder) = try await database.takeLease(on: name, until: Date().addingTimeInterval(60)) {
                guard ContinuousClock.now < giveUp else {
                    Console.error("'\(name)' is still being fetched by process \(holder); not reset")
                    throw ExitStatus.stateDirectoryLocked
                }
                if !told {
                    told = true
                    Console.error("waiting for process \(holder), which is fetching '\(name)'")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}
