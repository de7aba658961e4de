import ArgumentParser
import FetchRunKit
import Foundation

extension FetchRun {
    /// What waits in the outbox, per output; `--retry` sends it now.
    struct Outputs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "outputs",
            abstract: "List each output with the deliveries waiting for it (pending, failed, given up, the last error); --retry sends them now.",
            discussion: """
            Reads the state database without the state directory's lock, so it works beside \
            watch and run (deliveries are claimed, never sent twice at once). A delivery that \
            failed past its output's give_up_attempts and give_up_after is given up: listed, \
            kept, and sent again only with --retry --given-up. An output whose service answered \
            429 (or 503) with a wait is sent nothing before then, by --retry neither; --force \
            sends now. An output with a digest schedule sends at its time, and with --retry \
            --force now. Exits 0, or 2 when some delivery is still waiting after --retry.
            """
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions

        @Flag(help: "Make every waiting delivery due now and send it.")
        var retry = false

        @Flag(help: "With --retry: take the given-up deliveries back and send them too.")
        var givenUp = false

        @Flag(help: "With --retry: send even to an output whose service asked to wait (HTTP 429 or 503 with Retry-After), and send digests before their time.")
        var force = false

        @Argument(help: "Only this output.")
        var name: String?

        func run() async throws {
            output.bootstrapLogging()
            if givenUp, !retry {
                throw CommandFailure(ExitStatus.usage, "--given-up goes with --retry: `fetchrun outputs --retry --given-up`")
            }
            if force, !retry {
                throw CommandFailure(ExitStatus.usage, "--force goes with --retry: `fetchrun outputs --retry --force`")
            }
            let config = try await configOptions.load()
            if let name, !config.outputs.contains(where: { $0.name == name }) {
                throw CommandFailure.unknownOutput(name, in: config)
            }
            let listed: Void? = try await stateOptions.withRecordedState(of: config) { store in
                try await list(store, config: config)
            }
            if listed == nil { print(config.outputs, pending: [], delivered: [:]) }
        }

        /// Lists the outbox of `store` (`state.db`, or PostgreSQL shared by workers); with
        /// `--retry`, makes its waiting rows due and sends them first.
        private func list(_ store: any OutboxStore, config: FetchConfig) async throws {
            if retry {
                if force { try await store.releaseHolds(output: name) }
                let http = CurlHTTPClient(configuration: config.http)
                try await store.retryNow(output: name, givenUp: givenUp, at: http.date)
                let results = await withRunning(http) { await OutboxDelivery(outputs: config.outputs, database: store, http: http).deliverDue(only: name, sendingDigestsNow: force) }
                switch output.format {
                case .text: Console.error(DeliveryReport.lines(for: results))
                case .json: Console.out(results.map(DeliveryReport.jsonLine))
                }
            }
            let pending = try await store.pendingDeliveries().filter { name == nil || $0.output == name }
            print(config.outputs.filter { name == nil || $0.name == name }, pending: pending, delivered: try await store.deliveredCounts(), holds: try await store.outputHolds())
            if retry, pending.contains(where: { givenUp || $0.givenUpAt == nil }) { throw CommandFailure(ExitStatus.someSourcesFailed) }
        }

        private func print(_ outputs: [OutputConfig], pending: [PendingDelivery], delivered: [String: Int], holds: [String: OutputHold] = [:]) {
            switch output.format {
            case .text:
                if outputs.isEmpty, pending.isEmpty {
                    Console.out(["no outputs in \(configOptions.path); see `outputs:` in the README"])
                } else {
                    Console.out(DeliveryReport.outboxLines(outputs: outputs, pending: pending, delivered: delivered, holds: holds, now: SystemClock().date, style: Console.stdoutStyle))
                }
            case .json:
                Console.out(DeliveryReport.outboxJSONLines(outputs: outputs, pending: pending, delivered: delivered, holds: holds, now: SystemClock().date))
            }
        }
    }

    /// Sends a sample item through one output, to see that it works.
    struct TestOutput: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test-output",
            abstract: "Send a sample item through one output and say what happened (nothing is stored).",
            discussion: "Exits 0 when the output took it, 1 when it did not (with the reason)."
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var output: OutputOptions

        @Argument(help: "The output's name.")
        var name: String

        func run() async throws {
            output.bootstrapLogging()
            let config = try await configOptions.load()
            guard let target = config.outputs.first(where: { $0.name == name }) else {
                throw CommandFailure.unknownOutput(name, in: config)
            }
            let now = SystemClock().date
            let sample = Item(
                id: "fetchrun-test-\(Int64(now.timeIntervalSince1970))", title: "fetchrun test item",
                link: "https://example.org/fetchrun-test", published: now,
                summary: "A sample item sent by `fetchrun test-output \(name)`.", author: "fetchrun"
            )
            let delivery = Delivery.item(sample, source: "fetchrun-test", sourceTitle: "fetchrun test-output")
            do {
                let http = CurlHTTPClient(configuration: config.http)
                try await withRunning(http) { try await target.output.send([delivery], through: http) }
                Console.out(["\(name) (\(target.type), \(TerminalText.safe(target.output.target))): sent \(delivery.id)"])
            } catch {
                throw CommandFailure(ExitCode.failure, "\(name) (\(target.type), \(TerminalText.safe(target.output.target))): not sent: \(TerminalText.safe("\(error)"))")
            }
        }
    }
}

extension CommandFailure {
    /// `outputs NAME` or `test-output NAME` of an output the config does not define: a usage
    /// error naming the ones it does.
    static func unknownOutput(_ name: String, in config: FetchConfig) -> CommandFailure {
        let defined = config.outputs.isEmpty ? "; the config defines none" : "; defined: \(config.outputs.map(\.name).joined(separator: ", "))"
        return CommandFailure(ExitStatus.usage, "no output named '\(TerminalText.safe(name))'" + defined)
    }
}
