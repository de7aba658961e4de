import Dispatch
import Glibc

/// Turns signals into values on a stream instead of letting them end the process.
///
/// The signals are ignored in the usual sense (so their default action never runs) and
/// delivered by Dispatch signal sources, which the returned object keeps alive.
final class SignalInbox {
    private var sources: [any DispatchSourceSignal] = []

    init(_ signals: [Int32], deliver: @escaping @Sendable (Int32) -> Void) {
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { deliver(number) }
            source.resume()
            sources.append(source)
        }
    }

    deinit {
        for source in sources { source.cancel() }
    }
}
