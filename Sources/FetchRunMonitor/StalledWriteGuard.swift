import NIOCore

/// Closes a connection whose client has stopped taking what it is sent: a write still not
/// finished `limit` after it began.
///
/// A response keeps its buffers until the client has read them — a scrape's are the
/// exposition's text as it was, megabytes at 10,000 sources — so a client that asks and never
/// reads would otherwise hold that memory, and its connection, for as long as it stays.
/// Writes finish in the order they were made, so the oldest unfinished one is the first.
final class StalledWriteGuard: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private let limit: TimeAmount
    private var unfinished = CircularBuffer<NIODeadline>()
    private var check: Scheduled<Void>?

    init(limit: TimeAmount) {
        self.limit = limit
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let promise = promise ?? context.eventLoop.makePromise()
        unfinished.append(context.eventLoop.now)
        promise.futureResult.assumeIsolated().whenComplete { _ in
            _ = self.unfinished.popFirst()
        }
        scheduleCheck(context)
        context.write(data, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        check?.cancel()
        check = nil
    }

    /// A check when the oldest unfinished write reaches the limit; it closes the connection if
    /// that write is still unfinished then, else looks again at the next one.
    private func scheduleCheck(_ context: ChannelHandlerContext) {
        guard check == nil, let oldest = unfinished.first else { return }
        check = context.eventLoop.assumeIsolated().scheduleTask(deadline: oldest + limit) {
            self.check = nil
            guard let oldest = self.unfinished.first else { return }
            if context.eventLoop.now - oldest >= self.limit {
                context.close(promise: nil)
            } else {
                self.scheduleCheck(context)
            }
        }
    }
}
