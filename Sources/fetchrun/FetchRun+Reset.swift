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
            if stateOptions.stateDir == nil, let config = try? await configOptions.load(), stateOptions.postgresURL(for: config) != nil {
                _ = try await stateOptions.withRecordedState(of: config) { store in
                    try await reset(in: store, snapshotNames: [], place: "PostgreSQL")
                }
                return
            }
            let directory = try await stateOptions.directory(loading: configOptions)
            // A run in progress would write its snapshots back: wait for it to end instead.
            let lock = try await stateOptions.prepareAndLock(directory)
            let store = try await stateOptions.openStore(in: directory)
            do {
                try await reset(in: store, snapshotNames: directory.snapshots.sourceNames(), place: directory.snapshots.directory)
            } catch let error as StateStoreError {
                throw CommandFailure(ExitStatus.stateDirectoryUnusable, error.description)
            }
            withExtendedLifetime(lock) {}
        }

        /// Forgets the named sources (all that have a snapshot or a recorded state when none
        /// is named) and says what was removed.
        private func reset(in store: any SourceStateStore, snapshotNames: [String], place: String) async throws {
            let recorded = (try? await store.states()) ?? [:]
            let targets = names.isEmpty ? Array(Set(snapshotNames).union(recorded.keys)).sorted() : names
            var removed = 0
            for name in targets {
                // A watch or worker may be fetching it: wait for its lease, or that fetch would
                // write the snapshot back.
                try await waitForLease(on: name, in: store)
                // A reset source is never fetched and due at once, for `status` and `run --due`.
                if let snapshot = try await store.forget(name) {
                    print("removed \(snapshot)")
                    removed += 1
                } else if recorded[name] == nil {
                    Console.error("no snapshot for '\(name)'")
                }
            }
            print(removed == 0 ? "nothing to remove in \(place)" : "removed \(removed) snapshot\(removed == 1 ? "" : "s")")
        }

        /// Waits until no other process holds the source's lease (a watch fetching it), up to a
        /// minute; then holds it itself until the source is forgotten.
        private func waitForLease(on name: String, in store: any SourceStateStore) async throws {
            let clock = SystemClock()
            let giveUp = clock.now + .seconds(60)
            var told = false
            while case .held(let holder) = try await store.lease(name, until: clock.date(after: .seconds(60))) {
                guard clock.now < giveUp else {
                    throw CommandFailure(ExitStatus.stateDirectoryLocked, "'\(name)' is still being fetched by \(holder); not reset")
                }
                if !told {
                    told = true
                    Console.error("waiting for \(holder), which is fetching '\(name)'")
                }
                try await clock.sleep(for: .milliseconds(100))
            }
        }
    }
}
