/// One pass over sources: each fetched through the pipeline in its own child task under its
/// own deadline, all at once as far as `maxInFlight` allows — what `fetchrun run` does.
package struct FetchRunner: Sendable {
    package var pipeline: FetchPipeline

    package init(pipeline: FetchPipeline) {
        self.pipeline = pipeline
    }

    /// Fetches every source once, all at once, and waits for all of them.
    ///
    /// Never throws: every problem is a source's outcome. The run ends when the last source
    /// ends, which is at most its deadline plus the time its adapter takes to honour cancellation.
    /// If the calling task is cancelled, every fetch is cancelled and reported as such.
    ///
    /// - Parameters:
    ///   - maxInFlight: sources fetched at once; the others wait their turn, and a source's
    ///     deadline starts when its fetch does. Bounds the responses and parsed items held in
    ///     memory when downloading outpaces parsing.
    ///   - keepingNewItems: how many new items per source the returned report keeps (its
    ///     `newCount` still counts them all); a run over thousands of feeds need not hold
    ///     every new item until the end. All of them by default.
    ///   - keepingBaselineItems: the same for a source's first fetch, whose new items are all
    ///     the source holds — a report that does not list them (text, without `--list-all`)
    ///     need not hold a whole feed per source until the end. `keepingNewItems` when `nil`.
    ///   - onSourceFinished: called with each source's full report as it finishes, one at a time.
    package func run(
        _ sources: [SourceConfig], maxInFlight: Int = FetchConfig.defaultMaxInFlight, keepingNewItems: Int = .max,
        keepingBaselineItems: Int? = nil, onSourceFinished: @Sendable (SourceReport) -> Void = { _ in }
    ) async -> RunReport {
        let pipeline = self.pipeline
        let clock = pipeline.clock
        let start = clock.now
        var reports = [SourceReport?](repeating: nil, count: sources.count)
        await withTaskGroup(of: (Int, SourceReport).self) { group in
            // A window of `maxInFlight` fetches: each that ends lets the next source start.
            var next = 0, running = 0
            func startNext(in group: inout TaskGroup<(Int, SourceReport)>) {
                guard next < sources.count else { return }
                let index = next, source = sources[index]
                next += 1
                running += 1
                group.addTask { (index, await pipeline.fetch(source).report) }
            }
            for _ in 0..<max(1, maxInFlight) { startNext(in: &group) }
            for await (index, var report) in group {
                running -= 1
                // With every source started, a fetch still running needs one connection at
                // most: the others are closed as they come free, while the last answers are on
                // their way, rather than all together at the end (~11 ms of a 1,000-source
                // repeat run's 340, Benchmarks/RESULTS.md).
                if next == sources.count { pipeline.http.limitConnectionsKept(to: running) }
                onSourceFinished(report)
                let keeping = report.isBaseline ? keepingBaselineItems ?? keepingNewItems : keepingNewItems
                if case .newData(let items) = report.outcome, items.count > keeping {
                    report.outcome = .newData(Array(items.prefix(keeping)))
                }
                if report.updatedItems.count > keepingNewItems { report.updatedItems = Array(report.updatedItems.prefix(keepingNewItems)) }
                reports[index] = report
                if !Task.isCancelled { startNext(in: &group) }
            }
        }
        // Back to curl's own rule for whatever uses the client next (deliveries, another pass).
        pipeline.http.limitConnectionsKept(to: nil)
        // Stopped before their turn came.
        for (index, source) in sources.enumerated() where reports[index] == nil {
            reports[index] = SourceReport(name: source.name, type: source.type, outcome: .failed(FetchFailure(.cancelled, "cancelled before it started")), totalItems: 0, duration: .zero)
        }
        return RunReport(sources: reports.compactMap { $0 }, duration: clock.now - start)
    }
}
