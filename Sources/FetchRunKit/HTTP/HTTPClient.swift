/// fetchrun's HTTP client: libcurl's multi interface on one dedicated thread, every request
/// an `async` call.
///
/// One client serves every source of a run, so connections are shared and limited per host,
/// and HTTP/2 connections are multiplexed.
public final class HTTPClient: Sendable {
    public struct Configuration: Sendable {
        /// Connections open at once to one host (host and port). Politeness towards servers.
        public var maxConnectionsPerHost = 6
        /// Connections open at once in all; 0 means no limit beyond the per-host one.
        public var maxConnections = 0

        public init() {}
    }

    let loop: CurlMultiLoop

    public init(configuration: Configuration = Configuration()) {
        loop = CurlMultiLoop(limits: .init(maxConnectionsPerHost: configuration.maxConnectionsPerHost, maxConnections: configuration.maxConnections))
    }

    deinit {
        loop.submit(.stop)
    }
}
