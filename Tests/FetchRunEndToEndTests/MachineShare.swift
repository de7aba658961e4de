import Synchronization

/// Who may load the machine now: the browser tests together (a Chromium takes a core to
/// start and more to render), or the 2,000-source failover test alone, whose bound on a gap
/// across a killed worker a machine busy with browsers stretches. Whichever asks first goes
/// first; the others wait their turn, in order.
final class MachineShare: Sendable {
    static let shared = MachineShare()

    enum Mode: Sendable { case shared, exclusive }

    private struct State: ~Copyable {
        var sharing = 0
        var exclusive = false
        var waiting: [(mode: Mode, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    /// Waits for a turn in `mode`; give it back with ``release(_:)``.
    func acquire(_ mode: Mode) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                if state.waiting.isEmpty, Self.fits(mode, state.sharing, state.exclusive) {
                    Self.take(mode, &state.sharing, &state.exclusive)
                    return true
                }
                state.waiting.append((mode, continuation))
                return false
            }
            if granted { continuation.resume() }
        }
    }

    func release(_ mode: Mode) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if mode == .exclusive { state.exclusive = false } else { state.sharing -= 1 }
            var woken: [CheckedContinuation<Void, Never>] = []
            while let next = state.waiting.first, Self.fits(next.mode, state.sharing, state.exclusive) {
                state.waiting.removeFirst()
                Self.take(next.mode, &state.sharing, &state.exclusive)
                woken.append(next.continuation)
            }
            return woken
        }
        for continuation in woken { continuation.resume() }
    }

    private static func fits(_ mode: Mode, _ sharing: Int, _ exclusive: Bool) -> Bool {
        mode == .exclusive ? sharing == 0 && !exclusive : !exclusive
    }

    private static func take(_ mode: Mode, _ sharing: inout Int, _ exclusive: inout Bool) {
        if mode == .exclusive { exclusive = true } else { sharing += 1 }
    }
}
