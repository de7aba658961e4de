import CoreMetrics
import NIOCore
import Synchronization

/// The metrics with a `source` label, kept beside swift-prometheus's registry as text: each
/// family's lines in one buffer, in which a scrape renders only the values recorded since the
/// last one (over the old ones where they keep their width, else copying the rest in runs),
/// and which it then sends as it is.
///
/// They are what makes a scrape large: four families with up to six series per source, some
/// 60,000 lines and 3.6 MB at 10,000 sources. swift-prometheus renders every value anew on every
/// scrape, from an object per series; here a scrape at a busy watch's pace (a few hundred
/// fetches a second) renders a few hundred values.
///
/// Families and series come out in the order they were made, so that two scrapes list them
/// alike. A counter is listed from when it is made, at 0 (Prometheus's `increase()` then sees
/// its first step); a gauge from its first value, since a gauge nobody has set says nothing.
/// One lock guards everything: a fetch recording its figures waits at most for one scrape's
/// copy.
final class SourceSeries: Sendable {
    /// A family's `# TYPE`.
    enum Kind: String, Sendable {
        case counter, gauge
    }

    /// The label whose presence sends a metric here rather than to the registry.
    static let label = "source"

    private let store = Mutex(Store())

    private struct Store {
        var families: [Family] = []
        /// Where each live series is. Positions, not handles: a handle holds this store, and
        /// the store holding handles would keep both alive for good.
        var positions: [String: (family: Int, index: Int)] = [:]
    }

    /// A handle on the series for `name` with `dimensions`, made on first use; handles asked
    /// for with the same name and labels record into the same series.
    func series(_ name: String, _ dimensions: [(String, String)], kind: Kind) -> Series {
        let key = Self.key(name, dimensions)
        return store.withLock { store in
            if let position = store.positions[key] {
                return Series(owner: self, key: key, family: position.family, index: position.index)
            }
            let familyIndex: Int
            if let index = store.families.firstIndex(where: { $0.name == name }) {
                familyIndex = index
            } else {
                familyIndex = store.families.count
                store.families.append(Family(name: name, kind: kind))
            }
            let seriesIndex = store.families[familyIndex].add(prefix: Self.prefix(name, dimensions), listed: kind == .counter)
            store.positions[key] = (familyIndex, seriesIndex)
            return Series(owner: self, key: key, family: familyIndex, index: seriesIndex)
        }
    }

    /// Forgets a series (swift-metrics' `destroy`): its line goes at the next scrape, and its
    /// handles record nothing from then on.
    func remove(_ handler: AnyObject) {
        guard let series = handler as? Series, series.owner === self else { return }
        store.withLock { store in
            guard let position = store.positions[series.key], position == (series.family, series.index) else { return }
            store.positions[series.key] = nil
            store.families[series.family].remove(series.index)
        }
    }

    fileprivate func update(_ series: Series, _ change: (inout SeriesValue) -> Void) {
        store.withLock { store in store.families[series.family].update(series.index, change) }
    }

    /// Every family that has a series, with its `# HELP` (from `help`) and `# TYPE` lines, as
    /// buffers to send in order. A family's lines are its text itself, shared rather than
    /// copied: a response holding them keeps what they said when it was made.
    func buffers(help: [String: String]) -> [ByteBuffer] {
        store.withLock { store in
            var buffers: [ByteBuffer] = []
            for index in store.families.indices {
                store.families[index].renderChanges()
                guard store.families[index].listedCount > 0 else { continue }
                let name = store.families[index].name, kind = store.families[index].kind
                var header = ""
                if let text = help[name] { header += "# HELP \(name) \(text)\n" }
                header += "# TYPE \(name) \(kind.rawValue)\n"
                buffers.append(ByteBuffer(string: header))
                buffers.append(store.families[index].text)
            }
            return buffers
        }
    }

    /// ``buffers(help:)``'s bytes, handed to `write` in order.
    func emit(help: [String: String], _ write: (UnsafeRawBufferPointer) -> Void) {
        for buffer in buffers(help: help) { buffer.withUnsafeReadableBytes(write) }
    }

    static func key(_ name: String, _ dimensions: [(String, String)]) -> String {
        var key = name
        for (label, value) in dimensions { key += "\u{0}" + label + "\u{0}" + value }
        return key
    }

    /// `name{label="value",…} `: what a series' line holds before its value.
    static func prefix(_ name: String, _ dimensions: [(String, String)]) -> [UInt8] {
        var prefix = Array(name.utf8)
        if !dimensions.isEmpty {
            prefix.append(UInt8(ascii: "{"))
            for (index, (label, value)) in dimensions.enumerated() {
                if index > 0 { prefix.append(UInt8(ascii: ",")) }
                prefix.append(contentsOf: label.utf8)
                prefix.append(contentsOf: #"=""#.utf8)
                appendEscaped(value, to: &prefix)
                prefix.append(UInt8(ascii: "\""))
            }
            prefix.append(UInt8(ascii: "}"))
        }
        prefix.append(UInt8(ascii: " "))
        return prefix
    }

    /// A label value as the text format asks: backslash, double quote and line feed escaped.
    /// Source names come from the config, so they may hold any of them.
    static func appendEscaped(_ value: String, to buffer: inout [UInt8]) {
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): buffer.append(contentsOf: #"\\"#.utf8)
            case UInt8(ascii: "\""): buffer.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\n"): buffer.append(contentsOf: #"\n"#.utf8)
            default: buffer.append(byte)
            }
        }
    }

    /// Whether a series has a line in the scrape.
    private enum Listing {
        /// A gauge not yet set: no line, its prefix waiting in ``Family/waitingPrefixes``.
        case waiting
        case listed
        /// Destroyed: no line, and its handles record nothing.
        case removed
    }

    /// One family's series as text. Series `i`'s line is `text[lineStarts[i] ..< end]`, where
    /// `end` is the next line's start (or the end); its value begins at `valueStarts[i]`.
    /// A series without a line (waiting or removed) keeps its index with an empty one.
    ///
    /// The text is a `ByteBuffer` so that a scrape's response sends it as it is, without a copy
    /// of 2–4 MB; a response still being sent when the text changes keeps the old bytes (the
    /// buffer copies on write).
    private struct Family {
        let name: String
        let kind: Kind
        var text = ByteBufferAllocator().buffer(capacity: 0)
        /// The text before last, whose memory the next rebuilding reuses: a 2 MB block made
        /// anew at every scrape costs more in page faults than the copy into it.
        var spare: ByteBuffer?
        var lineStarts: [Int] = []
        var valueStarts: [Int] = []
        var values: [SeriesValue] = []
        var listings: [Listing] = []
        var listedCount = 0
        /// The prefixes of waiting series, which have no line to keep them in yet.
        var waitingPrefixes: [Int: [UInt8]] = [:]
        /// Series whose value changed since `text` was rendered, each once (`isChanged`).
        var changed: [Int] = []
        var isChanged: [Bool] = []
        /// The changed values rendered, ends in `renderedEnds`: kept between scrapes for
        /// their memory.
        private var rendered: [UInt8] = []
        private var renderedEnds: [Int] = []

        init(name: String, kind: Kind) {
            self.name = name
            self.kind = kind
        }

        /// A new series with value 0: listed at the next scrape, or — not `listed` — once a
        /// value is recorded.
        mutating func add(prefix: [UInt8], listed: Bool) -> Int {
            let index = values.count
            lineStarts.append(text.writerIndex)
            if listed { text.writeBytes(prefix) } else { waitingPrefixes[index] = prefix }
            valueStarts.append(text.writerIndex)
            values.append(.integer(0))
            listings.append(listed ? .listed : .waiting)
            isChanged.append(false)
            if listed {
                listedCount += 1
                markChanged(index)
            }
            return index
        }

        mutating func remove(_ index: Int) {
            switch listings[index] {
            case .removed: return
            case .waiting: break
            case .listed:
                listedCount -= 1
                markChanged(index)
            }
            listings[index] = .removed
            // Set since the last scrape, a gauge's prefix still waits here.
            waitingPrefixes[index] = nil
        }

        mutating func update(_ index: Int, _ change: (inout SeriesValue) -> Void) {
            switch listings[index] {
            case .removed: return
            case .waiting:
                listings[index] = .listed
                listedCount += 1
            case .listed: break
            }
            change(&values[index])
            markChanged(index)
        }

        private mutating func markChanged(_ index: Int) {
            guard !isChanged[index] else { return }
            isChanged[index] = true
            changed.append(index)
        }

        private func lineEnd(_ index: Int) -> Int {
            index + 1 < lineStarts.count ? lineStarts[index + 1] : text.writerIndex
        }

        /// Brings `text` up to the values recorded: in place when every changed value renders
        /// to as many bytes as the one it replaces (a counter's next count mostly does), else
        /// into a new text.
        mutating func renderChanges() {
            guard !changed.isEmpty else { return }
            changed.sort()
            rendered.removeAll(keepingCapacity: true)
            renderedEnds.removeAll(keepingCapacity: true)
            var fitsInPlace = true
            for index in changed {
                let start = rendered.count
                values[index].render(into: &rendered)
                renderedEnds.append(rendered.count)
                // A line to overwrite, with room for exactly this: not one removed or newly
                // listed (a new counter's line holds only its prefix so far, room -1).
                let hasLine = listings[index] == .listed && valueStarts[index] > lineStarts[index]
                if !hasLine || lineEnd(index) - 1 - valueStarts[index] != rendered.count - start { fitsInPlace = false }
            }
            if fitsInPlace {
                var start = 0
                rendered.withUnsafeBytes { bytes in
                    for (index, end) in zip(changed, renderedEnds) {
                        text.setBytes(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), at: valueStarts[index])
                        start = end
                    }
                }
            } else {
                rebuild()
            }
            for index in changed { isChanged[index] = false }
            changed.removeAll(keepingCapacity: true)
        }

        /// A new text with the changed series' lines as rendered, copying every unchanged run
        /// of lines whole and moving their starts by how far they shifted.
        private mutating func rebuild() {
            var next = spare ?? ByteBufferAllocator().buffer(capacity: 0)
            spare = nil
            next.clear()
            next.reserveCapacity(text.writerIndex + rendered.count + changed.count * 2)
            var copied = 0, renderedStart = 0
            for (index, renderedEnd) in zip(changed, renderedEnds) {
                copyUnchanged(copied..<index, into: &next)
                let lineStart = next.writerIndex
                if listings[index] == .listed {
                    if let prefix = waitingPrefixes.removeValue(forKey: index) {
                        next.writeBytes(prefix)
                    } else {
                        copyText(lineStarts[index]..<valueStarts[index], into: &next)
                    }
                    let valueStart = next.writerIndex
                    _ = rendered.withUnsafeBytes { next.writeBytes(UnsafeRawBufferPointer(rebasing: $0[renderedStart..<renderedEnd])) }
                    next.writeInteger(UInt8(ascii: "\n"))
                    valueStarts[index] = valueStart
                } else {
                    valueStarts[index] = lineStart
                }
                lineStarts[index] = lineStart
                renderedStart = renderedEnd
                copied = index + 1
            }
            copyUnchanged(copied..<values.count, into: &next)
            spare = text
            text = next
        }

        /// Copies the lines of `run` (all unchanged) from `text` to the end of `next`.
        private mutating func copyUnchanged(_ run: Range<Int>, into next: inout ByteBuffer) {
            guard let first = run.first, let last = run.last else { return }
            let from = lineStarts[first], to = lineEnd(last)
            let shift = next.writerIndex - from
            copyText(from..<to, into: &next)
            guard shift != 0 else { return }
            for index in run {
                lineStarts[index] += shift
                valueStarts[index] += shift
            }
        }

        private func copyText(_ range: Range<Int>, into next: inout ByteBuffer) {
            guard !range.isEmpty else { return }
            _ = text.withUnsafeReadableBytes { next.writeBytes(UnsafeRawBufferPointer(rebasing: $0[range])) }
        }
    }

    /// One series' handle: a counter or a gauge, whichever handler swift-metrics asks for.
    final class Series: CounterHandler, FloatingPointCounterHandler, RecorderHandler, MeterHandler, Sendable {
        fileprivate let owner: SourceSeries
        fileprivate let key: String
        fileprivate let family: Int
        fileprivate let index: Int

        fileprivate init(owner: SourceSeries, key: String, family: Int, index: Int) {
            self.owner = owner
            self.key = key
            self.family = family
            self.index = index
        }

        // Counters: a counter only counts up, stopping at Int64.max rather than trapping.
        func increment(by amount: Int64) {
            guard amount > 0 else { return }
            owner.update(self) { value in
                switch value {
                case .integer(let current):
                    let (sum, overflow) = current.addingReportingOverflow(amount)
                    value = .integer(overflow ? .max : sum)
                case .real(let current):
                    value = .real(current + Double(amount))
                }
            }
        }

        func increment(by amount: Double) {
            guard amount > 0, amount.isFinite else { return }
            owner.update(self) { value in value = .real(value.asDouble + amount) }
        }

        func reset() {
            owner.update(self) { $0 = .integer(0) }
        }

        // Gauges.
        func record(_ value: Int64) {
            owner.update(self) { $0 = .integer(value) }
        }

        func record(_ value: Double) {
            owner.update(self) { $0 = .real(value) }
        }

        func set(_ value: Int64) {
            record(value)
        }

        func set(_ value: Double) {
            record(value)
        }

        func decrement(by amount: Double) {
            guard amount.isFinite else { return }
            owner.update(self) { value in value = .real(value.asDouble - amount) }
        }
    }
}

/// A series' value as recorded: whole numbers stay whole, so they print without a fraction.
private enum SeriesValue {
    case integer(Int64)
    case real(Double)

    var asDouble: Double {
        switch self {
        case .integer(let value): Double(value)
        case .real(let value): value
        }
    }

    func render(into text: inout [UInt8]) {
        switch self {
        case .integer(let integer):
            text.append(contentsOf: String(integer).utf8)
        case .real(let real):
            // Go's ParseFloat, which Prometheus reads with, spells these its own way.
            if real.isNaN {
                text.append(contentsOf: "NaN".utf8)
            } else if real.isInfinite {
                text.append(contentsOf: (real < 0 ? "-Inf" : "+Inf").utf8)
            } else {
                text.append(contentsOf: real.description.utf8)
            }
        }
    }
}

/// swift-metrics' factory for fetchrun's metrics: a counter or gauge with a `source` label goes
/// to ``SourceSeries``, everything else (histograms, the few other series) to swift-prometheus.
struct MonitorMetricsFactory: MetricsFactory {
    let registry: any MetricsFactory
    let sourceSeries: SourceSeries

    private static func bySource(_ dimensions: [(String, String)]) -> Bool {
        dimensions.contains { $0.0 == SourceSeries.label }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        guard Self.bySource(dimensions) else { return registry.makeCounter(label: label, dimensions: dimensions) }
        return sourceSeries.series(label, dimensions, kind: .counter)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        guard Self.bySource(dimensions) else { return registry.makeFloatingPointCounter(label: label, dimensions: dimensions) }
        return sourceSeries.series(label, dimensions, kind: .counter)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        guard Self.bySource(dimensions) else { return registry.makeMeter(label: label, dimensions: dimensions) }
        return sourceSeries.series(label, dimensions, kind: .gauge)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        // An aggregating recorder is a histogram: the registry's.
        guard !aggregate, Self.bySource(dimensions) else { return registry.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate) }
        return sourceSeries.series(label, dimensions, kind: .gauge)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeTimer(label: label, dimensions: dimensions)
    }

    func destroyCounter(_ handler: any CounterHandler) {
        destroy(handler, otherwise: registry.destroyCounter)
    }

    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        destroy(handler, otherwise: registry.destroyFloatingPointCounter)
    }

    func destroyMeter(_ handler: any MeterHandler) {
        destroy(handler, otherwise: registry.destroyMeter)
    }

    func destroyRecorder(_ handler: any RecorderHandler) {
        destroy(handler, otherwise: registry.destroyRecorder)
    }

    /// A source series' handle goes back to ``SourceSeries``, any other to the registry.
    private func destroy<Handler>(_ handler: Handler, otherwise destroyInRegistry: (Handler) -> Void) {
        if let series = handler as? SourceSeries.Series {
            sourceSeries.remove(series)
        } else {
            destroyInRegistry(handler)
        }
    }

    func destroyTimer(_ handler: any TimerHandler) {
        registry.destroyTimer(handler)
    }
}
