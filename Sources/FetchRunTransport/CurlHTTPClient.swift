import FetchRunCore
import ServiceLifecycle

/// fetchrun's HTTP client: libcurl's multi interface on one dedicated thread, every request
/// an `async` call. A `Service`: its thread runs while ``run()`` does.
///
/// One client serves every source of a run, so connections are shared and limited per host,
/// and HTTP/2 connections are multiplexed. The per-host limits are fetchrun's own
/// (``HostScheduler``): a request waits for its host's slot before curl sees it, and that wait
/// is not charged to the fetch's deadline.
public final class CurlHTTPClient: Service {
    /// The top-level `http:` settings.
    public struct Configuration: Sendable, Equatable {
        /// Connections open at once to one host (name and port). Politeness towards servers.
        public var maxConnectionsPerHost = 6
        /// Requests carried at once by one HTTP/2 connection (`per_host_streams`): a host that
        /// answers over HTTP/2 gets `maxConnectionsPerHost × streamsPerConnection` in flight.
        public var streamsPerConnection = 100
        /// Time between the starts of two requests to one host (`min_delay`); zero: none.
        public var minDelayPerHost: Duration = .zero
        /// The longest a request waits for its host's slot before it fails (`queue_timeout`).
        public var queueTimeout: Duration = .seconds(300)
        /// Connections open at once in all; 0 means no limit beyond the per-host one.
        public var maxConnections = 0

        public init() {}
    }

    let loop: CurlMultiLoop
    let hosts: HostScheduler
    /// The longest a request waits for its host's slot (``Configuration/queueTimeout``).
    package let queueTimeout: Duration
    /// Called with each final response's status, on the task that made the request.
    let countResponse: @Sendable (_ status: Int) -> Void
    /// The time of requests' deadlines, the wait for a host's slot and every rule of the host
    /// queue. libcurl itself counts in real time: a deadline reaches it as the time left.
    package let clock: any FetchClock

    /// - Parameter countResponse: called with each final response's status (the engine counts
    ///   them as `fetchrun_http_responses_total`); it must return at once.
    public convenience init(configuration: Configuration = Configuration(), countResponse: @escaping @Sendable (_ status: Int) -> Void = { _ in }) {
        self.init(configuration: configuration, clock: SystemClock(), countResponse: countResponse)
    }

    /// A client on `clock` (a test's, for the host queue's rules).
    package init(configuration: Configuration = Configuration(), clock: any FetchClock, countResponse: @escaping @Sendable (_ status: Int) -> Void = { _ in }) {
        self.clock = clock
        self.countResponse = countResponse
        queueTimeout = configuration.queueTimeout
        let hosts = HostScheduler(limits: .init(
            perHost: configuration.maxConnectionsPerHost, streamsPerConnection: configuration.streamsPerConnection,
            minDelay: configuration.minDelayPerHost, queueTimeout: configuration.queueTimeout
        ), clock: clock)
        self.hosts = hosts
        loop = CurlMultiLoop(
            limits: .init(
                maxConnectionsPerHost: configuration.maxConnectionsPerHost, maxConnections: configuration.maxConnections,
                maxStreamsPerConnection: configuration.streamsPerConnection
            ),
            // A round trip sooner than the first HTTP/2 response would tell.
            onMultiplexing: { host in Task { await hosts.learnedMultiplexing(on: host) } }
        )
    }

    /// Keeps at most `limit` connections open, those in use counted: each request that
    /// completes beyond it closes the connection idle the longest. With `nil`, curl's own rule:
    /// four per request in flight, and none closed once nothing is in flight.
    ///
    /// For a pass over a known set of sources, as its last fetches end (``FetchRunner``): the
    /// connections no fetch will use again are closed as they come free, while the others'
    /// answers are still on their way, instead of all together after the last one. Applied
    /// by the client's thread, after the requests submitted before it; a request that finds
    /// no open connection to its host opens one.
    package func limitConnectionsKept(to limit: Int?) {
        loop.submit(.limitConnectionsKept(limit))
    }

    /// Drives curl until a graceful shutdown or cancellation (a `Service`): requests made
    /// before its first run wait for it; when it returns, requests still in curl have ended as
    /// cancelled, and later ones end at once as cancelled too (`CancellationError`) until it
    /// runs again.
    public func run() async throws {
        await loop.run()
    }
}
