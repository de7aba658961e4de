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
    ///   - onSourceFinished: called with each source's full report as it finishes, one at a time.
    package func run(
        _ sources: [SourceConfig], maxInFlight: Int = FetchConfig.defaultMaxInFlight, keepingNewItems: Int = .max,
        onSourceFinished: @Sendable (SourceReport) -> Void = { _ in }
    ) async -> RunReport {
        let clock = ContinuousClock()
        let start = clock.now
        let limiter = InFlightLimiter(limit: maxInFlight)
        let pipeline = self.pipeline
        let reports = await withTaskGroup(of: (Int, SourceReport).self) { group in
            for (index, source) in sources.enumerated() {
                group.addTask {
                    do {
                        try await limiter.acquire()
                    } catch {
                        return (index, SourceReport(name: source.name, type: source.type, outcome: .failed(FetchFailure(.cancelled, "cancelled before it started")), totalItems: 0, duration: .zero))
                    }
                    let report = await pipeline.fetch(source).report
                    await limiter.release()
                    return (index, report)
                }
            }
            var reports = [SourceReport?](repeating: nil, count: sources.count)
            for await (index, var report) in group {
                onSourceFinished(report)
                if case .newData(let items) = report.outcome, items.count > keepingNewItems {
                    report.outcome = .newData(Array(items.prefix(keepingNewItems)))
                }
                if report.updatedItems.count > keepingNewItems { report.updatedItems = Array(report.updatedItems.prefix(keepingNewItems)) }
                reports[index] = report
            }
            return reports.compactMap { $0 }
        }
        return RunReport(sources: reports, duration: clock.now - start)
    }
}
