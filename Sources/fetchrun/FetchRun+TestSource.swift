import ArgumentParser
import FetchRunKit
import Foundation
import Logging

extension FetchRun {
    /// Fetches one source once and prints what it yields, storing nothing: for tuning selectors.
    struct TestSource: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test-source",
            abstract: "Fetch one source once and print what it yields — a watched selection's text as it is compared, or the items — storing nothing.",
            discussion: "For tuning css:, xpath:, remove:, select:, items: and ignore: before a run records anything. Exits 0 when the fetch worked, 2 when it failed (with the reason)."
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var output: OutputOptions

        @Argument(help: "The source's name.", completion: SourceNameCompletion.kind)
        var name: String

        func run() async throws {
            output.bootstrapLogging()
            let config = try await configOptions.load()
            output.adoptLogFormat(of: config)
            // A source with problems of its own is left out of the config; naming it gets them.
            if let rejected = config.rejectedSources.first(where: { $0.name == name }) {
                throw CommandFailure(ExitStatus.invalidConfig, rejected.diagnostics.map(\.description))
            }
            guard let source = config.sources.first(where: { $0.name == name }) else {
                throw CommandFailure(ExitStatus.usage, "no source named '\(TerminalText.safe(name))'; defined: \(config.sources.map(\.name).joined(separator: ", "))")
            }
            let fetched = try await Self.fetchOnce(source, config: config)
            // What a run would keep: within the item caps.
            let (items, limitNote) = ItemLimits.standard.apply(to: fetched.items)
            let notes = fetched.notes + (limitNote.map { [$0] } ?? [])
            let watched = (source.adapter as? any SelectionWatching)?.watchesOneSelection == true
            // What `notify_when:` makes of this text, as the first fetch of a run would see it.
            let condition = source.routing.notifyWhen.map {
                $0.evaluate(NotifyCondition.text(of: items, selection: watched), reference: nil, format: source.routing.numberFormat)
            }
            switch output.format {
            case .text:
                if let rendered = fetched.rendered {
                    let screenshot = fetched.screenshot.map { ", a screenshot of \(ByteSizeText.format(Int64($0.count)))" } ?? ""
                    Console.out(["rendered in the browser: \(rendered.htmlBytes) bytes of HTML from \(TerminalText.safe(HTTPText.removingCredentials(from: rendered.finalURL)))\(screenshot)"])
                }
                Console.out(TextReport(style: Console.stdoutStyle).lines(forTest: source.name, type: source.type, items: items, watched: watched, notes: notes))
                if let condition {
                    let value = condition.value.map { ", value \(NotifyCondition.shown($0))" } ?? ""
                    Console.out(["notify_when: \(condition.isMet ? "met" : "not met")\(value): \(TerminalText.safe(condition.reason))"])
                }
            case .json:
                Console.out(items.map { JSONEvents.item(source: source.name, $0) })
                if let condition {
                    Console.out([JSONEvents.event("condition") { json in
                        json.field("source", source.name)
                        json.field("met", condition.isMet)
                        if let value = condition.value, value.isFinite {
                            json.key("value")
                            json.value(value)
                        }
                        json.field("reason", condition.reason)
                    }])
                }
            }
        }

        /// One fetch of `source` as a run would make it (its HTTP options, deadline, selectors),
        /// with no state: no validators sent, nothing kept. A failure is printed as
        /// `name: kind: reason` and thrown as exit status 2.
        static func fetchOnce(_ source: SourceConfig, config: FetchConfig) async throws -> FetchOutput {
            let name = source.name
            let http = CurlHTTPClient(configuration: config.http)
            let deadline = http.now + source.settings.deadline
            var context = FetchContext(sourceName: name, previous: nil, deadline: deadline, http: http, logger: Logger(label: "fetchrun"))
            let renderer = source.rendersInBrowser ? config.renderer(http: http) : nil
            context.renderer = renderer
            let outcome: Result<FetchOutput, any Error>
            do {
                outcome = .success(try await withRunning(http) {
                    try await withDeadline(deadline) { [context] in try await source.adapter.fetch(context) }
                })
            } catch {
                outcome = .failure(error)
            }
            // No browser outlives the command.
            await renderer?.shutdown()
            do {
                return try outcome.get()
            } catch is DeadlineExceeded {
                throw CommandFailure(ExitStatus.someSourcesFailed, "\(name): deadline exceeded after \(DurationText.format(source.settings.deadline))")
            } catch let failure as FetchFailure {
                throw CommandFailure(ExitStatus.someSourcesFailed, "\(name): \(failure.kind.rawValue): \(TerminalText.safe(failure.message))")
            } catch {
                throw CommandFailure(ExitStatus.someSourcesFailed, "\(name): \(TerminalText.safe("\(error)"))")
            }
        }
    }
}
